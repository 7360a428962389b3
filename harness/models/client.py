"""The model interface the agent, compaction and the runner talk to.

A `ModelClient` sends Messages API requests (`create`, `count_tokens`) and says who it is
(`identity`, `sampling`), how many requests it really sent (`calls`), and proves before a run that
its endpoint speaks the Messages API (`check`). `models.Backend` is the
implementation for every real endpoint; tests use fakes. Whatever a backend cannot do is raised as
one `ModelError` (recorded as `error`, never scored as forgetting). What a call cost travels as a
`Usage` value attached to the reply, not as keys inside the response data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol

# What a request is for, set where the harness makes it (`purpose`): an agent's step, a compaction (any
# request a strategy sends while it compacts), a probe's answer, the next step at a cut, the judge.
Purpose = Literal["agent", "compaction", "probe", "action-probe", "next-step", "judge"]
_PURPOSE: ContextVar[Purpose] = ContextVar("request_purpose", default="agent")


@contextmanager
def purpose(name: Purpose) -> Iterator[None]:
    """Requests sent inside this block are for `name` (the innermost block wins: a compaction inside
    a probe's tool loop is a compaction)."""
    token = _PURPOSE.set(name)
    try:
        yield
    finally:
        _PURPOSE.reset(token)


def current_purpose() -> Purpose:
    return _PURPOSE.get()


class ModelError(Exception):
    """The model or its API failed (after retries): the probe or case is recorded as an error."""


class ContextOverflow(ModelError):
    """The request does not fit the model's context window: recorded as its own outcome
    ("context window exceeded"), never as forgetting and never as a crash."""


# How providers say a request is longer than the context window (llama.cpp, Anthropic, OpenAI-style).
OVERFLOW = re.compile(
    r"exceed_context_size_error|exceeds the available context size|prompt is too long"
    r"|maximum context length|context[_ ]length_exceeded|context window",
    re.IGNORECASE,
)


class SetupError(Exception):
    """The model cannot be reached as configured; the message says what to do."""


@dataclass(frozen=True)
class Usage:
    """What one or more calls cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = True  # every call was served from the response cache (true of no calls)
    tool_calls_from_text: int = 0  # tool calls the model wrote as text, read as tool_use blocks (`tool_text`)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            round(self.latency_s + other.latency_s, 3),
            self.cached and other.cached,
            self.tool_calls_from_text + other.tool_calls_from_text,
        )


class Reply(dict[str, Any]):
    """A Messages API response as plain JSON data (what the seed's code reads), with the `usage`
    the harness measured attached as an attribute."""

    def __init__(
        self, data: dict[str, Any], latency_s: float = 0.0, cached: bool = False, tool_calls_from_text: int = 0
    ):
        super().__init__(data)
        tokens = data.get("usage") or {}
        # A server-side compaction's own tokens are reported apart, in `iterations`, not in the totals.
        compactions = [
            i for i in tokens.get("iterations") or [] if isinstance(i, dict) and i.get("type") == "compaction"
        ]
        self.usage = Usage(
            tokens.get("input_tokens", 0) + sum(i.get("input_tokens", 0) for i in compactions),
            tokens.get("output_tokens", 0) + sum(i.get("output_tokens", 0) for i in compactions),
            tokens.get("cache_read_input_tokens") or 0,
            latency_s,
            cached,
            tool_calls_from_text,
        )


def reply_problem(data: Any) -> str | None:
    """Why `data` is not a Messages API reply the agent can use, or None when it is one. Whatever
    fails this is recorded as an error, never scored and never cached."""
    if not isinstance(data, dict):
        return f"the body is {type(data).__name__} {str(data)[:80]!r}, not a JSON object"
    if data.get("type") != "message" or data.get("role") != "assistant":
        return f"a JSON object that is not a Messages reply: {json.dumps(data)[:120]}"
    content = data.get("content")
    if not isinstance(content, list) or not all(
        isinstance(b, dict) and isinstance(b.get("type"), str) for b in content
    ):
        return "a Messages reply whose content is not a list of blocks"
    for block in content:
        if block["type"] == "text" and not isinstance(block.get("text"), str):
            return "a text block without text"
        if block["type"] == "tool_use" and not (
            isinstance(block.get("id"), str)
            and isinstance(block.get("name"), str)
            and isinstance(block.get("input", {}), dict)
        ):
            return "a tool_use block without id, name or input"
    return None


def api_problem(exc: Exception) -> str:
    """An SDK error as the provider explained it: HTTP status, error type and message when the
    body says them, else the error as the SDK gives it (no answer at all: its type and text)."""
    status = getattr(exc, "status_code", None)
    if status is None:
        return f"{type(exc).__name__}: {exc}"
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return f"HTTP {status}: {error.get('type', 'error')}: {error['message']}"
    return f"HTTP {status}: {getattr(exc, 'message', exc)}"


def usage_of(response: dict[str, Any]) -> Usage:
    """The usage of a reply; a plain dict (a user's own client) carries only its token counts."""
    return response.usage if isinstance(response, Reply) else Reply(response).usage


class ModelClient(Protocol):
    @property
    def identity(self) -> str:
        """Names the weights or endpoint in manifests and cache keys; never an API key."""

    @property
    def sampling(self) -> dict[str, Any]: ...

    @property
    def calls(self) -> int:
        """Requests sent to the model so far (cache hits excluded)."""

    def create(self, **request: Any) -> dict[str, Any]: ...

    def count_tokens(self, **request: Any) -> int: ...

    def check(self) -> None:
        """Raise `SetupError` unless the endpoint answers as a Messages API (one cheap request)."""
