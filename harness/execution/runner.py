"""Running one case: the scenario played through a fresh agent (`playing`), then every fact probed
from its own copy of the history (`played.probe_request`, `answers.ask`) and its answer scored
(`answers.Scorer`), and every fact with an `action` probed for the step the agent takes
(`action_probes`). An executor composes the steps (`executors`: one case at a time, several at
once, or in batch waves, which send a case's probes together: `gather`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ..inputs.probes import probes
from ..inputs.scenario import CODING_TOOLS
from ..models.client import ModelClient, Usage
from ..records.schema import ActionProbeRecord, ActionRecord, CompactionRecord, ProbeRecord, RetentionRecord
from .action_probes import DecisionPoint, take_step, unanswered
from .answers import Scorer, ask
from .cases import Case, probed_facts
from .evals import Eval
from .played import PlayedCase, ProbeRequest
from .playing import CasePlayer

Answer = tuple[str | None, str | None, Usage]  # the answer, or the error that stopped it; its cost
CaseRecords = tuple[
    list[ProbeRecord], list[CompactionRecord], list[RetentionRecord], list[ActionRecord], list[ActionProbeRecord]
]
Gather = Callable[[list[Callable[[], Any]]], list[Any]]  # runs a case's probe requests, returning their results


def one_by_one(jobs: list[Callable[[], Any]]) -> list[Any]:
    return [job() for job in jobs]


class CaseRunner:
    """The steps of a case, for an executor: `play`, `probe_requests`, `score`; `run` composes them.
    `gather` sends a case's probe requests (default: one at a time, now)."""

    def __init__(self, ev: Eval, client: ModelClient, judge: ModelClient | None = None, gather: Gather = one_by_one):
        self.ev, self.client, self.gather = ev, client, gather
        self.facts = probed_facts(ev)
        self.player = CasePlayer(ev, client, self.facts, {s.id: probes(s) for s in ev.scenarios})
        self.scorer = Scorer(ev, judge)
        self.play: Callable[[Case], PlayedCase] = self.player.play
        self.score: Callable[..., ProbeRecord] = self.scorer.score  # (played, fact, answer, error, usage, answering)

    def probe_requests(self, played: PlayedCase) -> list[ProbeRequest]:
        """One request per probed fact, each from its own copy of the case's history: as it stood
        when the fact is asked (`probe_at`), else at the end."""
        assert played.agent is not None, "a failed case has no history to probe"
        return [
            played.early.get(fact.fact_id) or self.player.probe_request(played.agent, fact, played)
            for fact in self.facts[played.case.scenario]
        ]

    def decision_points(self, played: PlayedCase) -> list[DecisionPoint]:
        """One per fact with an `action`, from the history its probe is asked from."""
        assert played.agent is not None, "a failed case has no history to probe"
        tools = played.agent.tools.schemas() or CODING_TOOLS
        points = []
        for fact in self.facts[played.case.scenario]:
            if fact.action is None:
                continue
            history, compactions, _ = played.when_asked(fact)
            points.append(
                DecisionPoint(
                    fact=fact,
                    probe=fact.action,
                    history=history,
                    compactions=compactions,
                    system=played.agent.system,
                    tools=tools,
                    max_tokens=self.ev.spec.probe.max_tokens,
                )
            )
        return points

    def run(self, case: Case) -> CaseRecords:
        """The case's probe, compaction, retention, next-action and action-probe records."""
        played = self.play(case)
        if not self.ev.spec.probes:
            return [], played.compactions, played.retention, played.actions, []
        facts = self.facts[case.scenario]
        if played.error:
            records = [self.score(played, fact, error=played.error) for fact in facts]
            failed = [unanswered(fact, played.row, error=played.error) for fact in facts if fact.action]
            return records, played.compactions, played.retention, played.actions, failed
        requests, points = self.probe_requests(played), self.decision_points(played)
        results = self.gather(
            [partial(ask, request) for request in requests]
            + [partial(take_step, self.client, point, played.row) for point in points]
        )
        records = [
            self.score(played, request.fact, *answer, answering=request.answering)
            for request, answer in zip(requests, results)
        ]
        return records, played.compactions, played.retention, played.actions, results[len(requests) :]
