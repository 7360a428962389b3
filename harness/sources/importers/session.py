"""An agent's log, read: what every importer of agent logs produces, and how it becomes a scenario.

An importer reads its format into a `Session`: exchanges (a user's line, then the agent's tool
steps, then its closing text), each step the agent's words and the tool calls it made with their
results, and the summaries the logged agent compacted to where it did. `to_scenario` writes that
as scenario data the runner replays with the log's own tool calls and results: the first step in
the user's turn, every further step a continuation turn (no user line), each recorded compaction
on the turn it came before. Derived facts (`derive`) and a user's own (`overlay`) go on its turns.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

NO_OUTPUT = "(no output)"
NO_RESULT = "(no result in the log)"
NO_REPLY = "(no reply)"
LOG_STARTS = "(the log starts here)"  # the user line of a log that opens with the agent
PLACEHOLDERS = {NO_OUTPUT, NO_RESULT, NO_REPLY, LOG_STARTS}  # text the importer wrote, not the log
IMPORTED_TOOL = "(imported: this tool is not replayed live)"


@dataclass
class Call:
    tool: str
    input: dict[str, Any]
    result: str | None = None  # None: the log has no result for it (yet)
    is_error: bool = False
    id: str = ""  # the log's own id, to match the result ("": the log gave none)


@dataclass
class Step:
    """One model call of the tool loop: what the agent said and the tools it called."""

    text: str | None
    calls: list[Call]
    recorded_summary: str | None = None  # the logged agent compacted to this just before the step
    where: str | None = None  # the log's file and line of the step (`file:line`), where it has lines
    recorded_where: str | None = None  # and of its recorded compaction


@dataclass
class Exchange:
    user: str
    steps: list[Step] = field(default_factory=list)
    final: str | None = None  # the agent's closing text
    recorded_summary: str | None = None  # the logged agent compacted to this before the user's line
    where: str | None = None  # the log's file and line of the user's line
    recorded_where: str | None = None  # and of its recorded compaction


@dataclass
class Session:
    id: str
    description: str  # what the log is and where it came from
    exchanges: list[Exchange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was left out or changed, with the line
    files_changed: list[str] = field(default_factory=list)  # from the log's own record (a submitted diff)
    cwd: str | None = None  # the agent's working directory as the log records it: relative paths are under it

    def calls(self) -> Iterator[Call]:
        """Every tool call of the session, in order."""
        for exchange in self.exchanges:
            for step in exchange.steps:
                yield from step.calls

    def strings(self) -> Iterator[TextSlot]:
        """Where every text of the session lives, so it can be read and rewritten in place (redaction)."""
        for exchange in self.exchanges:
            yield TextSlot(exchange, "user")
            yield TextSlot(exchange, "final")
            yield TextSlot(exchange, "recorded_summary")
            for step in exchange.steps:
                yield TextSlot(step, "text")
                yield TextSlot(step, "recorded_summary")
                for call in step.calls:
                    yield TextSlot(call, "result")
                    yield from _nested(call.input)


@dataclass(frozen=True)
class TextSlot:
    """One text of a session: a field of an exchange, a step or a call, or a string inside a call's
    input (a dict's key or a list's index)."""

    holder: Any
    key: str | int

    def get(self) -> Any:
        if isinstance(self.holder, dict):
            return self.holder[self.key]
        if isinstance(self.holder, list):
            return self.holder[int(self.key)]
        return getattr(self.holder, str(self.key))

    def set(self, text: str) -> None:
        if isinstance(self.holder, dict):
            self.holder[self.key] = text
        elif isinstance(self.holder, list):
            self.holder[int(self.key)] = text
        else:
            setattr(self.holder, str(self.key), text)


def _nested(value: Any) -> Iterator[TextSlot]:
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, str):
            yield TextSlot(value, key)
        else:
            yield from _nested(item)


def text_of(value: Any) -> str:
    """Text from a log's content: a string, or blocks of text (an image becomes a marker)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(filter(None, (text_of(part) for part in value)))
    if isinstance(value, dict):
        kind = value.get("type", "")
        if kind in ("text", "input_text", "output_text"):
            return str(value.get("text", ""))
        if "image" in kind:
            return "[image]"
        if "content" in value:
            return text_of(value["content"])
    return ""


