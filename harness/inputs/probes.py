"""A scenario's facts as its probes see them: each fact's value at the end of the conversation, the
values it had before, and what an answer must state (`Target`), ready to score."""

from __future__ import annotations

from dataclasses import dataclass

from ..scoring.matchers import Expectation, Target
from ..scoring.polarity import Reading, RuleKind, read_rule
from .scenario import ActionProbe, Fact, Scenario, Value


@dataclass(frozen=True)
class Probe:
    """One fact as it stands at the end of the conversation: what its probe should find."""

    fact_id: str
    kind: str
    question: str
    planted_turn: int
    changed_turn: int  # last turn that planted or superseded it
    literal: bool  # the answer is a span of the conversation, not a paraphrase
    target: Target
    subject: str | None = None
    values: tuple[tuple[int, Expectation], ...] = ()  # (turn, value) in order; the last is the target's
    constraint: bool = False  # a negative constraint: restating the prohibition is recall
    probe_at: int | None = None  # asked before this turn is played; None: after the conversation
    item_turns: tuple[int, ...] = ()  # a set that grows: each item's planting turn (values: the items so far)
    said: tuple[tuple[int, str], ...] = ()  # (turn, text) of each turn that set a value: the rule's own words
    action: ActionProbe | None = None  # also probe what the agent does (`execution.action_probes`)

    @property
    def rule(self) -> RuleKind | None:
        """A rule is read with its polarity in a summary (`scoring.polarity`): a user's constraint, a decision."""
        return "constraint" if self.constraint else "decision" if self.kind == "decision" else None

    def reading(self, text: str, value_turn: int, expected: Expectation) -> Reading | None:
        """What a summary keeps of this fact's rule, set at `value_turn` (None: the fact is no rule)."""
        if self.rule is None:
            return None
        return read_rule(text, expected, self.rule, dict(self.said).get(value_turn, ""))

    def kept_in(
        self, text: str, mentioned: bool, value_turn: int, expected: Expectation
    ) -> tuple[bool, Reading | None]:
        """Whether a summary that `mentioned` the value keeps the fact, and a rule's reading: a rule is
        kept only as a rule, not softened nor reversed; one not mentioned is dropped."""
        if not mentioned:
            return False, Reading.DROPPED if self.rule else None
        reading = self.reading(text, value_turn, expected)
        return reading in (None, Reading.KEPT), reading

    def value_before(self, turn: int) -> tuple[int, Expectation] | None:
        """The value the fact had before `turn` (and the turn that set it), if it was planted by then;
        for a set that grows, the items planted before `turn`."""
        known = [(t, v) for t, v in self.values if t < turn]
        return known[-1] if known else None

    def folded_at(self, turn: int, verbatim_from: int) -> tuple[int, Expectation] | None:
        """What of the fact a compaction before `turn` folded, whose history is verbatim from
        `verbatim_from`: its value then, unless that is still verbatim; of a set that grows, the items
        planted before `verbatim_from` (the later ones are still verbatim). None: nothing folded."""
        if self.item_turns:
            return self.value_before(min(turn, verbatim_from))
        current = self.value_before(turn)
        return None if current is None or current[0] >= verbatim_from else current


def probes(scenario: Scenario) -> list[Probe]:
    """The facts to probe, each with its final value and the values it had before."""
    facts: dict[str, tuple[int, Fact]] = {}
    history: dict[str, list[tuple[int, Value]]] = {}
    for t, turn in enumerate(scenario.turns):
        for fact in turn.facts:
            facts[fact.id] = (t, fact)
            history[fact.id] = [(t, fact)]
        for change in turn.supersedes:
            history[change.fact].append((t, change))
    result = []
    for fact_id, (planted, fact) in facts.items():
        values = history[fact_id]
        changed, current = values[-1]
        matcher = fact.matcher()
        constraint = fact.is_constraint(scenario.turns[planted].text())
        expected = fact.target_expectation(constraint) if current is fact else current.expectation(matcher, constraint)
        target = Target(
            expected,
            tuple(v.expectation(matcher) for _, v in values[:-1]),
            tuple(fact.distractors),
            tuple(Expectation(c, matcher=matcher) for c in fact.confabulations),
            matcher,
        )
        history_values = tuple((t, v.expectation(matcher)) for t, v in values[:-1]) + (
            ((changed, expected),) if expected else ()
        )
        if fact.item_turns:  # a set that grows: its value at each planting turn is the items so far
            history_values = tuple(
                (
                    turn,
                    fact.expectation(
                        matcher, constraint, [i for i, at in zip(fact.items, fact.item_turns) if at <= turn]
                    ),
                )
                for turn in sorted(set(fact.item_turns))
            )
            changed = max(fact.item_turns)
        result.append(
            Probe(
                fact_id,
                fact.kind,
                fact.probe,
                planted,
                changed,
                fact.literal,
                target,
                fact.subject,
                history_values,
                constraint,
                fact.probe_at,
                tuple(fact.item_turns),
                tuple((t, scenario.turns[t].text()) for t, _ in values),
                fact.action,
            )
        )
    return result
