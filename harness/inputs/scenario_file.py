"""Reading a scenario file: validated against the format (`scenario`), then the rules pydantic
cannot express alone, which need the scoring layer: each planted value occurs where it is planted,
a probe does not contain its answer, values are more than common words, supersessions and items
come in order. Each error is located in the file (its line and field)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import InputError, Loc
from ..scoring.matchers import ScoringError, item_forms, mentions, states
from ..scoring.normalize import distinctive, numbers_in
from ..scoring.verdict import abstains
from ..tool_vocabulary import SHELL_TOOLS
from .files import LocatedYaml, load_yaml
from .scenario import ActionProbe, Fact, Scenario, StepRules


def _common_words(fields: Mapping[str, Sequence[str | None]]) -> Problem | None:
    """Values a phrase-matched answer is scored against must be more than common words ("the",
    "yes"): any answer would state them, so the fact would be recalled or confused by anything."""
    for field, values in fields.items():
        for i, value in enumerate(values):
            if value is not None and not distinctive(value):
                return (
                    (field,) if field == "answer" else (field, i)
                ), f"{value!r} is only common words: any answer would state it"
    return None


def _check(doc: LocatedYaml, scenario: Scenario) -> None:
    """Rules pydantic cannot express alone; each error is located in the file."""
    tool_names = [t.name for t in scenario.tools]
    for i, name in enumerate(tool_names):
        if tool_names.index(name) != i:
            raise doc.error(("tools", i, "name"), f"duplicate tool name {name!r}")
    planted: dict[str, int] = {}
    exact: set[str] = set()  # facts scored by phrase, whose later values must be distinctive too
    for t, turn in enumerate(scenario.turns):
        _check_sequence(doc, scenario, t)
        for c, call in enumerate(turn.assistant.tool_calls if turn.assistant else []):
            if call.tool not in tool_names:
                raise doc.error(
                    ("turns", t, "assistant", "tool_calls", c, "tool"),
                    f"unknown tool {call.tool!r}; declare it under `tools`",
                )
        for f, fact in enumerate(turn.facts):
            if fact.id in planted:
                raise doc.error(("turns", t, "facts", f, "id"), f"duplicate fact id {fact.id!r}")
            planted[fact.id] = t
            if fact.match == "exact":
                exact.add(fact.id)
            _check_planted(doc, scenario, t, f)
            if fact.action is not None:
                _check_action(doc, ("turns", t, "facts", f, "action"), fact.action, scenario.action_tools())
        _check_supersedes(doc, scenario, t, planted, exact)


def _check_planted(doc: LocatedYaml, scenario: Scenario, t: int, f: int) -> None:
    """Fact `f` of turn `t` is stated where it is planted (a set's items by then, what the agent did
    next in the turn it is asked before) and probed at a later turn."""
    turn, loc = scenario.turns[t], ("turns", t, "facts", f)
    fact = turn.facts[f]
    if fact.probe_at is not None and not t < fact.probe_at < len(scenario.turns):
        raise doc.error(
            loc + ("probe_at",),
            f"turn {fact.probe_at} is not a later turn of this scenario (turns {t + 1} to {len(scenario.turns) - 1})",
        )
    if fact.match == "set":
        text = "\n".join(u.text() for u in scenario.turns[: t + 1])
    elif fact.probe_at is not None:
        text = scenario.turns[fact.probe_at].text()
    else:
        text = turn.text()
    if fact.item_turns:
        _check_item_turns(doc, loc, fact, scenario, t)
        text = "\n".join(u.text() for u in scenario.turns[: max(fact.item_turns) + 1])
    where = "the user line" if turn.assistant is None else "this turn's text"
    try:
        _check_fact(doc, loc, fact, text, where if fact.probe_at is None else f"turn {fact.probe_at}")
    except ScoringError as exc:
        raise doc.error(loc + ("regex",), f"{exc} on this turn (catastrophic backtracking)") from None


def _check_supersedes(doc: LocatedYaml, scenario: Scenario, t: int, planted: dict[str, int], exact: set[str]) -> None:
    """Turn `t`'s changes each name a fact planted earlier and state the new value where they change it."""
    turn = scenario.turns[t]
    where = "the user line" if turn.assistant is None else "this turn's text"
    for s, change in enumerate(turn.supersedes):
        loc = ("turns", t, "supersedes", s)
        if planted.get(change.fact, t) >= t:
            raise doc.error(loc + ("fact",), f"no fact {change.fact!r} is planted in an earlier turn")
        if change.fact in exact and (problem := _common_words({"answer": [change.answer], "aliases": change.aliases})):
            raise doc.error(loc + problem[0], problem[1])
        if change.items:  # a set's or a plan's new members, each stated where they change
            missing = [i for i, item in enumerate(change.items) if not mentions(turn.text(), item)]
            if missing:
                raise doc.error(loc + ("items", missing[0]), f"{change.items[missing[0]]!r} does not occur in {where}")
        elif not states(turn.text(), change.expectation(), within=True):
            raise doc.error(loc + ("answer",), f"{change.answer!r} does not occur in {where}")


