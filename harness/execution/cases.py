"""The cases of an eval: every scenario x strategy x budget x prompt x repeat the strategy depends
on, each budget resolved against its scenario, and the facts every case probes."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..budget import Budget
from ..inputs.probes import Probe, probes
from ..inputs.scenario import Scenario
from ..messages import Message
from .evals import Eval


@dataclass(frozen=True, kw_only=True)
class Case:
    scenario: str
    strategy: str
    budget: Budget | None  # None: the strategy ignores budgets
    prompt: str | None  # prompt id
    repeat: int

    @property
    def id(self) -> str:
        return "/".join(
            str(part) for part in (self.scenario, self.strategy, self.budget or "-", self.prompt or "-", self.repeat)
        )


def plan_cases(ev: Eval) -> list[Case]:
    """Each strategy runs only over the dimensions it depends on (no-history ignores budgets), and
    on the scenarios where it can compact (the log's own cut points need a log that has some)."""
    cases = []
    for scenario in ev.scenarios:
        has_recorded = any(turn.recorded_summary for turn in scenario.turns)
        for repeat in range(ev.repeats):
            for strategy in map(ev.strategy, ev.spec.strategies):
                if not ev.spec.probes and strategy.compact is None:
                    continue  # without probes only compactions are measured, and these never compact
                at_recorded_points = strategy.needs_recorded or (ev.spec.cut == "recorded" and strategy.compact)
                if at_recorded_points and not has_recorded:
                    continue
                for budget in ev.spec.budgets if strategy.uses_budget else [None]:
                    for prompt in ev.prompts if strategy.uses_prompt else [None]:
                        cases.append(
                            Case(
                                scenario=scenario.id,
                                strategy=strategy.name,
                                budget=budget,
                                prompt=prompt.id if prompt else None,
                                repeat=repeat,
                            )
                        )
    return cases[: ev.spec.limit]  # `limit`: the first N cases, to try an eval before paying for all of it


def sampled_probes(scenario: Scenario, sample: int | None, seed: int) -> list[Probe]:
    """All of a scenario's probes, or a seeded random sample of them, in planting order."""
    everything = probes(scenario)
    if sample is None or sample >= len(everything):
        return everything
    chosen = set(random.Random(f"{seed}:{scenario.id}").sample(range(len(everything)), sample))
    return [p for i, p in enumerate(everything) if i in chosen]


def probed_facts(ev: Eval) -> dict[str, list[Probe]]:
    """Per scenario id, the facts every case of this eval probes."""
    return {s.id: sampled_probes(s, ev.spec.probe.sample, ev.spec.probe.seed) for s in ev.scenarios}


def first_verbatim_turn(messages: list[Message], starts: list[Message]) -> int:
    """Turns before this one are no longer in the history verbatim (folded or dropped): counted from
    the turn openings (a user line, or a tool step) still in the history, so a summary in any wording
    is not mistaken for a turn. Compaction folds a prefix, so the kept ones are the last turns (and
    two turns with the same user line are counted apart)."""
    return len(starts) - sum(1 for message in messages if message in starts)


def first_unedited_turn(messages: list[Message], turns: list[list[Message]]) -> int:
    """After an in-place edit (old tool results cleared), turns before this one had some message
    changed: the first turn after the last one with a message no longer in the history as played."""
    changed = [t for t, played in enumerate(turns) if any(message not in messages for message in played)]
    return changed[-1] + 1 if changed else 0