def arguments_of(raw: Any, name: str, where: str, notes: list[str]) -> dict[str, Any]:
    """A tool call's arguments as logged (a JSON string, or already an object) as an object. What is
    not one (JSON that does not parse, a list, a bare string) is kept whole under `arguments`, and said."""
    if raw is None or raw == "":
        return {}
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        arguments = raw
    if isinstance(arguments, dict):
        return arguments
    notes.append(
        f"{where}: the {name} call's arguments are not a JSON object ({type(arguments).__name__}): "
        "kept whole as `arguments`"
    )
    return {"arguments": arguments}


def tool_use_call(block: dict[str, Any], where: str, notes: list[str]) -> Call:
    """A Messages API `tool_use` block as a call."""
    name = str(block.get("name", "tool"))
    return Call(name, arguments_of(block.get("input"), name, where, notes), id=str(block.get("id") or ""))


@dataclass
class TurnOf:
    """Where a step of the session stands in the scenario: its turn, and what it did."""

    turn: int
    exchange: int
    step: Step | None  # None: the user's line of an exchange with no tool step


CAP_MARK = 60  # at most the characters the marker of a cut output adds


def cap(text: str, limit: int | None) -> str:
    """A tool output kept as it was, or cut to `limit` characters with a marker saying so."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit:,} more characters cut at import ...]"


# Where agent harnesses wrap a person's words in their own: (what it is, the person's part).
_TEMPLATES = [
    ("the issue text of SWE-agent's instance template", re.compile(r"(?s)\bISSUE:\s*\n(.*?)\n\s*INSTRUCTIONS:")),
    (
        "the PR description of the agent's instance template",
        re.compile(r"(?s)<pr_description>\s*(.*?)\s*</pr_description>"),
    ),
    (
        "the task of mini-swe-agent's instance template",
        re.compile(r"(?s)^\s*Please solve this issue:\s*(.*?)\n\s*\n\s*You can execute bash commands"),
    ),
]
# Text a harness inserts into a person's turn (Claude Code's reminders and command echoes).
_INSERTED = re.compile(
    r"(?s)<(system-reminder|command-name|command-message|command-args|local-command-stdout)>.*?</\1>"
)


def person_said(text: str) -> tuple[str, str]:
    """What a person typed in a user line, and where it was found: the part of a known instance
    template that is the person's (the issue, the task), or the line without what a harness inserts
    (SWE-agent's template around the issue, Claude Code's system reminders)."""
    for where, template in _TEMPLATES:
        if found := template.search(text):
            return found[1].strip(), where
    stripped = _INSERTED.sub("", text).strip()
    return stripped, "the user's line" + (" (the harness's reminders left out)" if stripped != text.strip() else "")


def nothing_to_import(session: Session) -> str | None:
    """Why a session holds nothing a scenario could replay, or None: no exchange at all, or not one
    user line with text and not one tool step (every content empty or null). Refused rather than
    written as placeholders."""
    if not session.exchanges:
        return "nothing to import: the log holds no user message and no agent step"
    said = [e.user for e in session.exchanges if e.user not in PLACEHOLDERS]
    if not said and not any(step.calls for e in session.exchanges for step in e.steps):
        return (
            "nothing to import: no user line has text and no tool call was made (every content is empty or "
            "null), so the task cannot be recovered"
        )
    return None


def layout(session: Session) -> list[TurnOf]:
    """Each step's turn in the scenario, in order (the user's turn holds the exchange's first step)."""
    turns, index = [], 0
    for e, exchange in enumerate(session.exchanges):
        steps: list[Step | None] = [*exchange.steps] or [None]  # an exchange with no step is one turn
        for step in steps:
            turns.append(TurnOf(index, e, step))
            index += 1
    return turns


