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

from dataclasses import asdict

from .. import actions
from ..inputs.evalfile import NextActionSettings
from ..inputs.scenario import Scenario
from ..messages import Message, strings_in
from ..models.client import ModelClient, purpose, usage_of
from ..records.schema import ActionRecord, CaseRow, RetentionRecord
from . import behaviour
from .agent import MAX_TOOL_ROUNDS, Agent, Tool, ToolRegistry, schemas
from .failures import RECORDED_ERRORS, describe_error
from .recovery import SEARCH_TOOL, SYSTEM_NOTE


def next_step(
    client: ModelClient,
    settings: NextActionSettings,
    agent: Agent,
    full: list[Message],
    scenario: Scenario,
    turn: int,
    retained: list[RetentionRecord],
    at: behaviour.Situation,
    row: CaseRow,
    compaction: int,
    search: Tool | None = None,
) -> ActionRecord:
    """The record of the case's compaction number `compaction`, before `turn`: the agent holds the
    compacted history, `full` the history as played, `retained` what the compaction's summary kept,
    `at` the situation the behaviour checks read. `search`: the recovery arm's search over what was
    folded, which the compacted agent may call (up to its cap) before the step it takes."""
    next_turn = scenario.turns[turn]
    line = [] if next_turn.continues else [{"role": "user", "content": next_turn.user}]
    tools = agent.tools.schemas()
    request = {"max_tokens": settings.max_tokens, "system": agent.system, **({"tools": tools} if tools else {})}
    overrides = {} if settings.temperature is None else {"temperature": settings.temperature}
    logged = next_turn.assistant.tool_calls[0] if next_turn.assistant and next_turn.assistant.tool_calls else None
    log = next_turn.assistant and (actions.of_call(logged.tool, logged.input) if logged else actions.Action(None))
    record = ActionRecord(
        **asdict(row), fact=f"cut-{turn}", compaction=compaction, before_turn=turn, log=log.key if log else None
    )

    def step(history: list[Message], sample: int, search: Tool | None = None) -> actions.Action:
        messages, asked = history + line, request
        if search is not None:
            record.searches = 0
            asked = {**request, "system": agent.system + SYSTEM_NOTE, "tools": [*tools, *schemas([search])]}
        for _ in range(MAX_TOOL_ROUNDS):
            with purpose("next-step"):
                reply = client.create(**asked, messages=messages, sample=sample, overrides=overrides)
            usage = usage_of(reply)
            if not usage.cached:  # what reached the model; a response-cache hit sent nothing
                record.requests += 1
                record.prompt_tokens_processed += usage.input_tokens
                record.prompt_tokens_sent += usage.input_tokens + usage.cache_read_tokens
            content = reply.get("content") or []
            calls = [b for b in content if b.get("type") == "tool_use"]
            if search is None or not calls or calls[0]["name"] != SEARCH_TOOL:
                return actions.of_reply(content, tools, usage.tool_calls_from_text)
            # A search first: run it (and refuse anything else asked with it), then ask again.
            record.searches = (record.searches or 0) + 1
            results = [ToolRegistry([search]).call(call) for call in calls]
            messages = [*messages, {"role": "assistant", "content": calls}, {"role": "user", "content": results}]
        return actions.Action(None)

    sample = 2 * row.repeat  # each repeat its own pair of samples
    ceiling: actions.Action | None = None
    again: actions.Action | None = None
    try:
        ceiling, again = step(full, sample), step(full, sample + 1)
    except RECORDED_ERRORS as exc:
        record.ceiling_error = describe_error(exc)
    try:
        compacted = step(agent.messages, sample, search)
    except RECORDED_ERRORS as exc:
        record.error = describe_error(exc)
        return record
    record.compacted = compacted.key
    for name, broken in behaviour.check(compacted, at).items():
        setattr(record, name, broken)
    if ceiling is None or again is None:
        return record
    for name, broken in behaviour.check(ceiling, at).items():
        setattr(record, f"ceiling_{name}", broken)
    same = actions.agreement(compacted, ceiling)
    record.ceiling, record.ceiling_again = ceiling.key, again.key
    record.exact, record.same_tool, record.same_target = same["exact"], same["same_tool"], same["same_target"]
    record.floor = ceiling.key == again.key
    record.from_text = sum(a.from_text for a in (compacted, ceiling, again))
    if log:
        record.matches_log, record.ceiling_matches_log = compacted.key == log.key, ceiling.key == log.key
        needed = "\n".join(strings_in(logged.input)) if logged else ""
        record.lacked = next(
            (
                f"{r.fact} ({r.expected})"
                for r in retained
                if r.retained is False
                and needed
                and any(value and value in needed for value in (r.expected or "").split(", "))
            ),
            None,
        )
    return record
