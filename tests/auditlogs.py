"""Generated agent logs for the audit's tests and benchmark: one script of a session (the user's lines,
reads, edits, commands, plan updates and recorded compactions) written in each format we import,
with each tool as that agent names it (Claude Code's Read/Edit/Bash/TodoWrite, Codex's shell and
apply_patch, a chat framework's read_file/write_file/bash/todo_write, SWE-agent's commands)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class User:
    text: str


@dataclass(frozen=True)
class Read:
    path: str


@dataclass(frozen=True)
class Edit:
    path: str


@dataclass(frozen=True)
class Run:
    command: str
    fails: bool = False
    output: str | None = None  # else a test run's


@dataclass(frozen=True)
class Plan:
    items: tuple[tuple[str, str], ...]  # (item, status)


@dataclass(frozen=True)
class Compact:
    summary: str


Event = User | Read | Edit | Run | Plan | Compact


@dataclass
class _Ids:
    n: int = 0

    def next(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n:04d}"


def _result(event: Event) -> str:
    if isinstance(event, Read):
        return f"1\tcontents of {event.path}"
    if isinstance(event, Edit):
        return f"The file {event.path} has been updated."
    if isinstance(event, Run):
        return event.output or ("Error: 1 failed, 3 passed" if event.fails else "3 passed")
    return "Todos updated"


def claude_code(events: list[Event], session: str = "s", cwd: str | None = None) -> str:
    lines: list[dict[str, Any]] = []
    ids, parent = _Ids(), None
    where = {"cwd": cwd} if cwd else {}  # Claude Code writes the working directory on every line

    def add(entry: dict[str, Any]) -> None:
        nonlocal parent
        uuid = ids.next(f"{session}-")
        lines.append({"uuid": uuid, "parentUuid": parent, "sessionId": session, **where, **entry})
        parent = uuid

    for event in events:
        if isinstance(event, User):
            add({"type": "user", "message": {"role": "user", "content": event.text}})
        elif isinstance(event, Compact):
            boundary = ids.next(f"{session}-")
            lines.append(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": boundary,
                    "parentUuid": None,
                    "logicalParentUuid": parent,
                }
            )
            parent = boundary
            add({"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": event.summary}})
        else:
            name, arguments = _claude_call(event)
            call = ids.next("toolu_")
            use = {"type": "tool_use", "id": call, "name": name, "input": arguments}
            add({"type": "assistant", "message": {"role": "assistant", "content": [use]}})
            failed = isinstance(event, Run) and event.fails
            result = {"type": "tool_result", "tool_use_id": call, "content": _result(event), "is_error": failed}
            add({"type": "user", "message": {"role": "user", "content": [result]}})
    return "".join(json.dumps(line) + "\n" for line in lines)


def _claude_call(event: Event) -> tuple[str, dict[str, Any]]:
    if isinstance(event, Read):
        return "Read", {"file_path": event.path}
    if isinstance(event, Edit):
        return "Edit", {"file_path": event.path, "old_string": "a", "new_string": f"b {event.path}"}
    if isinstance(event, Run):
        return "Bash", {"command": event.command}
    assert isinstance(event, Plan)
    return "TodoWrite", {"todos": [{"content": item, "status": status} for item, status in event.items]}


def codex(events: list[Event], cwd: str | None = None) -> str:
    lines: list[dict[str, Any]] = [
        {"type": "session_meta", "payload": {"id": "rollout", **({"cwd": cwd} if cwd else {})}}
    ]
    ids = _Ids()
    for event in events:
        if isinstance(event, User):
            content = [{"type": "input_text", "text": event.text}]
            lines.append({"type": "response_item", "payload": {"type": "message", "role": "user", "content": content}})
        elif isinstance(event, Compact):
            lines.append({"type": "compacted", "payload": {"message": event.summary}})
        else:
            call = ids.next("call_")
            if isinstance(event, Edit):
                patch = f"*** Begin Patch\n*** Update File: {event.path}\n@@\n-a\n+b {event.path}\n*** End Patch"
                item = {"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": call}
                output = {"type": "custom_tool_call_output", "call_id": call, "output": "Done!"}
            else:
                if isinstance(event, Plan):
                    name, arguments = "update_plan", {"plan": [{"step": i, "status": s} for i, s in event.items]}
                else:
                    line = f"cat {event.path}" if isinstance(event, Read) else event.command  # type: ignore[union-attr]
                    name, arguments = "shell", {"command": ["bash", "-lc", line]}
                failed = isinstance(event, Run) and event.fails
                envelope = {"output": _result(event), "metadata": {"exit_code": 1 if failed else 0}}
                item = {"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call}
                output = {"type": "function_call_output", "call_id": call, "output": json.dumps(envelope)}
            lines += [{"type": "response_item", "payload": item}, {"type": "response_item", "payload": output}]
    return "".join(json.dumps(line) + "\n" for line in lines)


def openai(events: list[Event]) -> str:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    ids = _Ids()
    for event in events:
        if isinstance(event, User):
            messages.append({"role": "user", "content": event.text})
        elif isinstance(event, Compact):
            messages.append(
                {"role": "user", "content": f"Here is a summary of the conversation to date:\n\n{event.summary}"}
            )
        else:
            call = ids.next("call_")
            if isinstance(event, Read):
                name, arguments = "read_file", {"path": event.path}
            elif isinstance(event, Edit):
                name, arguments = "write_file", {"path": event.path, "content": f"b {event.path}"}
            elif isinstance(event, Run):
                name, arguments = "bash", {"command": event.command}
            else:
                name, arguments = "todo_write", {"todos": [{"content": i, "status": s} for i, s in event.items]}
            function = {"name": name, "arguments": json.dumps(arguments)}
            calls = [{"id": call, "type": "function", "function": function}]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            messages.append({"role": "tool", "tool_call_id": call, "content": _result(event)})
    return json.dumps({"messages": messages}, indent=1)


def _commands(events: list[Event]) -> list[tuple[str, str, bool]]:
    """The events as shell commands (command, output, failed), for agents whose only tool is a shell;
    a plan, a later user line and a compaction have no command."""
    found = []
    for event in events:
        if isinstance(event, Read):
            found.append((f"cat {event.path}", _result(event), False))
        elif isinstance(event, Run):
            found.append((event.command, _result(event), event.fails))
        elif isinstance(event, Edit):
            found.append((f"echo b > {event.path}", _result(event), False))
    return found


def swe_agent(events: list[Event]) -> str:
    """A SWE-agent trajectory: the task, then a step a command. Its format records no compaction."""
    task = next(e.text for e in events if isinstance(e, User))
    steps = [{"thought": "", "action": line, "observation": out} for line, out, _ in _commands(events)]
    history = [{"role": "system", "content": "SWE-agent"}, {"role": "user", "content": task}]
    return json.dumps({"trajectory": steps, "history": history, "info": {"exit_status": "submitted"}})


def mini_swe_agent(events: list[Event]) -> str:
    """A mini-swe-agent trajectory: a fenced command a reply, its output as the next user message."""
    task = next(e.text for e in events if isinstance(e, User))
    messages = [{"role": "system", "content": "mini-swe-agent"}, {"role": "user", "content": task}]
    for line, out, failed in _commands(events):
        messages.append({"role": "assistant", "content": f"Next.\n```bash\n{line}\n```"})
        code = 1 if failed else 0
        messages.append({"role": "user", "content": f"<returncode>{code}</returncode>\n<output>\n{out}\n</output>"})
    return json.dumps({"messages": messages, "info": {}})


# The formats that record compactions, and those that do not.
WRITERS = {"claude-code": (claude_code, ".jsonl"), "codex": (codex, ".jsonl"), "openai": (openai, ".json")}
NO_COMPACTION_WRITERS = {"swe-agent": (swe_agent, ".traj"), "mini-swe-agent": (mini_swe_agent, ".traj.json")}
