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

from dataclasses import dataclass
from typing import Any

from ..actions import Action, path
from ..inputs.probes import Probe
from ..inputs.scenario import Scenario
from ..records.schema import Behaviour
from ..sources.importers.session import Call
from ..sources.tool_effects import plan_of
from ..sources.trail import Trail, breaks, forbids, read_key, same_attempt, touches


@dataclass(frozen=True)
class Situation:
    """What the checks know at a cut."""

    forbidden_paths: frozenset[str] = frozenset()
    forbidden_programs: frozenset[str] = frozenset()  # tool names or shell programs, lower case
    finished: frozenset[str] = frozenset()  # plan items finished by the cut
    finishing: tuple[tuple[str, dict[str, Any]], ...] = ()  # the changes that finished them: (tool, input)
    failed: tuple[tuple[str, dict[str, Any]], ...] = ()  # failed calls with nothing changed since
    unchanged_reads: frozenset[tuple[str, str]] = frozenset()  # (file, part) read and not changed since

    def nothing_to_check(self) -> dict[Behaviour, bool]:
        return {
            Behaviour.REREADS: not self.unchanged_reads,
            Behaviour.REPEATS_FAILURE: not self.failed,
            Behaviour.BREAKS_CONSTRAINT: not (self.forbidden_paths or self.forbidden_programs),
            Behaviour.REDOES_FINISHED: not self.finished,
        }


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
        if fact.constraint and value[1].answer and len(value[1].answer.split()) == 1:
            paths, tools = forbids(value[1].answer)
            forbidden_paths |= paths
            forbidden_programs |= tools
        if value[1].done:
            finished |= set(value[1].done)
    trail = Trail()
    for step, played in enumerate(scenario.turns[:turn]):
        for scripted in played.assistant.tool_calls if played.assistant else []:
            trail.see(Call(scripted.tool, scripted.input, scripted.result, scripted.is_error), step)
    return Situation(
        frozenset(forbidden_paths),
        frozenset(forbidden_programs),
        frozenset(finished),
        tuple(attempt for attempt, _ in trail.finishing),
        tuple(attempt for attempt, _, _ in trail.failures),
        frozenset(trail.reads),
    )


def check(step: Action, at: Situation) -> dict[Behaviour, bool | None]:
    """The four checks of one step (None: nothing to check at this cut; a reply with no tool call does
    none of these things)."""
    tool, arguments = step.tool or "", step.arguments or {}
    plan = plan_of(Call(tool, arguments))
    went_wrong = step.tool is not None and {
        Behaviour.REREADS: read_key(tool, arguments) in at.unchanged_reads,
        Behaviour.REPEATS_FAILURE: any(same_attempt(tool, arguments, f) for f in at.failed),
        Behaviour.BREAKS_CONSTRAINT: breaks(touches(tool, arguments), at.forbidden_paths, at.forbidden_programs),
        Behaviour.REDOES_FINISHED: (
            plan is not None and any(item in plan[0] and item not in plan[1] for item in at.finished)
        )
        or (tool, arguments) in at.finishing,
    }
    return {
        name: None if empty else bool(went_wrong and went_wrong[name]) for name, empty in at.nothing_to_check().items()
    }