def _check_action(doc: LocatedYaml, loc: Loc, action: ActionProbe, offered: list[str]) -> None:
    """A rule that can never match is refused: a tool not offered at the decision point, or a
    program when no shell tool is."""
    shells = [name for name in offered if name.lower() in SHELL_TOOLS]
    for side in ("must_not", "must"):
        rules: StepRules = getattr(action, side)
        for i, name in enumerate(rules.tools):
            if name.lower() not in {o.lower() for o in offered}:
                problem = f"no tool {name!r} is offered at the decision point ({', '.join(offered)})"
                raise doc.error(loc + (side, "tools", i), problem)
        if rules.programs and not shells:
            raise doc.error(
                loc + (side, "programs"), f"no shell tool is offered at the decision point ({', '.join(offered)})"
            )


def _check_item_turns(doc: LocatedYaml, loc: Loc, fact: Fact, scenario: Scenario, t: int) -> None:
    """A growing set's items are each planted in a turn from the fact's own on, and stated by then."""
    for i, (item, turn) in enumerate(zip(fact.items, fact.item_turns)):
        if not t <= turn < len(scenario.turns):
            raise doc.error(
                loc + ("item_turns", i),
                f"turn {turn} is not the fact's turn or a later one (turns {t} to {len(scenario.turns) - 1})",
            )
        if not mentions("\n".join(u.text() for u in scenario.turns[: turn + 1]), item):
            raise doc.error(loc + ("items", i), f"{item!r} does not occur in the turns up to turn {turn}")


def _check_sequence(doc: LocatedYaml, scenario: Scenario, t: int) -> None:
    """A continuation (no user line) only goes on a tool loop: it follows a reply that called
    tools and said nothing after them, and it is scripted; such a reply is followed by one."""
    turn, before = scenario.turns[t], scenario.turns[t - 1] if t else None
    open_loop = bool(before and before.assistant and before.assistant.tool_calls and before.assistant.final is None)
    if turn.continues and not open_loop:
        raise doc.error(
            ("turns", t, "user"),
            "required field is missing (a turn without a user line continues a "
            "tool loop: the previous reply must end with tool_calls and no final)",
        )
    if turn.continues and turn.assistant is None:
        raise doc.error(("turns", t, "assistant"), "a continuation turn needs its scripted `assistant` step")
    if open_loop and not turn.continues:
        raise doc.error(
            ("turns", t - 1, "assistant"),
            "a reply with tool_calls needs `final`, the text after the "
            "tool results, unless the next turn continues the tool loop "
            "(a turn without `user`)",
        )
    if t == len(scenario.turns) - 1 and turn.assistant and turn.assistant.tool_calls and turn.assistant.final is None:
        raise doc.error(("turns", t, "assistant"), "the last turn's reply needs `final` after its tool_calls")
    if t == 0 and turn.recorded_summary is not None:
        raise doc.error(("turns", 0, "recorded_summary"), "no compaction can come before the first turn")


