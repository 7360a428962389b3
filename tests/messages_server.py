"""A fake Anthropic Messages server for the server-side strategies: `POST /v1/messages` (plain and
`?beta=true`) and `/v1/messages/count_tokens`, with the request and response shapes of the SDK's
beta types (`BetaCompactionConfigParam`, `BetaCompactionBlock`, `BetaCompact20260112EditParam`,
`BetaClearToolUses20250919EditParam`, `BetaContextManagementResponse`, `usage.iterations`).

It is strict where the API is: a compaction request needs the `compact-2026-09-04` beta and may
not carry `context_management`; a compaction block it issued must come back first in `messages`,
unchanged (content, encrypted_content, signature), and the messages it replaced may not be sent
again without it; the automatic edit's trigger is at least 50,000 tokens. (That the replaced messages come back
without their block is told from the requests this server has seen: a request that goes on past
a compacted range; give each test its own server.) A summary is written from
the user lines and tool results it was sent (the instructions' first line is quoted in it, so a
test can see they arrived); instructions containing FAIL give a block with null content.
Tokens are counted as characters / 4.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler

from loopback import Loopback

COMPACT_BETA, AUTO_BETA, EDIT_BETA = "compact-2026-09-04", "compact-2026-01-12", "context-management-2025-06-27"


def tokens(value) -> int:
    return len(json.dumps(value)) // 4


class MessagesServer(Loopback):
    def __init__(self):
        self.requests: list[dict] = []  # every request body, with its beta header under "_betas"
        self.issued: dict[str, dict] = {}  # signature -> the block as issued
        self.replaced: list[list[dict]] = []  # the message ranges blocks replaced
        self.lock = threading.Lock()
        super().__init__(_handler(self))

    def reject(self, message: str) -> tuple[int, dict]:
        return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}

    def answer(self, body: dict, betas: list[str]) -> tuple[int, dict]:
        with self.lock:
            self.requests.append({**body, "_betas": betas})
        messages = body.get("messages") or []
        problem = self.check_blocks(messages)
        if problem:
            return self.reject(problem)
        if "compaction" in body:
            if COMPACT_BETA not in betas:
                return self.reject(f"the compaction parameter needs the {COMPACT_BETA} beta")
            if "context_management" in body:
                return self.reject("compaction cannot be combined with context_management")
            return 200, self.compaction(messages, (body["compaction"] or {}).get("instructions"))
        edits = (body.get("context_management") or {}).get("edits", [])
        applied, size = [], tokens(messages)
        for edit in edits:
            if edit["type"] == "compact_20260112":
                if AUTO_BETA not in betas:
                    return self.reject(f"compact_20260112 needs the {AUTO_BETA} beta")
                trigger = (edit.get("trigger") or {}).get("value", 150_000)
                if trigger < 50_000:
                    return self.reject("compact_20260112: trigger must be at least 50000 input tokens")
                if size >= trigger:
                    return 200, self.compaction(messages, edit.get("instructions"))
            elif edit["type"] == "clear_tool_uses_20250919":
                if EDIT_BETA not in betas:
                    return self.reject(f"clear_tool_uses_20250919 needs the {EDIT_BETA} beta")
                trigger = edit.get("trigger") or {"type": "input_tokens", "value": 100_000}
                used = (
                    size
                    if trigger["type"] == "input_tokens"
                    else sum(
                        1
                        for m in messages
                        if isinstance(m["content"], list)
                        for b in m["content"]
                        if b.get("type") == "tool_use"
                    )
                )
                if used >= trigger["value"]:
                    applied.append(self.clear(messages, edit))
        reply = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": size, "output_tokens": 1},
        }
        if edits:
            reply["context_management"] = {"applied_edits": applied}
        return 200, reply

    def check_blocks(self, messages: list[dict]) -> str | None:
        """The API's rules for compaction blocks sent back (see the module docstring)."""
        for m, message in enumerate(messages):
            for b, block in enumerate(message.get("content") if isinstance(message.get("content"), list) else []):
                if block.get("type") != "compaction":
                    continue
                issued = self.issued.get(block.get("signature"))
                if issued is None or any(block.get(k) != issued.get(k) for k in ("content", "encrypted_content")):
                    return f"messages.{m}.content.{b}: the compaction block was altered (its signature does not match)"
                if (m, b) != (0, 0):
                    return f"messages.{m}.content.{b}: a compaction block must be the first block of the first message"
        # A request that goes on past a range a block replaced, with the range instead of the block.
        if any(len(messages) > len(done) and messages[: len(done)] == done for done in self.replaced):
            return "messages.0: these messages were compacted; send the compaction block in their place"
        return None

    def compaction(self, messages: list[dict], instructions: str | None) -> dict:
        if instructions and "FAIL" in instructions:
            content = None
        else:
            lines = [
                c
                if isinstance(c, str)
                else " ".join(
                    str(b.get("content") or b.get("text") or "") for b in c if b.get("type") in ("tool_result", "text")
                )
                for c in (m["content"] for m in messages if m["role"] == "user")
            ]
            prior = [
                b.get("content") or ""
                for m in messages
                if isinstance(m["content"], list)
                for b in m["content"]
                if b.get("type") == "compaction"
            ]
            said = f"Instructions: {instructions.splitlines()[0]}. " if instructions and instructions.strip() else ""
            content = said + " ".join(prior + lines)
        signature = hashlib.sha256(json.dumps([messages, instructions]).encode()).hexdigest()[:16]
        block = {
            "type": "compaction",
            "content": content,
            "encrypted_content": f"enc-{signature}",
            "signature": signature,
        }
        with self.lock:
            self.issued[signature] = block
            if content is not None:
                self.replaced.append(messages)
        size = tokens(messages)
        return {
            "id": "msg_compaction",
            "type": "message",
            "role": "assistant",
            "model": "fake",
            "content": [block],
            "stop_reason": "compaction",
            "usage": {
                "input_tokens": 0,
                "output_tokens": 0,
                "iterations": [
                    {
                        "type": "compaction",
                        "input_tokens": size,
                        "output_tokens": tokens(content),
                        "cache_read_input_tokens": 0,
                        "cache_creation_input_tokens": 0,
                    }
                ],
            },
        }

    @staticmethod
    def clear(messages: list[dict], edit: dict) -> dict:
        """What clear_tool_uses_20250919 clears: the results of all but the `keep` most recent tool
        uses of tools not excluded (counted, not returned: the API does not send the history back)."""
        keep = (edit.get("keep") or {}).get("value", 3)
        exclude = set(edit.get("exclude_tools") or [])
        uses = [
            b
            for m in messages
            if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use" and b["name"] not in exclude
        ]
        results = {
            b["tool_use_id"]: b
            for m in messages
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        }
        cleared = [
            results[u["id"]]
            for u in uses[: max(0, len(uses) - keep)]
            if u["id"] in results and results[u["id"]].get("content") != "[Tool result cleared to save context.]"
        ]
        return {
            "type": "clear_tool_uses_20250919",
            "cleared_tool_uses": len(cleared),
            "cleared_input_tokens": sum(tokens(r.get("content")) for r in cleared),
        }


def _handler(server: MessagesServer):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            betas = [b.strip() for b in (self.headers.get("anthropic-beta") or "").split(",") if b.strip()]
            if self.path.startswith("/v1/messages/count_tokens"):
                status, reply = 200, {"input_tokens": tokens(body.get("messages"))}
            else:
                status, reply = server.answer(body, betas)
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