def to_scenario(session: Session, facts: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """The session as scenario data (see the module docstring); `facts` by turn, each a fact or a
    later value of one (a supersession, which names its `fact`)."""
    turns: list[dict[str, Any]] = []
    tools: dict[str, dict[str, Any]] = {}
    for exchange in session.exchanges:
        steps = exchange.steps
        for s, step in enumerate(steps or [None]):
            turn: dict[str, Any] = {"user": exchange.user} if s == 0 else {}
            # A compaction between the user's line and the first step goes before the user's turn.
            summary = (
                (exchange.recorded_summary or (step and step.recorded_summary))
                if s == 0
                else (step.recorded_summary if step else None)
            )
            if summary:
                turn["recorded_summary"] = summary
            if step is None:
                turn["assistant"] = exchange.final or NO_REPLY
            else:
                reply: dict[str, Any] = {}
                if step.text:
                    reply["text"] = step.text
                reply["tool_calls"] = []
                for call in step.calls:
                    tools.setdefault(
                        call.tool,
                        {
                            "name": call.tool,
                            "description": f"The logged agent's {call.tool} tool.",
                            "result": IMPORTED_TOOL,
                        },
                    )
                    result = call.result if call.result is not None else NO_RESULT
                    reply["tool_calls"].append(
                        {
                            "tool": call.tool,
                            "input": call.input,
                            "result": result if result.strip() else NO_OUTPUT,
                            **({"is_error": True} if call.is_error or call.result is None else {}),
                        }
                    )
                if s == len(steps) - 1:
                    reply["final"] = exchange.final or NO_REPLY
                turn["assistant"] = reply
            planted = facts.get(len(turns), [])  # a fact, or a later value of one (it names its `fact`)
            for key, entries in (
                ("facts", [f for f in planted if "fact" not in f]),
                ("supersedes", [f for f in planted if "fact" in f]),
            ):
                if entries:
                    turn[key] = entries
            turns.append(turn)
    return {"id": session.id, "description": session.description, "tools": list(tools.values()), "turns": turns}


def slug(text: str) -> str:
    """A scenario id from a file name: letters, digits, '.', '_' and '-'."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "session"
    return cleaned[:80] if cleaned[0].isalnum() else f"s{cleaned[:79]}"


def quote(command: list[str]) -> str:
    """A command given as a list of arguments, as one would type it."""
    return " ".join(shlex.quote(str(part)) for part in command)


class Builder:
    """Builds a session from a log's events in order: user lines, the agent's messages (text and
    tool calls), tool results matched to their calls by id, and the log's own compactions."""

    def __init__(self, session: Session):
        self.session = session
        self.pending: list[str] = []  # the agent's words since its last tool step
        self.calls: dict[str, tuple[Call, str]] = {}  # by the log's id, with where the call was
        self.recorded: str | None = None  # a compaction waiting for the next turn
        self.recorded_where: str | None = None

    @property
    def current(self) -> Exchange | None:
        return self.session.exchanges[-1] if self.session.exchanges else None

    def user(self, text: str, where: str | None = None) -> None:
        self._close()
        self.session.exchanges.append(
            Exchange(
                text.strip() or NO_OUTPUT,
                recorded_summary=self.recorded,
                where=where,
                recorded_where=self.recorded_where,
            )
        )
        self.recorded = self.recorded_where = None

    def assistant(self, text: str, calls: list[Call], where: str) -> None:
        exchange = self.current
        if exchange is None:
            self.session.notes.append(
                f"{where}: the log starts with the agent; its first user line reads '{LOG_STARTS}'"
            )
            self.user(LOG_STARTS, where)
            exchange = self.session.exchanges[-1]
        if text.strip():
            self.pending.append(text.strip())
        if not calls:
            return
        step = Step(
            "\n\n".join(self.pending) or None,
            calls,
            recorded_summary=self.recorded,
            where=where,
            recorded_where=self.recorded_where,
        )
        self.pending, self.recorded, self.recorded_where = [], None, None
        exchange.steps.append(step)
        for call in calls:
            if call.id:
                self.calls[call.id] = (call, where)

    def result(self, call_id: str, output: str, is_error: bool, where: str) -> None:
        found = self.calls.pop(call_id, None)
        if found is None:
            which = f"a call the log does not hold ({call_id})" if call_id else "no call (it has no call id)"
            self.session.notes.append(f"{where}: a tool result for {which}: left out")
            return
        found[0].result, found[0].is_error = output, is_error

    def tool_results(self, blocks: list[Any], where: str) -> list[dict[str, Any]]:
        """The Messages API `tool_result` blocks among `blocks`, each given to its call; returns them."""
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        for block in results:
            self.result(
                str(block.get("tool_use_id")), text_of(block.get("content")), bool(block.get("is_error")), where
            )
        return results

    def compacted(self, summary: str, where: str) -> None:
        if not summary.strip():
            self.session.notes.append(f"{where}: a compaction with no summary text: left out (nothing to replay)")
            return
        self.recorded, self.recorded_where = summary.strip(), where
        self.session.notes.append(
            f"{where}: the agent compacted its history here (recorded for the `recorded` strategy)"
        )

    def _close(self) -> None:
        if self.current is not None and self.pending:
            self.current.final = "\n\n".join(self.pending)
        self.pending = []

    def finish(self) -> Session:
        self._close()
        for call, where in self.calls.values():
            self.session.notes.append(f"{where}: the {call.tool} call has no result in the log (marked as an error)")
        if self.recorded is not None:
            self.session.notes.append("the log ends with a compaction no turn follows: left out")
        return self.session
