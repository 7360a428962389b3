"""Step 1 of a case (`runner`): the scenario played through a fresh agent, compacting as the agent
would; at each compaction, what it retained of every probed fact, the behaviour checks and the
next step (`next_step`); facts with `probe_at` get their probe's request where they are asked.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..compaction.context import CompactionSettings, ToolClearing
from ..inputs.evalfile import Prompt
from ..inputs.probes import Probe
from ..inputs.scenario import Scenario, Turn
from ..messages import measure, render_message
from ..models.client import ModelClient
from ..records.schema import CaseRow, CompactionEvent, CompactionRecord, RetentionRecord
from ..scoring.affirmation import prohibits
from ..scoring.matchers import SetMatch, states_about
from . import behaviour, recovery
from .agent import AGENT_SYSTEM, Agent, Tool, ToolRegistry, with_cache_breakpoint
from .cases import Case, first_unedited_turn, first_verbatim_turn
from .evals import Eval
from .failures import RECORDED_ERRORS, describe_error
from .next_step import Cut, next_step
from .played import PlayedCase, ProbeRequest


@dataclass
class Resampled:
    """A client whose requests are sample `index` of a repeated case: the local server gets its own
    seed and the cache its own entries, so a repeat at temperature > 0 is a new sample."""

    client: ModelClient
    index: int

    def create(self, **request: Any) -> dict[str, Any]:
        return self.client.create(sample=self.index, **request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


class CasePlayer:
    """Plays cases of one eval; what every case of a scenario shares is worked out once."""

    def __init__(
        self, ev: Eval, client: ModelClient, facts: dict[str, list[Probe]], every_fact: dict[str, list[Probe]]
    ):
        self.ev, self.client, self.facts = ev, client, facts
        self.prompt_caching = bool(getattr(client, "prompt_caching", False))
        self.scenarios = {s.id: s for s in ev.scenarios}
        self.prompts: dict[str | None, Prompt] = {p.id: p for p in ev.prompts}  # a case's prompt id: None for none
        self.every_fact = every_fact  # probed or not: behaviour checks read them all
        # Every subject of a scenario, so retention can tell a value stated of the wrong one.
        self.subjects = {s.id: tuple(p.subject for p in every_fact[s.id] if p.subject) for s in ev.scenarios}
        self._situations: dict[tuple[str, int], behaviour.Situation] = {}
        self._scripted_sizes: dict[str, int] = {}
        spec, clearing = ev.spec, ev.spec.tool_results
        inputs = clearing.clear_tool_inputs
        # The eval's settings, the same for every case; a case adds its prompt (`_agent`).
        self.settings = CompactionSettings(
            summary_prompt="",
            keep_recent=spec.keep_recent,
            summary_max_tokens=spec.summary_max_tokens,
            unit=spec.unit,
            max_transcript_chars=spec.summary_transcript_chars,
            layout=ev.summary_layout,
            cut=spec.cut,
            tool_results=ToolClearing(
                keep=clearing.keep,
                exclude_tools=tuple(clearing.exclude_tools),
                clear_tool_inputs=tuple(inputs) if isinstance(inputs, list) else inputs,
                clear_at_least=clearing.clear_at_least,
            ),
        )

    def scripted_size(self, scenario: Scenario) -> int:
        """The scenario's uncompacted history, live replies excluded; measured once per run
        (in tokens that is a model call), not once per case."""
        if scenario.id not in self._scripted_sizes:
            self._scripted_sizes[scenario.id] = measure(scenario.scripted_history(), self.client, self.ev.spec.unit)
        return self._scripted_sizes[scenario.id]

    def _agent(self, case: Case, scenario: Scenario, limit: int | None) -> Agent:
        prompt = self.prompts.get(case.prompt)
        settings = replace(self.settings, summary_prompt=prompt.text, prompt_id=prompt.id) if prompt else self.settings
        settings = replace(settings, options=self.ev.spec.strategy_options.get(case.strategy, {}))
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
            max_tokens=self.ev.spec.reply_max_tokens,
            system=self.ev.spec.agent_system or AGENT_SYSTEM,
            output_stream=io.StringIO(),
        )

    def probe_request(self, agent: Agent, fact: Probe, played: PlayedCase) -> ProbeRequest:
        """A fork of the agent as it stands, asked the fact's question (compaction off while it
        answers: a probe measures the history as it is)."""
        fork = agent.fork()
        fork.strategy = None
        fork.max_tokens = self.ev.spec.probe.max_tokens
        if self.prompt_caching:
            fork.messages = with_cache_breakpoint(fork.messages)
        if self.ev.strategy(played.case.strategy).recovery:
            recovery.offer(fork, played.full, self.ev.spec.recovery)
        fork.messages.append({"role": "user", "content": fact.question})
        return ProbeRequest(
            fact=fact,
            agent=fork,
            compactions=len(played.compactions),
            turns=len(played.starts),
            question_at=len(fork.messages) - 1,
        )

    def play(self, case: Case) -> PlayedCase:
        """Play the scenario's turns through a fresh agent, compacting as the agent would; a
        failure is recorded on the case (`error`), and every fact's retention is then an error."""
        scenario = self.scenarios[case.scenario]
        prompt = self.prompts.get(case.prompt)
        row = CaseRow(
            case=case.id,
            scenario=case.scenario,
            strategy=case.strategy,
            budget=str(case.budget) if case.budget else None,
            prompt=case.prompt,
            prompt_hash=prompt.hash if prompt else None,
            repeat=case.repeat,
            model=self.client.identity,
            unit=self.ev.spec.unit,
        )
        played = PlayedCase(case=case, row=row, agent=None, limit=None, compactions=[], retention=[])
        asked_before: dict[int | None, list[Probe]] = {f.probe_at: [] for f in self.facts[case.scenario]}
        for fact in self.facts[case.scenario]:
            asked_before[fact.probe_at].append(fact)
        try:
            played.limit = case.budget.limit(self.scripted_size(scenario)) if case.budget else None
            agent = self._agent(case, scenario, played.limit)
            if self.ev.strategy(case.strategy).uses_history:
                for index, turn in enumerate(scenario.turns):
                    agent.settings = replace(agent.settings, recorded_summary=turn.recorded_summary)
                    # Compaction runs between user turns (the seed's rule), before every step of a
                    # tool loop with `cut: steps`, and wherever an imported log's agent compacted.
                    if not turn.continues or agent.settings.cut == "steps" or turn.recorded_summary is not None:
                        self._compact(agent, index, played, scenario)
                    for fact in asked_before.get(index, []):  # what was the agent about to do?
                        played.early[fact.fact_id] = self.probe_request(agent, fact, played)
                    _take_turn(agent, turn, index, played)
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
            left: str | None
            if event.edited:  # old tool results emptied in place: what is left of the edited turns is the history
                verbatim_from = first_unedited_turn(agent.messages, played.turn_messages[:turn])
                left = "\n".join(map(render_message, agent.messages))
            else:
                verbatim_from = first_verbatim_turn(agent.messages, played.starts[:turn])
                left = event.summary
                if event.pinned is not None:  # +pin: the summary (if any) and the rules it put back
                    left = "\n\n".join(text for text in (event.summary, event.pinned) if text)
            played.compactions.append(
                CompactionRecord(**asdict(played.row), before_turn=turn, first_verbatim_turn=verbatim_from, event=event)
            )
            if event.folded_messages:
                retained = self._retention(event, left, len(played.compactions) - 1, turn, verbatim_from, played.row)
                played.retention += retained
                if self.ev.spec.next_action.enabled and turn < len(scenario.turns):
                    cut = Cut(
                        agent=agent,
                        full=played.full,
                        scenario=scenario,
                        turn=turn,
                        compaction=len(played.compactions) - 1,
                        retained=retained,
                        situation=self._situation(scenario, turn),
                        row=played.row,
                        search=self._search(agent, played),
                    )
                    played.actions.append(next_step(self.client, self.ev.spec.next_action, cut))

    def _search(self, agent: Agent, played: PlayedCase) -> Tool | None:
        """The recovery arm's search over what the agent's history folded, when the strategy has one."""
        if not self.ev.strategy(played.case.strategy).recovery:
            return None
        return recovery.search_tool(
            recovery.Archive(recovery.folded(played.full, agent.messages)), self.ev.spec.recovery
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
            credit, missing, stale, reading = None, None, None, None
            retained: bool | None
            if left is not None:
                mentioned = states_about(left, expected, fact.subject, self.subjects[row.scenario])
                retained, reading = fact.kept_in(left, mentioned, value_turn, expected)
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
                reading = fact.kept_in("", False, value_turn, expected)[1] if retained is False else None
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
                    reading=reading,
                )
            )
        return records


def _returns(result: str) -> Callable[..., str]:
    """A scenario tool called live: whatever the arguments, it returns its scripted result."""

    def run(**arguments: Any) -> str:
        return result

    return run


def _take_turn(agent: Agent, turn: Turn, index: int, played: PlayedCase) -> None:
    """One scripted turn into the agent's history: a user line the agent answers live, or a turn
    with its recorded reply; `played` keeps where each turn starts and the full history."""
    if turn.assistant is not None:
        added = turn.messages(index)
        played.starts.append(added[0])
        played.turn_messages.append(added)
        agent.messages += added
        played.full += added
        return
    agent.messages.append({"role": "user", "content": turn.user})
    played.starts.append(agent.messages[-1])
    played.turn_messages.append([agent.messages[-1]])
    before = len(agent.messages)
    reply = agent.respond()
    # The ceiling's history gets the live reply as played (its last text, if a compaction inside
    # the loop moved the messages).
    live = (
        agent.messages[before:]
        if agent.messages[before - 1] is played.starts[-1]
        else [{"role": "assistant", "content": [{"type": "text", "text": reply or "(no reply)"}]}]
    )
    played.full += [played.starts[-1], *live]
