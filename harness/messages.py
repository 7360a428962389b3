"""The agent's history: Messages API messages, as the seed (agent-010) holds them, read as text.

A history holds three shapes of message: user text (a string), assistant content (a list of text
and `tool_use` blocks) and tool results (a user message whose content is a list of `tool_result`
blocks). `render_message` flattens any of them into readable text: it is how a history is measured
in characters (`history_size`, the budget's yardstick) and how the transcript a summary is written
from is built. `content_text` is the one reading of "the text of these blocks" that everything else
uses (replies, summaries, tool results).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

Message = dict[str, Any]
# Where a summary request puts the summary prompt: "system" (the seed's: the prompt as system, the
# transcript as the user turn) or "transcript-first" (one user turn: the transcript, then the prompt).
SummaryLayout = Literal["system", "transcript-first"]


def content_text(content: str | list[dict[str, Any]], separator: str = "\n") -> str:
    """The text of a message's content: a string as it is; of blocks, the text blocks' text and the
    text of tool results, joined (tool calls, images and other blocks carry none)."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            parts.append(content_text(block.get("content") or "", separator))
    return separator.join(parts)


def strings_in(value: Any) -> list[str]:
    """Every string inside a tool call's input (nested lists and objects included), in order: the
    path an edit names and the command a shell runs are in the history as much as its output."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [text for item in items for text in strings_in(item)]


def first_text(content: list[dict[str, Any]]) -> str | None:
    """The first text block's text (a summary reply's summary), or None when there is none."""
    return next((block["text"] for block in content if block.get("type") == "text"), None)


def append_joined(history: list[Message], message: Message) -> None:
    """Append a message to a history, joined to the last one when both have its role (two texts by a
    blank line, else their blocks), so roles alternate as the Messages API requires: how frameworks
    that keep one message an event (Inspect, OpenHands) send theirs."""
    if history and history[-1]["role"] == message["role"]:
        previous, content = history[-1]["content"], message["content"]
        both_text = isinstance(previous, str) and isinstance(content, str)
        joined = f"{previous}\n\n{content}" if both_text else _blocks(previous) + _blocks(content)
        history[-1] = {"role": message["role"], "content": joined}
    else:
        history.append(message)


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def render_message(message: Message) -> str:
    content = message["content"]
    if isinstance(content, str):
        return f"{message['role']}: {content}"
    parts = []
    for block in content:
        if block["type"] == "tool_result":
            parts.append(f"tool result: {content_text(block.get('content') or '')}")
        elif block["type"] == "text":
            parts.append(f"{message['role']}: {block['text']}")
        elif block["type"] == "tool_use":
            parts.append(f"{message['role']} called {block['name']}({block['input']})")
        elif block["type"] == "compaction":  # a server-side summary of what came before
            parts.append(f"[compacted earlier conversation: {block.get('content') or ''}]")
    return "\n".join(parts)


def history_size(messages: list[Message]) -> int:
    return sum(len(render_message(m)) for m in messages)


def is_user_turn(message: Message) -> bool:
    """A user-role message is a real user turn only if its content is a string; a list is tool
    results, mid-exchange: not a place to cut."""
    return message["role"] == "user" and isinstance(message["content"], str)


def exchange_starts(messages: list[Message]) -> list[int]:
    return [i for i, m in enumerate(messages) if is_user_turn(m)]


def cut_points(messages: list[Message], steps: bool = False) -> list[int]:
    """Where a history may be cut: each exchange start (a user turn); with `steps`, also each step
    of a tool loop, an assistant message after tool results, before which every tool_use already
    has its tool_result. Never between a tool_use and its result."""
    return [
        i
        for i, m in enumerate(messages)
        if is_user_turn(m) or (steps and i and m["role"] == "assistant" and _holds_results(messages[i - 1]))
    ]


def _holds_results(message: Message) -> bool:
    return (
        message["role"] == "user"
        and isinstance(message["content"], list)
        and any(block.get("type") == "tool_result" for block in message["content"])
    )


def opens_with_compaction(messages: list[Message]) -> bool:
    """The history opens with a server compaction block, as the API requires after one."""
    content = messages[0]["content"] if messages else None
    return isinstance(content, list) and bool(content) and content[0].get("type") == "compaction"


def history_problem(messages: list[Message]) -> str | None:
    """Why the Messages API would refuse this history, or None: it opens with a user message, roles
    alternate, and each tool_use is answered by a tool_result in the next message (and only so)."""
    if messages and messages[0]["role"] != "user" and not opens_with_compaction(messages):
        return "the history does not open with a user message (or a server compaction block)"
    for i, message in enumerate(messages):
        if i and message["role"] == messages[i - 1]["role"]:
            return f"messages {i - 1} and {i} are both {message['role']}"
        asked = (
            {b["id"] for b in message["content"] if b.get("type") == "tool_use"}
            if message["role"] == "assistant" and isinstance(message["content"], list)
            else set()
        )
        following = messages[i + 1]["content"] if i + 1 < len(messages) else None
        answered = (
            {b["tool_use_id"] for b in following if b.get("type") == "tool_result"}
            if isinstance(following, list)
            else set()
        )
        if asked - answered and i + 1 < len(messages):
            return f"a tool_use of message {i} has no tool_result in message {i + 1}"
        if answered - asked:
            return f"a tool_result of message {i + 1} answers no tool_use of message {i}"
    return None


class TokenCounter(Protocol):
    """What measuring in tokens needs of a model client (`models.ModelClient` has it)."""

    def count_tokens(self, **request: Any) -> int: ...


def measure(messages: list[Message], client: TokenCounter, unit: str) -> int:
    """The history's size in the budget's unit: characters (as the seed) or model tokens."""
    if unit == "tokens":
        return client.count_tokens(messages=messages) if messages else 0
    return history_size(messages)
