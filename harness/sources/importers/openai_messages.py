"""Chat message lists, the log format of many agent frameworks: a JSON list of messages, an object
holding one under `messages`, or JSONL with a message a line (or a conversation a line, each its
own session). A message has a `role` and `content` (a string, or parts with `text`).

OpenAI's shape: an assistant message's `tool_calls` (`id`, `function.name`, `function.arguments`,
a JSON string) and `tool` messages answering them by `tool_call_id`; the older `function_call`
and `function` messages are read too. The Messages API's shape is read as well: `tool_use` blocks
in assistant content and `tool_result` blocks in user content. A user or system message that opens
the way a framework's compactor opens its summary (`SUMMARY_OPENINGS`) is that framework's recorded
compaction. Left out: other system and developer messages; a message with no role is noted with its
place.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import InputError
from .logfile import json_lines, log_name, read_json
from .session import Builder, Call, Session, arguments_of, slug, text_of, tool_use_call

# A framework whose agent writes its tool call as text (mini-swe-agent's ```bash block): the calls
# in an assistant message's text; a user message after such a call is its result.
TextCalls = Callable[[str], list[Call]]

# How the compactors of agent frameworks open the summary they put in place of the history: Claude
# Code's (when its log is exported as messages), LangChain's SummarizationMiddleware, OpenHands's
# condenser as its default agent shows it, and a summary wrapped in `<summary>` tags.
SUMMARY_OPENINGS = re.compile(
    r"^\s*(?:This session is being continued from a previous conversation"
    r"|Here is a summary of the conversation to date"
    r"|<summary>|Summary of the conversation so far|Previous conversation summary)",
    re.IGNORECASE,
)


def read(path: Path) -> list[Session]:
    notes: list[str] = []  # about the file as a whole
    conversations = _conversations(path, notes)
    sessions = []
    for n, (where, messages) in enumerate(conversations):
        stem = log_name(path).stem
        name = slug(stem if len(conversations) == 1 else f"{stem}-{n + 1}")
        session = Session(
            name,
            f"Chat messages from {path.name}{'' if len(conversations) == 1 else f' ({where})'}, "
            "imported with `harness import openai`.",
        )
        session.notes += notes
        sessions.append(read_messages(messages, session, where))
    return sessions


def _conversations(path: Path, notes: list[str]) -> list[tuple[str, list[tuple[str, Any]]]]:
    """Each conversation of the file: a label, and its messages with where each is."""
    if log_name(path).suffix == ".jsonl":
        lines = json_lines(path, notes, "a JSONL file of chat messages")
        if all(isinstance(entry.get("messages"), list) for _, entry in lines):
            return [
                (
                    f"{path.name}:{number}",
                    [(f"{path.name}:{number}: messages[{i}]", m) for i, m in enumerate(entry["messages"])],
                )
                for number, entry in lines
            ]
        return [(path.name, [(f"{path.name}:{number}", entry) for number, entry in lines])]
    data = read_json(path, "a list of chat messages", notes)
    messages = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(messages, list) or not messages:
        raise InputError(
            path,
            "not a list of chat messages: expected a JSON list, or an object with a `messages` list",
            field="messages" if isinstance(data, dict) else "",
        )
    return [(path.name, [(f"{path.name}: messages[{i}]", m) for i, m in enumerate(messages)])]


def read_messages(
    messages: list[tuple[str, Any]], session: Session, source: str, text_calls: TextCalls | None = None
) -> Session:
    """A session from chat messages (each with where it is in the file)."""
    builder = Builder(session)
    waiting: list[Call] = []  # text calls whose result is the next user message
    roles = [m.get("role") for _, m in messages if isinstance(m, dict)]
    if "user" not in roles and "assistant" not in roles:
        raise InputError(source, "not a list of chat messages: no user or assistant message")
    left = 0
    for where, message in messages:
        if isinstance(message, dict) and message.get("role") in ("user", "system"):
            if SUMMARY_OPENINGS.match(said := text_of(message.get("content"))):
                builder.compacted(said, where)
                continue
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "tool", "function"):
            kind = message.get("role") if isinstance(message, dict) else type(message).__name__
            if kind not in ("system", "developer"):
                session.notes.append(f"{where}: not a chat message ({kind!r}), left out")
            left += 1
            continue
        role, content = message["role"], message.get("content")
        if role == "assistant":
            text, calls = text_of(content), _calls(message, where, session.notes)
            if text_calls and not calls:
                waiting = calls = text_calls(text)
            builder.assistant(text, calls, where)
        elif role == "tool":
            builder.result(str(message.get("tool_call_id") or ""), text_of(content), False, where)
        elif role == "function":  # the older API: answers the last call of that name
            call = (
                next((c for c in reversed(builder.current.steps[-1].calls) if c.tool == message.get("name")), None)
                if builder.current and builder.current.steps
                else None
            )
            builder.result(call.id if call else "", text_of(content), False, where)
        else:
            blocks = content if isinstance(content, list) else []
            results = builder.tool_results(blocks, where)
            if waiting:
                for call in waiting:
                    builder.result(call.id, text_of(content), False, where)
                waiting = []
            elif not results or text_of([b for b in blocks if b not in results]).strip():
                builder.user(text_of([b for b in blocks if b not in results]) if results else text_of(content), where)
    if left:
        session.notes.append(f"{left} system, developer or unreadable message{'s' if left != 1 else ''} left out")
    return builder.finish()


def _calls(message: dict[str, Any], where: str, notes: list[str]) -> list[Call]:
    """An assistant message's tool calls, in any of the shapes the module docstring lists."""
    raw = list(message.get("tool_calls") or [])
    if isinstance(message.get("function_call"), dict):
        raw.append({"id": f"function-{id(message)}", "function": message["function_call"]})
    calls = [
        tool_use_call(b, where, notes)
        for b in message.get("content") or []
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    for n, call in enumerate(raw):
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name = str(function.get("name") or "tool")
            # A call without an id still answers to an older `function` message, by its name.
            own_id = str(call.get("id") or f"{where}#{n}")
            calls.append(Call(name, arguments_of(function.get("arguments"), name, where, notes), id=own_id))
    return calls
