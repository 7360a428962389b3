"""Action probes: what the agent does with a fact. At a decision point after the cut the user says
the fact's `action.say`; the agent, holding the case's history, takes one step with the scenario's
tools (a standard coding toolset when it declares none), and the step is graded by the probe's
rules: it **violates** when it does anything `must_not` names; it **complies** when it violates
nothing and passes every test `must` lists; otherwise, and whenever it calls no tool (it asks,
refuses or answers in text), it is **neither**, counted apart and never folded into complies.

Every case asks its action probes: a strategy's after its compactions, the full history's (the
ceiling) and no history's (the control). A probe is informative where the ceiling complies and the
control does not (`analysis.action_probes`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .. import actions
from ..inputs.probes import Probe
from ..inputs.scenario import ActionProbe, StepRules
from ..messages import Message, content_text, strings_in
from ..models.client import ModelClient, purpose, usage_of
from ..records.schema import ActionProbeRecord, CaseRow, StepOutcome
from ..sources.importers.session import Call
from ..sources.tool_effects import plan_of
from ..sources.trail import covers, touches
from ..tool_vocabulary import SHELL_TOOLS, command_line
from .failures import RECORDED_ERRORS, describe_error


@dataclass(frozen=True, kw_only=True)
class Graded:
    outcome: StepOutcome
    reason: str


def grade(step: actions.Action, probe: ActionProbe) -> Graded:
    """How the probe's rules grade one step (see the module docstring)."""
    if step.tool is None:
        return Graded(outcome=StepOutcome.NEITHER, reason="no tool call")
    if broken := _met(step, probe.must_not):
        return Graded(outcome=StepOutcome.VIOLATES, reason=_reading(broken))
    met = _met(step, probe.must)
    if missed := [name for name in probe.must.given() if name not in met]:
        return Graded(outcome=StepOutcome.NEITHER, reason=f"violates nothing; does not meet must {', '.join(missed)}")
    return Graded(outcome=StepOutcome.COMPLIES, reason=_reading(met) or "violates nothing")


def _reading(met: dict[str, str]) -> str:
    return "; ".join(f"{name}: {entry}" for name, entry in met.items())


def _met(step: actions.Action, rules: StepRules) -> dict[str, str]:
    """Each test of `rules` the step passes, with the first entry it met."""
    tool, arguments = step.tool or "", step.arguments or {}
    written, _ = touches(tool, arguments)
    line = command_line(arguments) if tool.lower() in SHELL_TOOLS else None
    run = actions.programs(line) if line else set()
    text = "\n".join(strings_in(arguments)).lower()
    plan = plan_of(Call(tool, arguments))
    open_items = set(plan[0]) - set(plan[1]) if plan else set()
    found = {
        "tools": [t for t in rules.tools if t.lower() == tool.lower()],
        "paths": [p for p in rules.paths if any(covers(p, file) for file in written)],
        "programs": [p for p in rules.programs if p in run],
        "mentions": [m for m in rules.mentions if m.lower() in text],
        "reopens": [item for item in rules.reopens if item in open_items],
    }
    return {name: hits[0] for name, hits in found.items() if hits}


@dataclass(frozen=True, kw_only=True)
class DecisionPoint:
    """One action probe of a played case: the history it is asked from and what to send."""

    fact: Probe
    probe: ActionProbe
    history: list[Message]
    compactions: int
    system: str
    tools: list[dict[str, Any]]
    max_tokens: int


def unanswered(
    fact: Probe, row: CaseRow, compactions: int | None = None, error: str | None = None
) -> ActionProbeRecord:
    """The record of a fact's action probe before (or instead of) its step: a failed case's has its error."""
    assert fact.action is not None, "only a fact with an action has an action probe"
    return ActionProbeRecord(
        **asdict(row),
        fact=fact.fact_id,
        kind=fact.action.kind_of(fact.kind),
        say=fact.action.say,
        planted_turn=fact.planted_turn,
        compactions=compactions,
        error=error,
    )


def take_step(client: ModelClient, point: DecisionPoint, row: CaseRow) -> ActionProbeRecord:
    """Ask for the agent's next step at the decision point (one request; nothing is run) and grade it."""
    record = unanswered(point.fact, row, point.compactions)
    try:
        with purpose("action-probe"):
            reply = client.create(
                max_tokens=point.max_tokens,
                system=point.system,
                tools=point.tools,
                messages=[*point.history, {"role": "user", "content": point.probe.say}],
            )
    except RECORDED_ERRORS as exc:
        record.error = describe_error(exc)
        return record
    usage = usage_of(reply)
    step = actions.of_reply(reply.get("content") or [], point.tools, usage.tool_calls_from_text)
    graded = grade(step, point.probe)
    record.step, record.outcome, record.reason = step.key, graded.outcome.value, graded.reason
    record.from_text = step.from_text
    record.text = content_text(reply.get("content") or []).strip()[:500] or None
    record.input_tokens, record.output_tokens = usage.input_tokens, usage.output_tokens
    return record
