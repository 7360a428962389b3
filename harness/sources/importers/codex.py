"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`): one JSON object a line,
`{"type": ..., "payload": ...}` (older rollouts write the item itself on the line).

Read: `response_item` messages (user and assistant text), `function_call` (its `arguments` a JSON
string) and `custom_tool_call` (`apply_patch` with the patch as `input`) linked to their
`function_call_output` / `custom_tool_call_output` by `call_id`, `local_shell_call`, and
`compacted` items (the summary Codex continued from, recorded for the turn after it). A shell
call's `command`, an argument list such as `["bash", "-lc", "pytest -x"]`, is kept as the command
line it runs (`pytest -x`). An output that is Codex's JSON envelope
(`{"output": ..., "metadata": {"exit_code": ...}}`) becomes its text, an error when the exit code is
not 0. Left out: the environment and instruction preambles Codex writes as user messages, developer
and system messages, reasoning, `event_msg` (it repeats the messages), `turn_context`, session meta.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ...errors import InputError, plural
from ...tool_vocabulary import SHELL_PROGRAMS
from .logfile import json_lines, log_name
from .session import Builder, Call, Session, arguments_of, quote, slug, text_of

ROLLOUT_KINDS = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
# What Codex itself writes as a user message ahead of the user's words.
_PREAMBLE = re.compile(r"^\s*(?:<environment_context>|<user_instructions>|<INSTRUCTIONS>|# AGENTS\.md instructions)")


def read(path: Path) -> list[Session]:
    session = Session(
        slug(log_name(path).stem), f"Codex CLI rollout {path.name}, imported with `harness import codex`."
    )
    builder = Builder(session)
    left: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for number, line in json_lines(path, session.notes, "a Codex CLI rollout"):
        where = f"{path.name}:{number}"
        kind, item = (
            (line.get("type"), line.get("payload")) if line.get("type") in ROLLOUT_KINDS else ("response_item", line)
        )
        kinds[str(kind)] += 1
        if kind in ("session_meta", "turn_context") and isinstance(item, dict) and isinstance(item.get("cwd"), str):
            session.cwd = session.cwd or item["cwd"]  # where the agent ran: its relative paths are under it
        if kind == "compacted" and isinstance(item, dict):
            builder.compacted(str(item.get("message") or ""), where)
        elif kind == "response_item" and isinstance(item, dict):
            _item(item, builder, where, left)
        else:
            left[str(kind)] += 1
    if not kinds["response_item"]:
        raise InputError(path, "not a Codex CLI rollout: no response_item line")
    for what, count in sorted(left.items()):
        session.notes.append(f"{what}: {plural(count, 'item')} left out")
    return [builder.finish()]


def _item(item: dict[str, Any], builder: Builder, where: str, left: Counter[str]) -> None:
    kind = item.get("type")
    if kind == "message":
        role, text = item.get("role"), text_of(item.get("content"))
        if role == "user" and not _PREAMBLE.match(text):
            builder.user(text, where)
        elif role == "assistant":
            builder.assistant(text, [], where)
        else:
            left[f"{role} message" if role != "user" else "Codex preamble message"] += 1
    elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
        builder.assistant("", [_call(item, where, builder.session.notes)], where)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        output, failed = _output(item.get("output"))
        builder.result(str(item.get("call_id")), output, failed, where)
    elif kind == "compaction":  # the server's compaction item: an encrypted summary with no text
        left["encrypted compaction"] += 1
    else:
        left[str(kind)] += 1


def _call(item: dict[str, Any], where: str, notes: list[str]) -> Call:
    kind = item.get("type")
    if kind == "local_shell_call":
        action = item.get("action") or {}
        arguments: Any = {
            "command": action.get("command"),
            **({"workdir": action["working_directory"]} if action.get("working_directory") else {}),
        }
        name = "local_shell"
    elif kind == "custom_tool_call":
        arguments, name = {"input": str(item.get("input", ""))}, str(item.get("name") or "custom_tool")
    else:
        name = str(item.get("name") or "function")
        arguments = arguments_of(item.get("arguments"), name, where, notes)
    if isinstance(arguments.get("command"), list):
        arguments["command"] = _command_line(arguments["command"])
    return Call(name, arguments, id=str(item.get("call_id") or item.get("id") or ""))


def _command_line(argv: list[Any]) -> str:
    """["bash", "-lc", "pytest -x"] as the line the shell runs; another list as one would type it."""
    if len(argv) == 3 and str(argv[0]) in SHELL_PROGRAMS and str(argv[1]) in ("-c", "-lc", "-l -c"):
        return str(argv[2])
    return quote(argv)


def _output(output: Any) -> tuple[str, bool]:
    """A tool output's text, and whether it failed (a non-zero exit code, or success false)."""
    if isinstance(output, str):
        try:
            envelope = json.loads(output)
        except json.JSONDecodeError:
            envelope = None
        if isinstance(envelope, dict) and "output" in envelope:
            output = envelope
        else:
            code = re.match(r"Exit code: (\d+)", output)  # the plain-text envelope of newer versions
            return output, bool(code and code[1] != "0")
    if isinstance(output, dict):
        metadata = output.get("metadata") or {}
        code = metadata.get("exit_code") if isinstance(metadata, dict) else None
        failed = output.get("success") is False or (isinstance(code, int) and code != 0)
        return text_of(output.get("output", output.get("content", ""))), failed
    return text_of(output), False
