"""Running one case: the scenario played through a fresh agent, then every fact probed from its own
copy of the history, in three steps (`CaseRunner.play`, `probe_requests`, `score`) that an
executor composes (`executors`: one case at a time, several at once, or in batch waves).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..compaction.context import CompactionSettings, ToolClearing
from ..inputs.evalfile import Prompt
from ..inputs.probes import Probe, probes
from ..inputs.scenario import Scenario
from ..messages import Message, measure, render_message
from ..models.client import Usage
from ..records.schema import (
    OVERFLOWED,
    ActionRecord,
    CaseRow,
    CompactionEvent,
    CompactionRecord,
    ProbeRecord,
    RetentionRecord,
)
from ..scoring.affirmation import prohibits
from ..scoring.matchers import SetMatch, states, states_about
from ..scoring.verdict import verdict
from . import behaviour
from .agent import Agent, Tool, ToolRegistry, with_cache_breakpoint
from .cases import Case, first_unedited_turn, first_verbatim_turn, probed_facts
from .evals import Eval
from .failures import RECORDED_ERRORS, describe_error
from .judge import judge_says_recalled
from .next_step import next_step


@dataclass
class Resampled:
    """A client whose requests are sample `index` of a repeated case: the local server gets its own
    seed and the cache its own entries, so a repeat at temperature > 0 is a new sample."""

    client: Any
    index: int

    def create(self, **request: Any) -> dict[str, Any]:
        return self.client.create(sample=self.index, **request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


@dataclass(kw_only=True)
class PlayedCase:
    """A case played up to its probes: the agent holding its history, and what its compactions did."""

    case: Case
    row: CaseRow  # what every record of the case carries
    agent: Agent | None  # None: the case failed before its history was complete
    limit: int | None  # the budget resolved in units
    compactions: list[CompactionRecord]
    retention: list[RetentionRecord]
    starts: list[Message] = field(default_factory=list)  # the first message of each turn played
    # Each scripted turn's messages as played (a live turn: its user line), to tell which turns an
    # in-place edit (clearing old tool results) changed.
    turn_messages: list[list[Message]] = field(default_factory=list)
    early: dict[str, ProbeRequest] = field(default_factory=dict)  # facts asked before a turn (`probe_at`)
    error: str | None = None  # why the case failed: every fact is then an error
    full: list[Message] = field(default_factory=list)  # the history as played, never compacted (the ceiling's)
    actions: list[ActionRecord] = field(default_factory=list)  # next-action fidelity at each cut

    def when_asked(self, fact: Probe) -> tuple[list[Message], int, int]:
        """The history a fact's probe saw, and how many compactions and turns came before it."""
        if early := self.early.get(fact.fact_id):
            return early.history, early.compactions, early.turns
        return self.agent.messages, len(self.compactions), len(self.starts)


@dataclass
class ProbeRequest:
    """One probe of a played case: a fork of its agent whose last message is the probe question.
    `agent.request()` is what to send; `agent.take(response)` reads the answer back. `compactions`
    and `turns` say how far the case had played when it was asked (a `probe_at` fact is asked
    before the conversation ends)."""

    fact: Probe
    agent: Agent
    compactions: int
    turns: int

    @property
    def history(self) -> list[Message]:
        """What the agent held when asked: its messages before the probe question."""
        return self.agent.messages[:-1]


