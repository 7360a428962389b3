"""A loopback fake Messages API server that injects faults, for reliability tests.

Listens on 127.0.0.1 only, on a free port; answers like a tiny model (a probe gets the
history echoed back, anything else a short text), and at a set rate fails instead: 429 with
retry-after, 529 overloaded, 500, a timeout, a dropped connection, or malformed JSON. Stops
with the `with` block, and refuses to serve more than `max_requests` requests.
"""

from __future__ import annotations

import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler

from loopback import Loopback

FAULTS = ("429", "529", "500", "timeout", "drop", "malformed")


class FaultServer(Loopback):
    def __init__(
        self, fault_rate: float, seed: int = 0, timeout_s: float = 1.0, max_requests: int = 5000, latency_s: float = 0.0
    ):
        self.fault_rate, self.timeout_s, self.max_requests = fault_rate, timeout_s, max_requests
        self.latency_s = latency_s
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.requests = 0
        self.faults: dict[str, int] = {f: 0 for f in FAULTS}
        super().__init__(self._handler())

    def _pick_fault(self) -> str | None:
        with self.lock:
            self.requests += 1
            if self.requests > self.max_requests:
                return "500"
            if self.rng.random() >= self.fault_rate:
                return None
            fault = self.rng.choice(FAULTS)
            self.faults[fault] += 1
            return fault

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None):
                self.send_response(status)
                self.send_header("content-type", "application/json")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["content-length"])))
                time.sleep(server.latency_s)
                fault = server._pick_fault()
                if fault in ("429", "529", "500"):
                    kind = {"429": "rate_limit_error", "529": "overloaded_error", "500": "api_error"}[fault]
                    body = json.dumps({"type": "error", "error": {"type": kind, "message": fault}}).encode()
                    return self._send(int(fault), body, {"retry-after": "0"} if fault == "429" else {})
                if fault == "timeout":
                    time.sleep(server.timeout_s * 1.5)
                    return
                if fault == "drop":
                    self.connection.close()
                    return
                if fault == "malformed":
                    return self._send(200, b'{"id": "msg_1", "content": [')
                if self.path.endswith("/count_tokens"):
                    return self._send(200, json.dumps({"input_tokens": len(json.dumps(request)) // 4}).encode())
                self._send(200, json.dumps(_reply(request)).encode())

        return Handler


def _reply(request: dict) -> dict:
    last = request["messages"][-1]["content"]
    text = json.dumps(request["messages"][:-1]) if isinstance(last, str) and last.endswith("?") else "Okay."
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": request["model"],
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
