"""A loopback fake of the Messages and Message Batches APIs, for batch execution tests and the
batch benchmark.

Listens on 127.0.0.1 only, on a free port. Answers deterministically (a reply depends only on
the request), so a batch run and a direct run of one eval must give the same records. Batches
end `batch_delay_s` after they are created; their results come back shuffled; a request can be
made to come back `errored`, `expired`, `canceled` or `invalid` (succeeded, but not a Messages
reply), on its first submission only or always.
`respond` can put a real model behind the fake batch engine (the embedded one, end to end).
Refuses batches the way the real API does: a bad or duplicate custom_id, or too many requests.
Counts every HTTP request, and serves at most `max_http` of them (bounded: a runaway client
cannot loop forever).
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import itertools
import json
import random
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback import Loopback

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def reply(request: dict[str, Any]) -> dict[str, Any]:
    """A deterministic tiny 'model': a question gets the history echoed back (so probes can
    recall), anything else a note that repeats the start of the last user turn (so summaries
    hold some of the transcript)."""
    last = request["messages"][-1]["content"]
    last_text = last if isinstance(last, str) else json.dumps(last)
    if isinstance(last, str) and last.endswith("?"):
        text = json.dumps(request["messages"][:-1])[:3000]
    else:
        text = f"Noted: {last_text[:400]}"
    return {
        "id": "msg_" + hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:20],
        "type": "message",
        "role": "assistant",
        "model": request["model"],
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": len(json.dumps(request["messages"])) // 4, "output_tokens": len(text) // 4},
    }


def _fraction(custom_id: str) -> float:
    return int(hashlib.sha256(custom_id.encode()).hexdigest()[:8], 16) / 16**8


class BatchServer(Loopback):
    """`failures`: outcome -> share of requests that get it; `failures_always`: they get it on
    every submission instead of only the first."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        batch_delay_s: float = 0.2,
        seed: int = 0,
        failures: dict[str, float] | None = None,
        failures_always: bool = False,
        max_batch_requests: int = 100_000,
        max_http: int = 200_000,
        batches: bool = True,
        respond: Callable[[dict[str, Any]], dict[str, Any]] = reply,
    ):
        self.respond = respond  # the 'model': `reply`, or a real one behind this batch engine
        self.latency_s, self.batch_delay_s, self.max_batch_requests = latency_s, batch_delay_s, max_batch_requests
        self.failures, self.failures_always = failures or {}, failures_always
        self.max_http, self.serves_batches = max_http, batches
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.http_requests = 0
        self.direct_messages = 0  # POST /v1/messages (the preflight check included)
        self.batches: dict[str, dict[str, Any]] = {}
        self.submitted: list[str] = []  # every custom_id, in order of submission (retries repeat)
        self.submissions: collections.Counter[str] = collections.Counter()
        self.outcomes: dict[str, int] = {"succeeded": 0, "errored": 0, "expired": 0, "canceled": 0, "invalid": 0}
        self._ids = itertools.count(1)
        super().__init__(self._handler())

    # --- batches ----------------------------------------------------------------------------

    def _outcome(self, custom_id: str) -> str:
        first = self.submissions[custom_id] == 1
        share = _fraction(custom_id)
        for kind, rate in self.failures.items():
            if share < rate and (first or self.failures_always):
                return kind
            share -= rate
        return "succeeded"

    def _create(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return 400, _error("invalid_request_error", "requests: a non-empty list is required")
        if len(requests) > self.max_batch_requests:
            return 400, _error(
                "invalid_request_error",
                f"requests: at most {self.max_batch_requests} requests per batch, got {len(requests)}",
            )
        ids = [r.get("custom_id") for r in requests]
        for custom_id in ids:
            if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
                return 400, _error(
                    "invalid_request_error", f"custom_id {custom_id!r} must match ^[a-zA-Z0-9_-]{{1,64}}$"
                )
        if len(set(ids)) != len(ids):
            return 400, _error("invalid_request_error", "custom_id values must be unique within a batch")
        batch_id = f"msgbatch_{next(self._ids):06d}"
        self.submitted += ids
        self.submissions.update(ids)
        results = []
        for entry in requests:
            kind = self._outcome(entry["custom_id"])
            self.outcomes[kind] += 1
            result: dict[str, Any] = {"type": kind}
            if kind == "invalid":  # succeeded, with a body that is no Messages reply
                result = {"type": "succeeded", "message": {"id": "msg_bad", "type": "message", "content": "oops"}}
            elif kind == "succeeded":
                result["message"] = self.respond(entry["params"])
            elif kind == "errored":
                result["error"] = {"type": "error", "error": {"type": "api_error", "message": "Internal error"}}
            results.append({"custom_id": entry["custom_id"], "result": result})
        self.rng.shuffle(results)  # results come back in no particular order
        now = dt.datetime.now(dt.UTC)
        self.batches[batch_id] = {
            "requests": requests,
            "results": results,
            "created": now,
            "ends": time.monotonic() + self.batch_delay_s,
        }
        return 200, self._batch(batch_id)

    def _batch(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        ended = time.monotonic() >= batch["ends"]
        counts = {
            "processing": 0 if ended else len(batch["results"]),
            "succeeded": 0,
            "errored": 0,
            "expired": 0,
            "canceled": 0,
        }
        if ended:
            for line in batch["results"]:
                counts[line["result"]["type"]] += 1
        created = batch["created"]
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": created.isoformat(),
            "expires_at": (created + dt.timedelta(hours=24)).isoformat(),
            "ended_at": dt.datetime.now(dt.UTC).isoformat() if ended else None,
            "results_url": f"{self.url}/v1/messages/batches/{batch_id}/results" if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
        }

    # --- HTTP -------------------------------------------------------------------------------

    def _count(self) -> bool:
        with self.lock:
            self.http_requests += 1
            return self.http_requests <= self.max_http

    def _post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            if path == "/v1/messages/batches" and self.serves_batches:
                return self._create(body)
            if path == "/v1/messages/count_tokens":
                return 200, {"input_tokens": len(json.dumps(body["messages"])) // 4}
            if path == "/v1/messages":
                self.direct_messages += 1
                return 200, self.respond(body)
        return 404, _error("not_found_error", f"no route {path}")

    def _get(self, path: str) -> tuple[int, dict[str, Any] | bytes]:
        """A batch listing, one batch, or (bytes) its results."""
        with self.lock:
            if not self.serves_batches:
                return 404, _error("not_found_error", f"no route {path}")
            if path == "/v1/messages/batches":
                data = [self._batch(b) for b in self.batches][-1:]
                first = data[0]["id"] if data else None
                return 200, {"data": data, "has_more": False, "first_id": first, "last_id": first}
            match = re.fullmatch(r"/v1/messages/batches/([\w-]+)(/results)?", path)
            if not match or match[1] not in self.batches:
                return 404, _error("not_found_error", f"no batch at {path}")
            if not match[2]:
                return 200, self._batch(match[1])
            return 200, "".join(json.dumps(r) + "\n" for r in self.batches[match[1]]["results"]).encode()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, body: bytes, kind: str = "application/json"):
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, data: dict[str, Any]):
                self._send(status, json.dumps(data).encode())

            def _admit(self) -> bool:
                time.sleep(server.latency_s)
                if server._count():
                    return True
                self._json(500, _error("api_error", "the fake server's request limit was reached"))
                return False

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self._admit():
                    self._json(*server._post(self.path.split("?")[0], body))

            def do_GET(self):
                if not self._admit():
                    return
                status, answer = server._get(self.path.split("?")[0])
                if isinstance(answer, bytes):
                    self._send(status, answer, "application/binary")
                else:
                    self._json(status, answer)

        return Handler


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}