def _check_fact(doc: LocatedYaml, loc: Loc, fact: Fact, text: str, where: str) -> None:
    if problem := fact_problem(fact, text, where):
        raise doc.error(loc + problem[0], problem[1])


Problem = tuple[Loc, str]  # the field of a fact that is wrong, and why


def fact_problem(fact: Fact, text: str, where: str) -> Problem | None:
    """Why a fact is not scoreable as planted in `text` (`where` names it), or None: it must be
    planted where it says, not leaked by its probe, and not stated (or confused) by answers that say
    nothing about it. A scenario file's facts and the facts derived from a log are checked by it."""
    return _given_away(fact) or _unscoreable(fact) or _not_planted(fact, text, where)


def _given_away(fact: Fact) -> Problem | None:
    leaked = [v for v in (fact.answer, *fact.aliases) if v and mentions(fact.probe, v, fact.tolerance)]
    if leaked:
        return ("probe",), f"the probe contains its own answer {leaked[0]!r}"
    # A set's or a plan's item in the probe is part of the answer given away ("... API keys and passwords?").
    given = [item for item in fact.items if any(mentions(fact.probe, form) for form in item_forms(item))]
    if given:
        return ("probe",), f"the probe contains {given[0]!r}, an item of its own answer"
    return None


def _unscoreable(fact: Fact) -> Problem | None:
    """Values any answer would state, an abstention scored as a confabulation, a distractor that
    states the answer, a tolerance that accepts 0."""
    fields: dict[str, Sequence[str | None]] = {"answer": [fact.answer], "aliases": fact.aliases}
    if fact.match == "exact":  # free-form (f1) answers are scored by overlap, not by phrase
        fields |= {"distractors": fact.distractors, "confabulations": fact.confabulations}
    if fact.match in ("exact", "f1") and (problem := _common_words(fields)):
        return problem  # (token F1 leaves articles out: "the" would be an answer no reply can state)
    for c, confabulation in enumerate(fact.confabulations):
        if abstains(confabulation):
            return (
                ("confabulations", c),
                f"{confabulation!r} is an abstention: the right answer (abstaining) would be scored confabulated",
            )
    expected = fact.target_expectation()
    for d, distractor in enumerate(fact.distractors):
        if expected and states(distractor, expected, within=True):
            return (
                ("distractors", d),
                f"the distractor {distractor!r} states the answer itself: no answer could be recalled",
            )
    numbers = numbers_in(fact.answer or "")
    if fact.tolerance and len(numbers) == 1 and 0 < abs(numbers[0]) <= fact.tolerance:
        return (
            ("tolerance",),
            f"a tolerance of {fact.tolerance:g} accepts 0 and every number near "
            f"it: keep it under the answer's {numbers[0]:g}",
        )
    return None


def _not_planted(fact: Fact, text: str, where: str) -> Problem | None:
    """A literal value (each item of a set or a plan) and the subject must occur where planted."""
    expected = fact.target_expectation()
    if expected and fact.literal and expected.items:
        for i, item in enumerate(expected.items):
            if not mentions(text, item):
                return ("items", i), f"{item!r} does not occur in {where}"
    elif expected and fact.literal and not states(text, expected, within=True):
        return ("answer",), f"{fact.answer!r} does not occur in {where} (set `literal: false` if it is a paraphrase)"
    if fact.subject and not mentions(text, fact.subject):
        return ("subject",), f"the subject {fact.subject!r} does not occur in {where}"
    return None


def load_scenario(path: str | Path) -> Scenario:
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise InputError(path, "a scenario is a mapping with id, description and turns", 1)
    scenario: Scenario = doc.validate(Scenario)
    _check(doc, scenario)
    return scenario
