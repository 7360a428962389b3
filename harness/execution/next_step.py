"""Next-action fidelity and behaviour at a cut: the step the model asks for (with the scenario's tools;
none is run) from the full history, twice (the second sample is the noise floor), and from the
compacted one, against the step the log took; each step then checked for what users see go wrong
after compaction (`behaviour`). No extra request: the checks read the steps already asked for.

The requests go in the order that keeps the model's prompt cache warm: the full history first (it
extends the full history at this case's previous cut, and its second sample repeats it), then the
compacted one. What each request cost is recorded: prompt tokens sent, and those the model processed
rather than read from its prompt cache.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .. import actions
from ..inputs.evalfile import NextActionSettings
from ..inputs.scenario import Scenario, Turn
from ..messages import Message, strings_in
from ..models.client import ModelClient, purpose, usage_of
from ..records.schema import ActionRecord, CaseRow, RetentionRecord
from . import behaviour
from .agent import MAX_TOOL_ROUNDS, Agent, Tool, ToolRegistry, schemas
from .failures import RECORDED_ERRORS, describe_error
from .recovery import SEARCH_TOOL, SYSTEM_NOTE


@dataclass(kw_only=True)
class Cut:
    """One compaction of a case, before the turn where the next step is asked for."""

    agent: Agent  # holding the compacted history
    full: list[Message]  # the history as played, never compacted
    scenario: Scenario
    turn: int  # the cut comes before this turn
    compaction: int  # its number in the case
    retained: list[RetentionRecord]  # what its summary kept
    situation: behaviour.Situation  # what the behaviour checks read
    row: CaseRow
    search: Tool | None = None  # the recovery arm's search over what was folded (up to its cap)


def next_step(client: ModelClient, settings: NextActionSettings, cut: Cut) -> ActionRecord:
    """The record of the next step at `cut`: from the full history twice (the ceiling and its
    noise floor), then from the compacted one, with the search the recovery arm offers."""
    next_turn = cut.scenario.turns[cut.turn]
    logged = next_turn.assistant.tool_calls[0] if next_turn.assistant and next_turn.assistant.tool_calls else None
    log = next_turn.assistant and (actions.of_call(logged.tool, logged.input) if logged else actions.Action(None))
    record = ActionRecord(
        **asdict(cut.row),
        fact=f"cut-{cut.turn}",
        compaction=cut.compaction,
        before_turn=cut.turn,
        log=log.key if log else None,
    )
    asker = _Asker(client, settings, cut.agent, next_turn, record)
    sample = 2 * cut.row.repeat  # each repeat its own pair of samples
    ceiling: actions.Action | None = None
    again: actions.Action | None = None
    try:
        ceiling, again = asker.step(cut.full, sample), asker.step(cut.full, sample + 1)
    except RECORDED_ERRORS as exc:
        record.ceiling_error = describe_error(exc)
    try:
        compacted = asker.step(cut.agent.messages, sample, cut.search)
    except RECORDED_ERRORS as exc:
        record.error = describe_error(exc)
        return record
    record.compacted = compacted.key
    for name, broken in behaviour.check(compacted, cut.situation).items():
        setattr(record, name, broken)
    if ceiling is None or again is None:
        return record
    _against_the_ceiling(record, compacted, ceiling, again, cut.situation)
    if log:
        record.matches_log, record.ceiling_matches_log = compacted.key == log.key, ceiling.key == log.key
        record.lacked = _lacked(cut.retained, "\n".join(strings_in(logged.input)) if logged else "")
    return record


class _Asker:
    """Asks the model for its next step from a history, with the scenario's tools (none is run but
    the recovery arm's search), counting what each request cost into the record."""

    def __init__(
        self, client: ModelClient, settings: NextActionSettings, agent: Agent, next_turn: Turn, record: ActionRecord
    ):
        self.client, self.record, self.system = client, record, agent.system
        self.line = [] if next_turn.continues else [{"role": "user", "content": next_turn.user}]
        self.tools = agent.tools.schemas()
        self.request = {
            "max_tokens": settings.max_tokens,
            "system": agent.system,
            **({"tools": self.tools} if self.tools else {}),
        }
        self.overrides = {} if settings.temperature is None else {"temperature": settings.temperature}

    def step(self, history: list[Message], sample: int, search: Tool | None = None) -> actions.Action:
        record, messages, asked = self.record, history + self.line, self.request
        if search is not None:
            record.searches = 0
            asked = {**self.request, "system": self.system + SYSTEM_NOTE, "tools": [*self.tools, *schemas([search])]}
        for _ in range(MAX_TOOL_ROUNDS):
            with purpose("next-step"):
                reply = self.client.create(**asked, messages=messages, sample=sample, overrides=self.overrides)
            usage = usage_of(reply)
            if not usage.cached:  # what reached the model; a response-cache hit sent nothing
                record.requests += 1
                record.prompt_tokens_processed += usage.input_tokens
                record.prompt_tokens_sent += usage.input_tokens + usage.cache_read_tokens
            content = reply.get("content") or []
            calls = [b for b in content if b.get("type") == "tool_use"]
            if search is None or not calls or calls[0]["name"] != SEARCH_TOOL:
                return actions.of_reply(content, self.tools, usage.tool_calls_from_text)
            # A search first: run it (and refuse anything else asked with it), then ask again.
            record.searches = (record.searches or 0) + 1
            results = [ToolRegistry([search]).call(call) for call in calls]
            messages = [*messages, {"role": "assistant", "content": calls}, {"role": "user", "content": results}]
        return actions.Action(None)


def _against_the_ceiling(
    record: ActionRecord,
    compacted: actions.Action,
    ceiling: actions.Action,
    again: actions.Action,
    situation: behaviour.Situation,
) -> None:
    """The compacted step against the full history's, and the full history's against itself."""
    for name, broken in behaviour.check(ceiling, situation).items():
        setattr(record, f"ceiling_{name}", broken)
    same = actions.agreement(compacted, ceiling)
    record.ceiling, record.ceiling_again = ceiling.key, again.key
    record.exact, record.same_tool, record.same_target = same["exact"], same["same_tool"], same["same_target"]
    record.floor = ceiling.key == again.key
    record.from_text = sum(a.from_text for a in (compacted, ceiling, again))


def _lacked(retained: list[RetentionRecord], needed: str) -> str | None:
    """The first fact the summary lost whose value the logged step typed (`needed`: its input)."""
    return next(
        (
            f"{r.fact} ({r.expected})"
            for r in retained
            if r.retained is False
            and needed
            and any(value and value in needed for value in (r.expected or "").split(", "))
        ),
        None,
    )
