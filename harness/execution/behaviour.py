"""Behaviour at the cut: whether the step an agent takes next goes against what its history says,
the failures users see after compaction. Four checks on one step (the first tool call of the reply),
against the situation at the cut, read from the scenario's turns before it:

- **breaks a constraint**: it writes a path the user forbade, or runs a tool or program the user ruled
  out (the scenario's constraint facts, as they stand at the cut, plus its `checks`);
- **redoes finished work**: a plan-tool call that sets an item finished before the cut back to pending
  or in progress, or the very change that finished an item (the last change before the plan call that
  marked it finished) made again;
- **repeats a failure**: the same failing command (the same action key), or the same refused edit (the
  same file and text), with nothing changed since (for an edit: that file not changed since);
- **re-reads**: reads a file already read and not changed since.

A check with nothing to look at at a cut (no constraint, nothing finished...) is None, left out of
its rate: these are rates of what could have gone wrong, not of cuts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..inputs.probes import Probe
from ..inputs.scenario import Scenario
from ..sources.importers.derive import EDIT_TOOLS, SHELL_TOOLS, applied, plan_of, took_effect, written_files
from ..sources.importers.session import Call
from .actions import Action, of_call, path, programs, target

READ_TOOLS = {"read", "view", "open", "read_file", "cat", "open_file", "view_file"}
_READS = re.compile(r"^\s*(?:cat|head|tail|less|more|bat|nl|sed -n \S+)\s+(?:-\S+\s+)*([\w./-]+\.\w+)\s*$")
_PATHLIKE = re.compile(r"/|\.\w{1,6}$")
CHECKS = ("breaks_constraint", "redoes_finished", "repeats_failure", "rereads")


@dataclass(frozen=True)
class Situation:
    """What the checks know at a cut."""

    forbidden_paths: frozenset[str] = frozenset()
    forbidden_programs: frozenset[str] = frozenset()  # tool names or shell programs, lower case
    finished: frozenset[str] = frozenset()  # plan items finished by the cut
    finishing: tuple[tuple[str, dict[str, Any]], ...] = ()  # the changes that finished them: (tool, input)
    failed: tuple[tuple[str, dict[str, Any]], ...] = ()  # failed calls with nothing changed since
    unchanged_reads: frozenset[str] = frozenset()  # files read and not changed since

    def nothing_to_check(self) -> dict[str, bool]:
        return {
            "breaks_constraint": not (self.forbidden_paths or self.forbidden_programs),
            "redoes_finished": not self.finished,
            "repeats_failure": not self.failed,
            "rereads": not self.unchanged_reads,
        }


def _command_line(arguments: dict[str, Any]) -> str | None:
    line = arguments.get("command") or arguments.get("cmd")
    return line if isinstance(line, str) else None


def _read_path(tool: str, arguments: dict[str, Any]) -> str | None:
    """The file a call reads: a read tool's target, or a shell line that prints one file."""
    if tool.lower() in READ_TOOLS:
        return target(tool, arguments)
    line = _command_line(arguments) if tool.lower() in SHELL_TOOLS else None
    found = _READS.match(line.strip().splitlines()[0]) if line and line.strip() else None
    return path(found[1]) if found else None


def _changed(call: Call) -> set[str]:
    """The files a call changed (nothing, if it was refused)."""
    return {path(p) for p in written_files(call)} if took_effect(call) else set()


def _same_attempt(tool: str, arguments: dict[str, Any], failed: tuple[str, dict[str, Any]]) -> bool:
    """The same refused edit (the same file and text), or the same command (its program and target)."""
    if tool != failed[0]:
        return False
    return (
        arguments == failed[1] if tool.lower() in EDIT_TOOLS else of_call(tool, arguments).key == of_call(*failed).key
    )


def situation(scenario: Scenario, facts: list[Probe], turn: int) -> Situation:
    """The situation before `turn` is played: from the turns before it and the facts as they stand."""
    forbidden_paths, forbidden_programs = set(), set()
    checks = scenario.checks
    if checks:
        forbidden_paths |= {path(p) for p in checks.forbidden_paths}
        forbidden_programs |= {p.lower() for p in checks.forbidden_tools}
    finished: set[str] = set()
    for fact in facts:
        value = fact.value_before(turn)
        if value is None:
            continue
        if fact.constraint and value[1].answer:
            rule = value[1].answer.strip()
            if _PATHLIKE.search(rule) and " " not in rule:
                forbidden_paths.add(path(rule))
            elif len(rule.split()) == 1:
                forbidden_programs.add(rule.lower())
        if value[1].done:
            finished |= set(value[1].done)
    failed: list[tuple[str, dict[str, Any]]] = []
    reads: set[str] = set()
    finishing: list[tuple[str, dict[str, Any]]] = []
    last_change: tuple[str, dict[str, Any]] | None = None
    done_before: set[str] = set()
    for played in scenario.turns[:turn]:
        for scripted in played.assistant.tool_calls if played.assistant else []:
            call = Call(scripted.tool, scripted.input, scripted.result, scripted.is_error)
            if changed := _changed(call):
                last_change = (call.tool, call.input)
                reads -= changed
                # A change makes every failed command worth trying again, and a refused edit of that file.
                failed = [f for f in failed if f[0].lower() in EDIT_TOOLS and not _changed(Call(*f, "")) & changed]
            if call.is_error or not applied(call):
                failed.append((call.tool, call.input))
            elif (read := _read_path(call.tool, call.input)) is not None:
                reads.add(read)
            if (plan := plan_of(call)) is not None and applied(call):
                if set(plan[1]) - done_before and last_change is not None:
                    finishing.append(last_change)
                done_before = set(plan[1])
    return Situation(
        frozenset(forbidden_paths),
        frozenset(forbidden_programs),
        frozenset(finished),
        tuple(finishing),
        tuple(failed),
        frozenset(reads),
    )


def check(step: Action, at: Situation) -> dict[str, bool | None]:
    """The four checks of one step (None: nothing to check at this cut; a reply with no tool call does
    none of these things)."""
    tool, arguments = step.tool or "", step.arguments or {}
    line = _command_line(arguments) if tool.lower() in SHELL_TOOLS else None
    plan = plan_of(Call(tool, arguments))
    went_wrong = step.tool is not None and {
        "breaks_constraint": bool(
            _changed(Call(tool, arguments, "")) & at.forbidden_paths
            or ({tool.lower()} | programs(line or "")) & at.forbidden_programs
        ),
        "redoes_finished": (plan is not None and any(item in plan[0] and item not in plan[1] for item in at.finished))
        or (tool, arguments) in at.finishing,
        "repeats_failure": any(_same_attempt(tool, arguments, f) for f in at.failed),
        "rereads": _read_path(tool, arguments) in at.unchanged_reads,
    }
    return {
        name: None if empty else bool(went_wrong and went_wrong[name]) for name, empty in at.nothing_to_check().items()
    }
