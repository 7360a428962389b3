"""Scenario files: scripted conversations that plant facts and say how to probe them.

The pydantic models are the format's single definition: `harness schema` prints their
JSON Schema, validation uses them, and docs/reference/scenario-format.md is generated from them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import regex
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    model_validator,
)

from ..errors import InputError, Loc, did_you_mean
from ..messages import strings_in
from ..plugins import PluginError, Registry
from ..scoring.affirmation import prohibits
from ..scoring.matchers import (
    BUILT_IN_MATCHERS,
    REGEX_SECONDS,
    ExactMatch,
    Expectation,
    Matcher,
    ScoringError,
    item_forms,
    mentions,
    states,
)
from ..scoring.normalize import distinctive, normalize, numbers_in
from ..scoring.verdict import abstains
from .files import LocatedYaml, load_yaml


def _to_text(value: Any) -> Any:
    # YAML reads `2350` as an int and `2025-03-14` as a date; answers are compared as text.
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float, dt.date)):
        return str(value)
    return value


def _visible(value: str) -> str:
    if not normalize(value):
        raise ValueError("is blank: only spaces, punctuation or invisible characters")
    return value


def _regex(pattern: str | None) -> str | None:
    if pattern is None:
        return None
    try:
        compiled = regex.compile(pattern, regex.IGNORECASE)
    except regex.error as exc:
        raise ValueError(f"not a valid regex: {exc}") from None
    for harmless in ("", "I don't know.", "No."):
        try:
            matched = compiled.search(harmless, timeout=REGEX_SECONDS)
        except TimeoutError:
            raise ValueError(
                f"the regex runs longer than {REGEX_SECONDS} s on {harmless!r} (catastrophic backtracking)"
            ) from None
        if matched:
            raise ValueError(f"the regex matches {harmless!r}: any answer would count")
    return pattern


Text = Annotated[str, BeforeValidator(_to_text), Field(min_length=1), AfterValidator(_visible)]
Slug = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=80)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")  # unknown keys are typos, not silently ignored


class Value(_Strict):
    """One value of a fact and what else counts as stating it."""

    answer: Text | None = Field(default=None, description="The expected answer, as it should appear in a reply.")
    aliases: list[Text] = Field(default=[], description="Other phrasings that also count.")
    regex: Annotated[str | None, AfterValidator(_regex)] = Field(
        default=None, description="A case-insensitive regex that also counts (the `regex` module's syntax)."
    )
    tolerance: StrictFloat | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="Absolute tolerance for numeric answers."
    )
    items: list[Text] = Field(
        default=[],
        description="With match: set, the members of the set (files modified, "
        "commands run); an answer gets credit for the share it names.",
    )
    done: list[Text] = Field(
        default=[], description="With match: plan, the items of `items` that are finished; the others are still to do."
    )
    item_turns: list[StrictInt] = Field(
        default=[],
        description="With match: set, the turn that plants each item, in the order of `items` (the "
        "first change of a file, the first run of a command): a set that grows. Retention at "
        "a compaction scores the items folded so far. Omitted: every item at the fact's turn.",
    )

    def expectation(
        self, matcher: Matcher = ExactMatch(), constraint: bool = False, items: list[str] | None = None
    ) -> Expectation:
        """What states this value; `items`: a set's members planted so far (default: all)."""
        items = self.items if items is None else items
        answer = ", ".join(items) if items is not self.items else self.answer
        return Expectation(
            answer or "",
            tuple(self.aliases),
            self.regex,
            self.tolerance,
            matcher,
            constraint,
            tuple(items),
            tuple(self.done),
        )

    @model_validator(mode="after")
    def _done_items(self) -> Value:
        if not set(self.done) <= set(self.items):
            raise ValueError(f"`done` names items that are not in `items`: {sorted(set(self.done) - set(self.items))}")
        return self

    def reads(self, plan: bool) -> str:
        """How a set or a plan reads in reports, when it has no `answer` of its own."""
        if plan:
            return "; ".join(f"{item} ({'done' if item in self.done else 'to do'})" for item in self.items)
        return ", ".join(self.items)


# Ours, then other packages' (entry points in `compaction_harness.matchers`: a `(fact) -> Matcher`).
MATCHERS: Registry[Callable[[Any], Matcher]] = Registry("matchers", BUILT_IN_MATCHERS)


