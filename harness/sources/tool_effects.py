"""What an agent's tool call did, read from its name, its input and its result: the files it wrote,
whether its change was applied or refused, the command it ran, the plan it wrote. Derivation
(`importers.derive`), the trail of a session (`trail`: the behaviour checks and the audit) and the
agent under test all read calls through these."""

from __future__ import annotations

import re
from functools import lru_cache

from ..tool_vocabulary import EDIT_TOOLS, PATH_KEYS, SHELL_TOOLS, command_line, patched_files
from .importers.session import Call

_WRITES = re.compile(
    r"(?:>>?|\btee(?:\s+-a)?)\s+([\w./-]+\.\w+)|\b(?:sed\s+-i\S*|rm|touch|truncate)\s+(?:-\S+\s+)*"
    r"(?:'[^']*'\s+|\"[^\"]*\"\s+)?([\w./-]+\.\w+)"
)


def command_of(call: Call) -> str:
    """The command a shell-like call ran, as logged, or ''."""
    return command_line(call.input) or ""


def first_line(command: str) -> str:
    return command.splitlines()[0] if command else ""


def written_files(call: Call) -> list[str]:
    """The files a tool call created, changed or removed, as it names them."""
    name = call.tool.lower()
    found = []
    if name in EDIT_TOOLS:
        found += [str(call.input[k]) for k in PATH_KEYS if isinstance(call.input.get(k), str)]
    text = " ".join(str(v) for v in call.input.values() if isinstance(v, str))
    found += patched_files(text)
    if name in SHELL_TOOLS:
        command = command_of(call) or text
        first = first_line(command)
        if name == "swe_agent" and first.split()[:1] == ["create"]:
            found += first.split()[1:2]
        found += [a or b for a, b in _WRITES.findall(command)]
    return found


# What edit tools answer when they refused a change: SWE-agent's lint check, Claude Code's Edit and
# Write, str_replace editors, patch tools. A refused write changed nothing.
_REFUSED = re.compile(
    r"Your proposed edit has introduced new syntax error|^Error:|No replacement was performed|"
    r"String to replace not found|File has not been read yet|old_str .* did not appear|"
    r"patch (?:does not apply|failed)|Failed to apply patch",
    re.IGNORECASE | re.MULTILINE,
)


@lru_cache(maxsize=1024)
def refused(result: str) -> bool:
    """A tool's answer refuses the change (cached: a call's result is asked about several times)."""
    return bool(_REFUSED.search(result))


def applied(call: Call) -> bool:
    """The call's change happened: its result is no error and no refusal of the edit."""
    return not call.is_error and not refused(call.result or "")


def took_effect(call: Call) -> bool:
    """The files a call names as written were written: an applied call, or a shell command that failed
    (it may still have written its redirections) but was no edit tool's refusal."""
    return applied(call) or (
        call.tool.lower() in SHELL_TOOLS and call.tool != "swe_agent" and not refused(call.result or "")
    )


# A plan tool's input: a list of items (Claude Code's TodoWrite `todos`, Codex's update_plan `plan`, or
# any tool of that shape), each with its text and a status.
PLAN_LISTS = ("todos", "plan", "tasks", "steps", "items")
PLAN_TEXTS = ("content", "step", "title", "task", "description", "text")
PLAN_PROBE = "Which items of your plan are finished, and which are still to do?"
_FINISHED = {"completed", "complete", "done", "finished"}
_STATUSES = _FINISHED | {"pending", "in_progress", "in-progress", "todo", "not_started", "active", "cancelled"}


def plan_of(call: Call) -> tuple[list[str], list[str]] | None:
    """The plan a call writes, as (items, finished items), or None when the call writes no plan."""
    for key in PLAN_LISTS:
        entries = call.input.get(key)
        if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
            continue
        named = [
            next((str(e[k]).strip() for k in PLAN_TEXTS if isinstance(e.get(k), str) and e[k].strip()), None)
            for e in entries
        ]
        texts = [text for text in named if text]
        statuses = [str(e.get("status") or e.get("state") or "").lower() for e in entries]
        if len(texts) == len(named) and all(status in _STATUSES for status in statuses):
            return texts, [text for text, status in zip(texts, statuses) if status in _FINISHED]
    return None
