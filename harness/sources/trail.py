"""What a session's tool calls did, followed call by call: the files read and not changed since, the
calls that failed with nothing changed since, the plan's finished items and the changes that finished
them. Each entry keeps the position of the step that made it, so a reader can ask what stood before
a moment (a cut, a recorded compaction). The behaviour checks at a cut (`execution/behaviour.py`)
and the audit of recorded compactions (`harness/audit`) both follow a session through a `Trail`.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from ..actions import of_call, path, programs, target
from ..tool_vocabulary import EDIT_TOOLS, READ_TOOLS, SHELL_TOOLS, command_line
from .importers.session import Call
from .tool_effects import applied, plan_of, took_effect, written_files

_READS = re.compile(  # a shell line that prints one file, with the part it prints: sed's range, head's count
    r"^\s*(?:cat|less|more|bat|nl|sed -n (\S+)|(?:head|tail)(?:\s+-n)?(?:\s+(-?\d+))?)"
    r"\s+(?:-\S+\s+)*([\w./-]+\.\w+)\s*$"
)
_RANGE_KEYS = ("offset", "limit", "view_range", "start_line", "end_line", "line_start", "line_end")

_PATHLIKE = re.compile(r"/|\.\w{1,6}$")
_FOLDER = re.compile(r"([\w.-]+) (?:folder|directory|dir)\b", re.IGNORECASE)  # "the migrations folder"
_RUNS = {"run", "use", "call", "invoke", "execute", "install"}  # verbs whose object starts with a program
_TAG = re.compile(r"^</?[\w-]+>$")
Attempt = tuple[str, dict[str, Any]]  # (tool, input) of a call


def forbids(rule: str, verb: str = "") -> tuple[set[str], set[str]]:
    """The paths and the tools or programs a rule forbids: a word of it that looks like a path, else
    a folder it names ("the migrations folder": migrations/), else a rule of one word (a tool or
    program), else the first word after "run", "use"... ("never run npm install": npm)."""
    words = rule.strip().split()
    paths = {path(word.strip("`'\"")) for word in words if _PATHLIKE.search(word.strip("`'\""))}
    paths |= {f"{name}/" for name in _FOLDER.findall(rule)}
    if paths:
        return paths, set()
    if len(words) == 1 or (words and verb.lower() in _RUNS):
        return set(), {words[0].strip("`'\"").lower()}
    return set(), set()


def read_key(tool: str, arguments: dict[str, Any]) -> tuple[str, str] | None:
    """What a call reads: the file, and the part of it where the call names one (a read tool's
    offset and limit or view range; `sed -n 10,40p`), so reading another part is no re-read."""
    if tool.lower() in READ_TOOLS:
        found = target(tool, arguments)
        part = ":".join(str(arguments[k]) for k in _RANGE_KEYS if arguments.get(k) is not None)
        return (found, part) if found else None
    line = command_line(arguments) if tool.lower() in SHELL_TOOLS else None
    read = _READS.match(line.strip().splitlines()[0]) if line and line.strip() else None
    return (path(read[3]), read[1] or read[2] or "") if read else None


def touches(tool: str, arguments: dict[str, Any]) -> tuple[set[str], set[str]]:
    """What a call would change and run: the files it writes, and its tool and shell programs (lower case)."""
    line = command_line(arguments) if tool.lower() in SHELL_TOOLS else None
    return changed(Call(tool, arguments, "")), {tool.lower()} | programs(line or "")


def breaks(
    touched: tuple[set[str], set[str]], paths: set[str] | frozenset[str], tools: set[str] | frozenset[str]
) -> bool:
    """A call (what it `touches`) changes a forbidden path or a file under a forbidden folder, or runs
    a forbidden tool or program."""
    written, run = touched
    return any(covers(p, f) for f in written for p in paths) or bool(run & tools)


def covers(rule: str, file: str) -> bool:
    """The file is the path a rule names, under the folder it names (ending in /), or matches its
    glob (`billing/*.py`). A relative rule holds wherever the path it names sits ("src/config.py"
    covers /home/me/repo/src/config.py; "migrations/", any migrations folder)."""
    folder = rule.rstrip("/")
    if rule.startswith("/"):
        return file == folder or file.startswith(folder + "/") or fnmatch.fnmatchcase(file, rule)
    padded = "/" + file
    return (
        padded.endswith("/" + folder)
        or f"/{folder}/" in padded
        or fnmatch.fnmatchcase(padded, "*/" + folder)
        or fnmatch.fnmatchcase(padded, f"*/{folder}/*")
    )


def same_file(a: str, b: str) -> bool:
    """Two paths name the same file, one relative and one absolute as agents mix them
    (`src/a.py`, `/repo/src/a.py`)."""
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def changed(call: Call) -> set[str]:
    """The files a call changed (nothing, if it was refused)."""
    return {path(p) for p in written_files(call)} if took_effect(call) else set()


def failed(call: Call) -> bool:
    return call.is_error or not applied(call)


def failure_of(result: str | None) -> str:
    """How a call failed, to tell the same failure again: its output's last line that is not empty
    nor only a tag (mini-swe-agent's `</output>`), with numbers blanked (a test run's timings vary)."""
    lines = [line.strip() for line in (result or "").splitlines() if line.strip() and not _TAG.match(line.strip())]
    return re.sub(r"\d+(?:\.\d+)?", "0", lines[-1])[:200] if lines else ""


def same_attempt(tool: str, arguments: dict[str, Any], earlier: Attempt) -> bool:
    """The same edit (the same file and text), or the same command (its program and target)."""
    if tool != earlier[0]:
        return False
    return (
        arguments == earlier[1] if tool.lower() in EDIT_TOOLS else of_call(tool, arguments).key == of_call(*earlier).key
    )


@dataclass
class Trail:
    """The state of a session after the calls seen so far; every entry with its step's position.
    `cwd`: the agent's working directory as its log records it, so `src/a.py` and `/repo/src/a.py`
    are one file when the agent ran in /repo."""

    cwd: str | None = None
    reads: dict[tuple[str, str], int] = field(default_factory=dict)  # (file, part) -> its first read unchanged
    failures: list[tuple[Attempt, int, str]] = field(default_factory=list)  # failed, nothing changed since: how
    finished: dict[str, int] = field(default_factory=dict)  # plan item -> step of the plan call that finished it
    finishing: list[tuple[Attempt, int]] = field(default_factory=list)  # the changes that finished items
    _last_change: Attempt | None = None

    def see(self, call: Call, step: int) -> None:
        """Follow one call, made at `step`."""
        if files := changed(call):
            self._last_change = (call.tool, call.input)
            self.reads = {key: at for key, at in self.reads.items() if not any(same_file(key[0], f) for f in files)}
            # A change makes every failed command worth trying again, and a refused edit of that file.
            self.failures = [
                (attempt, at, how)
                for attempt, at, how in self.failures
                if attempt[0].lower() in EDIT_TOOLS and not changed(Call(*attempt, "")) & files
            ]
        if failed(call):
            self.failures.append(((call.tool, call.input), step, failure_of(call.result)))
        elif (read := self._read(call.tool, call.input)) is not None:
            self.reads.setdefault(read, step)
        if (plan := plan_of(call)) is not None and applied(call):
            done = set(plan[1])
            if done - set(self.finished) and self._last_change is not None:
                self.finishing.append((self._last_change, step))
            self.finished = {item: self.finished.get(item, step) for item in plan[1]}

    def reread_since(self, tool: str, arguments: dict[str, Any]) -> int | None:
        """The step of the earlier read this call repeats (the file not changed since), or None."""
        read = self._read(tool, arguments)
        return None if read is None else self.reads.get(read)

    def _read(self, tool: str, arguments: dict[str, Any]) -> tuple[str, str] | None:
        """What a call reads, its file resolved against the working directory."""
        read = read_key(tool, arguments)
        if read is None or self.cwd is None or read[0].startswith("/"):
            return read
        return posixpath.normpath(posixpath.join(self.cwd, read[0])), read[1]

    def failure_since(self, call: Call) -> int | None:
        """The step of the earliest failure a failed call repeats, failing the same way, with nothing
        changed since; or None."""
        how = failure_of(call.result)
        return min(
            (at for attempt, at, was in self.failures if was == how and same_attempt(call.tool, call.input, attempt)),
            default=None,
        )

    def undone(self, tool: str, arguments: dict[str, Any]) -> dict[str, int]:
        """The finished plan items a plan call sets back to pending or in progress, with the steps
        that finished them."""
        plan = plan_of(Call(tool, arguments))
        return {item: at for item, at in self.finished.items() if plan and item in plan[0] and item not in plan[1]}

    def finished_since(self, tool: str, arguments: dict[str, Any]) -> int | None:
        """The step that finished what this call undoes or redoes, or None: a plan call setting a
        finished item back to pending or in progress, or the change that finished one made again."""
        redone = [at for attempt, at in self.finishing if attempt == (tool, arguments)]
        return min([*self.undone(tool, arguments).values(), *redone], default=None)