def _matcher_name(name: str) -> str:
    """A matcher of ours or an installed package's, loaded now so a broken one is blamed on this line."""
    try:
        MATCHERS[name]
    except KeyError:
        raise ValueError(
            f"no matcher {name!r}{did_you_mean(name, list(MATCHERS))}: use one of {', '.join(MATCHERS)}, "
            "or install a package that adds one"
        ) from None
    except PluginError as exc:
        raise ValueError(str(exc)) from None
    return name


class Fact(Value):
    """A fact planted in the turn that declares it, probed after the conversation."""

    id: Slug = Field(description="Unique within the scenario.")
    kind: Slug = Field(description="number, name, identifier, date, decision, preference, or your own.")
    subject: Text | None = Field(
        default=None,
        description="What the value belongs to ('crate Amber'): a summary retains the fact only "
        "when it states the value next to this subject, so swapped values do not count.",
    )
    probe: Text = Field(
        description="The question asked at the end; must not contain the answer, nor an item of a set or plan."
    )
    distractors: list[Text] = Field(
        default=[], description="Near-miss values (also in the conversation); stating one is not recall."
    )
    match: Annotated[str, AfterValidator(_matcher_name)] = Field(
        default="exact",
        description="exact: normalised phrase match; f1: token F1 for free-form answers; "
        "locomo: the LoCoMo benchmark's own scoring (needs `category`); set: the share "
        "of `items` named, with partial credit; plan: each of `items` given its status "
        "(finished: in `done`; else still to do), none the wrong one; or a matcher an installed "
        "package adds.",
    )
    f1_threshold: StrictFloat = Field(
        default=0.5, gt=0, le=1, description="With match: f1, locomo or set, the score that counts as recall."
    )
    category: StrictInt | None = Field(
        default=None, ge=1, le=5, description="With match: locomo, the LoCoMo QA category (1-5) whose scoring applies."
    )
    expect: Literal["answer", "abstain"] = Field(
        default="answer", description="abstain: the conversation cannot answer the probe; 'I don't know' is right."
    )
    confabulations: list[Text] = Field(
        default=[], description="With expect: abstain, tempting wrong answers, scored `confabulated`."
    )
    literal: bool = Field(
        default=True,
        description="false: the answer paraphrases the conversation, "
        "so validation does not look for it in the planting turn.",
    )
    probe_at: StrictInt | None = Field(
        default=None,
        ge=1,
        description="Ask the probe before this turn is played (after its compaction) instead of "
        "after the conversation: what the agent was about to do next.",
    )
    source: Text | None = Field(
        default=None,
        description="Where the fact came from, for a reader (an importer "
        "says which text of the log it was derived from).",
    )
    constraint: bool | None = Field(
        default=None,
        description="true: the value is the object of a prohibition ('we never deploy on Fridays'), so "
        "an answer restating the prohibition is recall; unset: detected from the planting "
        "turn (a 'never', 'don't', 'no' before the value, 'forbidden' after it).",
    )

    @model_validator(mode="after")
    def _answer_unless_abstaining(self) -> Fact:
        if (self.match in ("set", "plan")) != bool(self.items):
            raise ValueError("`items` go with `match: set` or `match: plan`, and each needs them")
        if self.done and self.match != "plan":
            raise ValueError("`done` goes with `match: plan`")
        if self.item_turns and len(self.item_turns) != len(self.items):
            raise ValueError(
                f"`item_turns` gives a turn for each of the {len(self.items)} items, in order "
                f"(it has {len(self.item_turns)})"
            )
        if self.match in ("set", "plan") and self.answer is None:
            self.answer = self.reads(self.match == "plan")
        if self.expect == "answer" and self.answer is None:
            raise ValueError("`answer` is required unless `expect: abstain`")
        if (self.match == "locomo") != (self.category is not None):
            raise ValueError("`category` goes with `match: locomo`, and only with it")
        return self

    def target_expectation(self, constraint: bool = False) -> Expectation | None:
        if self.expect == "abstain":
            return None
        return self.expectation(self.matcher(), constraint)

    def is_constraint(self, planting_text: str) -> bool:
        """Declared, or detected: the planting turn states the value as the object of a prohibition."""
        if self.constraint is not None:
            return self.constraint
        return self.match == "exact" and any(prohibits(planting_text, v) for v in (self.answer, *self.aliases) if v)

    def matcher(self) -> Matcher:
        return MATCHERS[self.match](self)


