"""The agent under test: a message history, a tool registry, the inner tool loop, and
compaction at the top of every user turn (seed agent-010)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from ..compaction.context import CompactionContext, CompactionSettings, Strategy
from ..compaction.seed import compact
from ..messages import Message, content_text
from ..models.client import ModelClient, Usage, purpose, usage_of
from ..records.schema import CompactionEvent

AGENT_SYSTEM = "You are a helpful assistant. Answer briefly and use the conversation so far."
MAX_TOOL_ROUNDS = 8  # a model that keeps calling tools is stopped, not looped forever


@dataclass(kw_only=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    run: Callable[..., str]


def schemas(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """The tools as a Messages API request offers them."""
    return [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools]


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()):
        self.tools = {tool.name: tool for tool in tools}

    def schemas(self) -> list[dict[str, Any]]:
        return schemas(self.tools.values())

    def call(self, tool_use: dict[str, Any]) -> dict[str, Any]:
        """Run one tool call; a failing or unknown tool becomes an error result, not a crash."""
        result = {"type": "tool_result", "tool_use_id": tool_use["id"]}
        tool = self.tools.get(tool_use["name"])
        if tool is None:
            return {**result, "content": f"Error: unknown tool {tool_use['name']!r}", "is_error": True}
        try:
            return {**result, "content": str(tool.run(**tool_use.get("input", {})))}
        except Exception as exc:  # the error harness: the model sees the failure and can recover
            return {**result, "content": f"Error: {type(exc).__name__}: {exc}", "is_error": True}


def _assistant_blocks(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep only what the Messages API accepts back in a request."""
    blocks = []
    for block in content:
        if block["type"] == "text" and block.get("text"):
            blocks.append({"type": "text", "text": block["text"]})
        elif block["type"] == "tool_use":
            blocks.append(
                {"type": "tool_use", "id": block["id"], "name": block["name"], "input": block.get("input") or {}}
            )
    return blocks or [{"type": "text", "text": "(no reply)"}]


def with_cache_breakpoint(messages: list[Message]) -> list[Message]:
    """A copy whose last block is a prompt-cache breakpoint (Anthropic's cache_control), so
    requests that share this prefix, like the probes of one case, read it from the cache."""
    if not messages:
        return messages
    last = messages[-1]
    content = last["content"]
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    )
    blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
    return messages[:-1] + [{**last, "content": blocks}]


@dataclass(kw_only=True)
class Agent:
    client: ModelClient  # a models.Backend, or a fake with the same create/count_tokens methods
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    limit: int | None = 1200  # the size the history must fit (None: a strategy that needs none, or no compaction)
    strategy: Strategy | None = compact  # None: never compact
    settings: CompactionSettings = CompactionSettings()
    system: str = AGENT_SYSTEM
    max_tokens: int = 256
    output_stream: TextIO = field(default_factory=lambda: sys.stdout)
    messages: list[Message] = field(default_factory=list)
    events: list[CompactionEvent] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)  # of each reply call
    stop_reason: str | None = None  # of the last reply: "max_tokens" means it was cut at the limit

    def compact(self) -> None:
        """Run compaction: between user turns (the seed's), and with `cut: steps` before every model
        call of the tool loop too (`respond`)."""
        if self.strategy is not None:
            context = CompactionContext(
                client=self.client,
                limit=self.limit,
                settings=self.settings,
                events=self.events,
                output_stream=self.output_stream,
            )
            with purpose("compaction"):
                self.messages = self.strategy(self.messages, context)

    def ask(self, line: str) -> str:
        """One user turn answered live: compact, append the line, run the tool loop."""
        self.compact()
        self.messages.append({"role": "user", "content": line})
        return self.respond()

    def request(self) -> dict[str, Any]:
        """The Messages API request for the model's next step of the history."""
        request = {"max_tokens": self.max_tokens, "system": self.system, "messages": self.messages}
        if self.tools.tools:
            request["tools"] = self.tools.schemas()
        return request

    def take(self, response: dict[str, Any]) -> str | None:
        """Add the model's response to the history and run the tools it calls: its text when it
        stopped, None when it called tools and must be asked again (`request`)."""
        self.usage.append(usage_of(response))
        self.stop_reason = response.get("stop_reason")
        content = _assistant_blocks(response.get("content", []))
        self.messages.append({"role": "assistant", "content": content})
        tool_uses = [b for b in content if b["type"] == "tool_use"]
        if not tool_uses:
            return content_text(content).strip()
        self.messages.append({"role": "user", "content": [self.tools.call(t) for t in tool_uses]})
        return None

    def respond(self) -> str:
        """The inner loop: call the model, run any tool calls, repeat until it stops."""
        for _ in range(MAX_TOOL_ROUNDS):
            if self.settings.cut == "steps":
                self.compact()
            reply = self.take(self.client.create(**self.request()))
            if reply is not None:
                return reply
        stop = f"(stopped after {MAX_TOOL_ROUNDS} rounds of tool calls)"
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": stop}]})
        return stop

    def fork(self) -> Agent:
        """A copy with its own history, so probes never see each other (compaction events are shared)."""
        return replace(self, messages=list(self.messages), usage=[], stop_reason=None)