class CaseRunner:
    """Plays a case, asks its probes and scores the answers, in three steps that an executor can
    also drive itself (to send the probes of many cases at once): `play`, `probe_requests`, `score`.
    `run` composes them, one request at a time."""

    def __init__(self, ev: Eval, client: Any, judge: Any = None):
        self.ev, self.client, self.judge = ev, client, judge
        # How a case's probes are sent: one at a time, or (batch waves) all at once.
        self.ask_all: Callable[[list[ProbeRequest]], list[tuple]] = lambda requests: list(map(self.ask, requests))
        self.scenarios = {s.id: s for s in ev.scenarios}
        self.prompts: dict[str, Prompt] = {p.id: p for p in ev.prompts}
        self.facts = probed_facts(ev)
        self.every_fact = {s.id: probes(s) for s in ev.scenarios}  # probed or not: behaviour checks read them all
        # Every subject of a scenario, so retention can tell a value stated of the wrong one.
        self.subjects = {s.id: tuple(p.subject for p in self.every_fact[s.id] if p.subject) for s in ev.scenarios}
        self._situations: dict[tuple[str, int], behaviour.Situation] = {}
        self._scripted_sizes: dict[str, int] = {}

    def scripted_size(self, scenario: Scenario) -> int:
        """The scenario's uncompacted history, live replies excluded; measured once per run
        (in tokens that is a model call), not once per case."""
        if scenario.id not in self._scripted_sizes:
            self._scripted_sizes[scenario.id] = measure(scenario.scripted_history(), self.client, self.ev.spec.unit)
        return self._scripted_sizes[scenario.id]

    def _agent(self, case: Case, scenario: Scenario, limit: int | None) -> Agent:
        spec = self.ev.spec
        prompt = self.prompts.get(case.prompt)
        clearing = spec.tool_results
        inputs = clearing.clear_tool_inputs
        settings = CompactionSettings(
            summary_prompt=prompt.text if prompt else "",
            keep_recent=spec.keep_recent,
            summary_max_tokens=spec.summary_max_tokens,
            unit=spec.unit,
            max_transcript_chars=spec.summary_transcript_chars,
            layout=spec.summary_layout,
            prompt_id=prompt.id if prompt else None,
            cut=spec.cut,
            tool_results=ToolClearing(
                keep=clearing.keep,
                exclude_tools=tuple(clearing.exclude_tools),
                clear_tool_inputs=tuple(inputs) if isinstance(inputs, list) else inputs,
                clear_at_least=clearing.clear_at_least,
            ),
        )
        strategy = self.ev.strategy(case.strategy).compact  # None: the history is never compacted
        tools = ToolRegistry(
            [
                Tool(name=t.name, description=t.description, input_schema=t.input_schema, run=_returns(t.result))
                for t in scenario.tools
            ]
        )
        # Repeats are samples only at temperature > 0 (else they collapse): each gets its own
        # sampling seed and cache entries, so it is not a copy of the first.
        client = Resampled(self.client, case.repeat) if case.repeat else self.client
        return Agent(
            client=client,
            tools=tools,
            limit=limit,
            strategy=strategy,
            settings=settings,
            max_tokens=spec.reply_max_tokens,
            output_stream=io.StringIO(),
        )

    def run(
        self, case: Case
    ) -> tuple[list[ProbeRecord], list[CompactionRecord], list[RetentionRecord], list[ActionRecord]]:
        """The case's probe records, compaction records, retention records and next-action records."""
        played = self.play(case)
        if not self.ev.spec.probes:
            return [], played.compactions, played.retention, played.actions
        if played.error:
            records = [self.score(played, fact, error=played.error) for fact in self.facts[case.scenario]]
        else:
            requests = self.probe_requests(played)
            records = [
                self.score(played, request.fact, *answer) for request, answer in zip(requests, self.ask_all(requests))
            ]
        return records, played.compactions, played.retention, played.actions

    # --- step 1: play ---------------------------------------------------------------------

    def play(self, case: Case) -> PlayedCase:
        """Play the scenario's turns through a fresh agent, compacting as the agent would; a
        failure is recorded on the case (`error`), and every fact's retention is then an error."""
        scenario = self.scenarios[case.scenario]
        prompt = self.prompts.get(case.prompt)
        row = CaseRow(
            case=case.id,
            scenario=case.scenario,
            strategy=case.strategy,
            budget=case.budget and str(case.budget),
            prompt=case.prompt,
            prompt_hash=prompt and prompt.hash,
            repeat=case.repeat,
            model=self.client.identity,
            unit=self.ev.spec.unit,
        )
        played = PlayedCase(case=case, row=row, agent=None, limit=None, compactions=[], retention=[])
        asked_before = {f.probe_at: [] for f in self.facts[case.scenario]}
        for fact in self.facts[case.scenario]:
            asked_before[fact.probe_at].append(fact)
        try:
            played.limit = case.budget and case.budget.limit(self.scripted_size(scenario))
            agent = self._agent(case, scenario, played.limit)
            if self.ev.strategy(case.strategy).uses_history:
                for index, turn in enumerate(scenario.turns):
                    agent.settings = replace(agent.settings, recorded_summary=turn.recorded_summary)
                    # Compaction runs between user turns (the seed's rule), before every step of a
                    # tool loop with `cut: steps`, and wherever an imported log's agent compacted.
                    if not turn.continues or agent.settings.cut == "steps" or turn.recorded_summary is not None:
                        self._compact(agent, index, played, scenario)
                    for fact in asked_before.get(index, []):  # what was the agent about to do?
                        played.early[fact.fact_id] = self._probe_request(agent, fact, played)
                    if turn.assistant is None:
                        agent.messages.append({"role": "user", "content": turn.user})
                        played.starts.append(agent.messages[-1])
                        played.turn_messages.append([agent.messages[-1]])
                        before = len(agent.messages)
                        reply = agent.respond()
                        # The ceiling's history gets the live reply as played (its last text, if a
                        # compaction inside the loop moved the messages).
                        live = (
                            agent.messages[before:]
                            if agent.messages[before - 1] is played.starts[-1]
                            else [{"role": "assistant", "content": [{"type": "text", "text": reply or "(no reply)"}]}]
                        )
                        played.full += [played.starts[-1], *live]
                    else:
                        added = turn.messages(index)
                        played.starts.append(added[0])
                        played.turn_messages.append(added)
                        agent.messages += added
                        played.full += added
                # The compaction the agent would run before the next user line (the probe).
                agent.settings = replace(agent.settings, recorded_summary=None)
                self._compact(agent, len(scenario.turns), played, scenario)
        except RECORDED_ERRORS as exc:
            played.error = describe_error(exc)
            played.retention = [
                RetentionRecord(**asdict(row), fact=f.fact_id, kind=f.kind, retained=None, error=played.error)
                for f in self.facts[case.scenario]
                if f.values
            ]
            return played
        played.agent = agent
        return played

    def _compact(self, agent: Agent, turn: int, played: PlayedCase, scenario: Scenario) -> None:
        seen = len(agent.events)
        agent.compact()
        for event in agent.events[seen:]:
            if event.edited:  # old tool results emptied in place: what is left of the edited turns is the history
                verbatim_from = first_unedited_turn(agent.messages, played.turn_messages[:turn])
                left = "\n".join(map(render_message, agent.messages))
            else:
                verbatim_from, left = first_verbatim_turn(agent.messages, played.starts[:turn]), event.summary
            played.compactions.append(
                CompactionRecord(**asdict(played.row), before_turn=turn, first_verbatim_turn=verbatim_from, event=event)
            )
            if event.folded_messages:
                retained = self._retention(event, left, len(played.compactions) - 1, turn, verbatim_from, played.row)
                played.retention += retained
                if self.ev.spec.next_action.enabled and turn < len(scenario.turns):
                    played.actions.append(
                        next_step(
                            self.client,
                            self.ev.spec.next_action,
                            agent,
                            played.full,
                            scenario,
                            turn,
                            retained,
                            self._situation(scenario, turn),
                            played.row,
                            len(played.compactions) - 1,
                        )
                    )

    def _situation(self, scenario: Scenario, turn: int) -> behaviour.Situation:
        """What the behaviour checks know before `turn`: the same for every case of the scenario."""
        if (scenario.id, turn) not in self._situations:
            self._situations[scenario.id, turn] = behaviour.situation(scenario, self.every_fact[scenario.id], turn)
        return self._situations[scenario.id, turn]

    def _retention(
        self, event: CompactionEvent, left: str | None, index: int, turn: int, verbatim_from: int, row: CaseRow
    ) -> list[RetentionRecord]:
        """For each probed fact folded so far: does what this compaction left of its turns (the
        summary; after an in-place edit, the whole history) state the value the fact had at this
        point (of its subject)? Dropped without a summary (truncate): not retained; replaced by
        messages with no text to check: unknown (None)."""
        records = []
        for fact in self.facts[row.scenario]:
            folded = fact.folded_at(turn, verbatim_from)
            if folded is None:
                continue  # not planted yet, or its current value is still verbatim
            value_turn, expected = folded
            credit, missing, stale = None, None, None
            if left is not None:
                retained = states_about(left, expected, fact.subject, self.subjects[row.scenario])
                # A constraint the user changed: the summary that still forbids what the user lifted keeps a stale rule.
                stale = fact.constraint and any(
                    prohibits(left, value)
                    for turn_of, old in fact.values
                    if turn_of < value_turn
                    for value in old.values
                )
                retained = retained and not stale
                if isinstance(expected.matcher, SetMatch):
                    credit = expected.matcher.share(left, expected, within=True)
                    missing = [item for item in expected.items if not expected.matcher.names(left, item)]
            else:  # dropped outright (truncate): not retained; replaced by text-less messages: unknown
                retained = False if event.replaced_with == 0 else None
                if retained is False and isinstance(expected.matcher, SetMatch):
                    credit, missing = 0.0, list(expected.items)
            records.append(
                RetentionRecord(
                    **asdict(row),
                    compaction=index,
                    before_turn=turn,
                    fact=fact.fact_id,
                    kind=fact.kind,
                    value_turn=value_turn,
                    expected=expected.answer,
                    retained=retained,
                    credit=credit,
                    missing=missing,
                    stale=stale,
                )
            )
        return records

    # --- step 2: the probe requests --------------------------------------------------------

    def probe_requests(self, played: PlayedCase) -> list[ProbeRequest]:
        """One request per probed fact, each from its own copy of the case's history: as it stood
        when the fact is asked (`probe_at`), else at the end."""
        return [
            played.early.get(fact.fact_id) or self._probe_request(played.agent, fact, played)
            for fact in self.facts[played.case.scenario]
        ]

    def _probe_request(self, agent: Agent, fact: Probe, played: PlayedCase) -> ProbeRequest:
        fork = agent.fork()
        fork.strategy = None  # a probe measures the history as it is: no compaction while answering it
        fork.max_tokens = self.ev.spec.probe.max_tokens
        if getattr(self.client, "prompt_caching", False):
            fork.messages = with_cache_breakpoint(fork.messages)
        fork.messages.append({"role": "user", "content": fact.question})
        return ProbeRequest(fact, fork, len(played.compactions), len(played.starts))

    def ask(self, request: ProbeRequest) -> tuple[str | None, str | None, Usage]:
        """Send one probe request now: the answer or the error that stopped it, and its cost."""
        try:
            answer, error = request.agent.respond(), None
        except RECORDED_ERRORS as exc:
            answer, error = None, describe_error(exc)
        return answer, error, sum(request.agent.usage, Usage())

    # --- step 3: score --------------------------------------------------------------------

    def score(
        self,
        played: PlayedCase,
        fact: Probe,
        answer: str | None = None,
        error: str | None = None,
        usage: Usage = Usage(),
    ) -> ProbeRecord:
        """The probe record of one answer (or of the error that replaced it): where the fact was
        at probe time, the verdict, and the judge's word on a `forgot`."""
        expected = fact.target.expected
        error = error or played.error
        record = ProbeRecord(
            **asdict(played.row),
            fact=fact.fact_id,
            kind=fact.kind,
            question=fact.question,
            planted_turn=fact.planted_turn,
            changed_turn=fact.changed_turn,
            superseded=fact.changed_turn != fact.planted_turn,
            literal=fact.literal,
            constraint=fact.constraint,
            expected=expected and expected.answer,
            verdict="overflow" if error and error.startswith(OVERFLOWED) else "error",
            error=error,
        )
        if played.error:
            return record
        record.limit = played.limit
        self._locate(record, played, fact)
        if error is not None:
            return record
        record.answer, record.verdict = answer, verdict(answer, fact.target)
        record.f1 = fact.target.matcher.score(answer, expected)
        record.extras = fact.target.matcher.extras(answer, expected)
        for item in record.items or []:
            item["named"] = expected.matcher.names(answer, item["item"], within=False)
        record.input_tokens, record.output_tokens = usage.input_tokens, usage.output_tokens
        record.cache_read_tokens, record.latency_s, record.cached = (
            usage.cache_read_tokens,
            usage.latency_s,
            usage.cached,
        )
        record.tool_calls_from_text = usage.tool_calls_from_text
        if self.judge is not None and record.verdict == "forgot" and expected is not None:
            try:
                record.judge = judge_says_recalled(self.judge, fact.question, fact.target, answer)
            except RECORDED_ERRORS as exc:
                record.verdict, record.error = "error", f"judge: {describe_error(exc)}"
                return record
            if record.judge:
                record.verdict = "recalled"
        return record

    def _locate(self, record: ProbeRecord, played: PlayedCase, fact: Probe) -> None:
        """Where the fact was when probed: still verbatim (its turn is, or the value came back in a
        later one: the agent reopened the file), in the last summary, or gone."""
        if not self.ev.strategy(played.case.strategy).uses_history:
            record.location, record.compactions = "none", 0
            return
        expected = fact.target.expected
        history, compacted, turns = played.when_asked(fact)
        compactions = played.compactions[:compacted]
        summaries = [c.event.summary for c in compactions if c.event.summary is not None]
        record.compactions = sum(
            1 for c in compactions if c.event.folded_messages and c.first_verbatim_turn > fact.changed_turn
        )
        record.in_summary = states(summaries[-1], expected, within=True) if summaries and expected else None
        folds = [c for c in compactions if c.event.folded_messages]
        unidentified = (
            bool(folds)
            and folds[-1].event.summary is None
            and folds[-1].event.replaced_with > 0
            and not folds[-1].event.edited
        )
        starts = played.starts[:turns]
        first = next((i for i, m in enumerate(history) if m in starts), len(history))
        verbatim = "\n".join(map(render_message, history[first:]))  # what follows the summary, as played
        seen_again = expected is not None and states(verbatim, expected, within=True)
        # After an in-place edit every turn's opening is still there: the edit's own count says which changed.
        verbatim_from = (
            folds[-1].first_verbatim_turn if folds and folds[-1].event.edited else first_verbatim_turn(history, starts)
        )
        if fact.changed_turn >= verbatim_from or seen_again:
            record.location = "verbatim"
        elif unidentified:  # replaced by something with no text to check: never blame a summary unseen
            record.location, record.in_summary = "unknown", None
        else:
            record.location = "summary" if record.in_summary else "gone"
        if expected is not None and isinstance(expected.matcher, SetMatch):  # each item where it was
            turns_of = dict(zip(expected.items, fact.item_turns or [fact.changed_turn] * len(expected.items)))
            record.items = [
                {
                    "item": item,
                    "location": "verbatim"
                    if turns_of[item] >= verbatim_from or expected.matcher.names(verbatim, item)
                    else "unknown"
                    if unidentified
                    else "summary"
                    if summaries and expected.matcher.names(summaries[-1], item)
                    else "gone",
                }
                for item in expected.items
            ]


def _returns(result: str):
    """A scenario tool called live: whatever the arguments, it returns its scripted result."""

    def run(**arguments: Any) -> str:
        return result

    return run