class Supersession(Value):
    """A later turn changes a fact: its probe then expects the new value."""

    fact: Slug = Field(description="Id of a fact planted in an earlier turn.")

    @model_validator(mode="after")
    def _has_answer(self) -> Supersession:
        if self.answer is None and self.items:  # a set's or a plan's new members
            self.answer = self.reads("done" in self.model_fields_set)
        if self.answer is None:
            raise ValueError("a supersession needs the new `answer` (or, of a set or a plan, its `items`)")
        return self


class ToolCall(_Strict):
    tool: Slug = Field(description="Name of a tool declared under `tools`.")
    input: dict[str, Any] = Field(default={}, description="Arguments of the call.")
    result: Text = Field(description="What the tool returned (facts can live here).")
    is_error: bool = False


class Reply(_Strict):
    """A scripted assistant reply: text, then optional tool calls and the text after them. Without
    `final`, the agent's tool loop goes on in the next turn, a continuation (no user line)."""

    text: Text | None = None
    tool_calls: list[ToolCall] = []
    final: Text | None = Field(
        default=None,
        description="The reply after the tool results; leave it out when the next turn continues the tool loop.",
    )

    @model_validator(mode="after")
    def _complete(self) -> Reply:
        if not self.tool_calls and self.final is not None:
            raise ValueError("`final` only follows tool_calls; put the reply in `text`")
        if self.text is None and not self.tool_calls:
            raise ValueError("a reply needs `text` or `tool_calls`")
        return self


def _reply_shorthand(value: Any) -> Any:
    return {"text": value} if isinstance(value, (str, int, float)) else value


class Turn(_Strict):
    user: Text | None = Field(
        default=None,
        description="What the user types; absent: a continuation, the next "
        "step of the agent's tool loop after the previous turn's.",
    )
    assistant: Annotated[Reply | None, BeforeValidator(_reply_shorthand, json_schema_input_type=str | Reply | None)] = (
        Field(
            default=None,
            description="Scripted reply (a string, or text/tool_calls/final); absent: the agent answers live.",
        )
    )
    recorded_summary: Text | None = Field(
        default=None,
        description="Imported logs: the summary the logged agent compacted its history to before this "
        "turn (the `recorded` strategy and `cut: recorded` compact here).",
    )
    facts: list[Fact] = []
    supersedes: list[Supersession] = []

    @property
    def continues(self) -> bool:
        """A continuation: the agent's next tool step, with no user line before it."""
        return self.user is None

    def text(self) -> str:
        """Everything this turn puts in the history before the model says anything live."""
        parts = [self.user or ""]
        if reply := self.assistant:
            parts.append(reply.text or "")
            for call in reply.tool_calls:
                parts += [*strings_in(call.input), call.result]
            parts.append(reply.final or "")
        return "\n".join(parts)

    def messages(self, index: int) -> list[dict[str, Any]]:
        """The Messages API messages this turn adds to the history, as turn `index` of its
        scenario; a live turn adds only its user line here (the agent adds its reply)."""
        messages: list[dict[str, Any]] = [] if self.continues else [{"role": "user", "content": self.user}]
        reply = self.assistant
        if reply is None:
            return messages
        ids = [f"toolu_{index:04d}_{i}" for i in range(len(reply.tool_calls))]  # stable, for the cache
        first: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        first += [
            {"type": "tool_use", "id": i, "name": c.tool, "input": c.input} for i, c in zip(ids, reply.tool_calls)
        ]
        messages.append({"role": "assistant", "content": first})
        if reply.tool_calls:
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": i,
                            "content": c.result,
                            **({"is_error": True} if c.is_error else {}),
                        }
                        for i, c in zip(ids, reply.tool_calls)
                    ],
                }
            )
            if reply.final is not None:
                messages.append({"role": "assistant", "content": [{"type": "text", "text": reply.final}]})
        return messages


class Tool(_Strict):
    name: Slug
    description: Text
    input_schema: dict[str, Any] = Field(default={"type": "object", "properties": {}})
    result: Text = Field(description="What the tool returns when the agent calls it live.")


class Checks(_Strict):
    """Forbidden throughout, for the behaviour checks at a cut (a constraint fact's path or program
    is forbidden from its turn on)."""

    forbidden_paths: list[Text] = Field(default=[], description="Files the agent must not change.")
    forbidden_tools: list[Text] = Field(default=[], description="Tools or shell programs the user ruled out.")


class Scenario(_Strict):
    id: Slug
    description: Text
    variant_of: Slug | None = Field(
        default=None,
        description="The scenario this one re-draws the values of "
        "(`harness generate --from`); same structure, new values.",
    )
    tools: list[Tool] = []
    checks: Checks | None = Field(default=None, description="Forbidden files and tools beyond the constraint facts.")
    turns: list[Turn] = Field(min_length=1)

    def scripted_history(self) -> list[dict[str, Any]]:
        """The whole conversation as scripted, live replies left out: what budgets are shares of."""
        return [m for index, turn in enumerate(self.turns) for m in turn.messages(index)]


def _check_distinctive(doc: LocatedYaml, loc: Loc, fields: Mapping[str, Sequence[str | None]]) -> None:
    """Values a phrase-matched answer is scored against must be more than common words ("the",
    "yes"): any answer would state them, so the fact would be recalled or confused by anything."""
    for field, values in fields.items():
        for i, value in enumerate(values):
            if value is not None and not distinctive(value):
                where = loc + ((field,) if field == "answer" else (field, i))
                raise doc.error(where, f"{value!r} is only common words: any answer would state it")


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
        if change.fact in exact:
            _check_distinctive(doc, loc, {"answer": [change.answer], "aliases": change.aliases})
        if change.items:  # a set's or a plan's new members, each stated where they change
            missing = [i for i, item in enumerate(change.items) if not mentions(turn.text(), item)]
            if missing:
                raise doc.error(loc + ("items", missing[0]), f"{change.items[missing[0]]!r} does not occur in {where}")
        elif not states(turn.text(), change.expectation(), within=True):
            raise doc.error(loc + ("answer",), f"{change.answer!r} does not occur in {where}")


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
    """A fact must be scoreable: planted where it says, not leaked by its probe, and not stated
    (or confused) by answers that say nothing about it."""
    leaked = [v for v in (fact.answer, *fact.aliases) if v and mentions(fact.probe, v, fact.tolerance)]
    if leaked:
        raise doc.error(loc + ("probe",), f"the probe contains its own answer {leaked[0]!r}")
    # A set's or a plan's item in the probe is part of the answer given away ("... API keys and passwords?").
    given = [item for item in fact.items if any(mentions(fact.probe, form) for form in item_forms(item))]
    if given:
        raise doc.error(loc + ("probe",), f"the probe contains {given[0]!r}, an item of its own answer")
    expected = fact.target_expectation()
    if fact.match == "exact":  # free-form (f1) answers are scored by overlap, not by phrase
        _check_distinctive(
            doc,
            loc,
            {
                "answer": [fact.answer],
                "aliases": fact.aliases,
                "distractors": fact.distractors,
                "confabulations": fact.confabulations,
            },
        )
    elif fact.match == "f1":  # token F1 leaves articles out: "the" would be an answer no reply can state
        _check_distinctive(doc, loc, {"answer": [fact.answer], "aliases": fact.aliases})
    for c, confabulation in enumerate(fact.confabulations):
        if abstains(confabulation):
            raise doc.error(
                loc + ("confabulations", c),
                f"{confabulation!r} is an abstention: the right answer (abstaining) would be scored confabulated",
            )
    for d, distractor in enumerate(fact.distractors):
        if expected and states(distractor, expected, within=True):
            raise doc.error(
                loc + ("distractors", d),
                f"the distractor {distractor!r} states the answer itself: no answer could be recalled",
            )
    numbers = numbers_in(fact.answer or "")
    if fact.tolerance and len(numbers) == 1 and 0 < abs(numbers[0]) <= fact.tolerance:
        raise doc.error(
            loc + ("tolerance",),
            f"a tolerance of {fact.tolerance:g} accepts 0 and every number near "
            f"it: keep it under the answer's {numbers[0]:g}",
        )
    if expected and fact.literal and expected.items:  # a set or a plan: every item where it is planted
        for i, item in enumerate(expected.items):
            if not mentions(text, item):
                raise doc.error(loc + ("items", i), f"{item!r} does not occur in {where}")
    elif expected and fact.literal and not states(text, expected, within=True):
        raise doc.error(
            loc + ("answer",), f"{fact.answer!r} does not occur in {where} (set `literal: false` if it is a paraphrase)"
        )
    if fact.subject and not mentions(text, fact.subject):
        raise doc.error(loc + ("subject",), f"the subject {fact.subject!r} does not occur in {where}")


def load_scenario(path: str | Path) -> Scenario:
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise InputError(path, "a scenario is a mapping with id, description and turns", 1)
    scenario: Scenario = doc.validate(Scenario)
    _check(doc, scenario)
    return scenario
