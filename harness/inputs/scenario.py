"""Scenario files: scripted conversations that plant facts and say how to probe them.

The pydantic models are the format's single definition: `harness schema` prints their
JSON Schema, validation uses them, and docs/reference/scenario-format.md is generated from them.
Reading a file, with the checks across turns that need the scoring layer, is `scenario_file`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
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

from ..errors import did_you_mean
from ..messages import strings_in
from ..plugins import PluginError, Registry
from ..scoring.affirmation import prohibits
from ..scoring.matchers import (
    BUILT_IN_MATCHERS,
    REGEX_SECONDS,
    ExactMatch,
    Expectation,
    Matcher,
)
from ..scoring.normalize import normalize


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


def _tool_schema(name: str, description: str, **properties: Any) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": properties, "required": list(properties)},
    }


# Offered at an action probe's decision point when the scenario declares no tools: a coding agent's.
CODING_TOOLS = [
    _tool_schema("Bash", "Run a shell command in the repository.", command={"type": "string"}),
    _tool_schema("Read", "Read a file.", file_path={"type": "string"}),
    _tool_schema(
        "Edit",
        "Replace a string in a file.",
        file_path={"type": "string"},
        old_string={"type": "string"},
        new_string={"type": "string"},
    ),
    _tool_schema("Write", "Write a whole file.", file_path={"type": "string"}, content={"type": "string"}),
    _tool_schema(
        "TodoWrite",
        "Replace the plan: every todo with its status (pending, in_progress or completed).",
        todos={
            "type": "array",
            "items": {"type": "object", "properties": {"content": {"type": "string"}, "status": {"type": "string"}}},
        },
    ),
]


class StepRules(_Strict):
    """What one step of the agent does, as rules look for it: each listed field is a test, any of
    its entries passing it."""

    paths: list[Text] = Field(
        default=[],
        description="Files the step writes or edits, as globs ('billing/*.py'); a folder ending in / "
        "covers every file under it; a relative path matches wherever it sits.",
    )
    programs: list[Text] = Field(
        default=[],
        description="Programs a shell command of the step runs (the first word of each of its commands, "
        "`bash -c` included; a word in a comment or a quoted argument runs nothing).",
    )
    tools: list[Text] = Field(default=[], description="Names of the tool the step calls, in any case.")
    mentions: list[Text] = Field(
        default=[], description="Text the step's arguments contain ('release/2.3'), in any case."
    )
    reopens: list[Text] = Field(
        default=[], description="Plan items a plan-tool call (TodoWrite, update_plan) lists as not finished."
    )

    @model_validator(mode="after")
    def _can_match(self) -> StepRules:
        for program in self.programs:
            if any(c.isspace() for c in program) or "/" in program:
                raise ValueError(f"{program!r}: a program is one word (`curl`), as a command's first word reads")
        return self

    def given(self) -> dict[str, list[str]]:
        """The tests this set of rules makes, by field."""
        return {name: getattr(self, name) for name in type(self).model_fields if getattr(self, name)}


class ActionProbe(_Strict):
    """A decision point after the cut: the user says something whose natural next step differs
    depending on whether the fact is remembered; the agent takes one step, graded by rules."""

    say: Text = Field(description="The user's line after the cut ('Check the endpoint by hand.').")
    must_not: StepRules = Field(default_factory=StepRules, description="A step that does any of these violates.")
    must: StepRules = Field(
        default_factory=StepRules,
        description="A step complies only when it passes each test listed here too; a step that "
        "violates nothing and fails one of them is neither (unset: any tool call that violates nothing complies).",
    )
    kind: Slug | None = Field(
        default=None,
        description="What the report groups it under; unset: the fact's kind, a constraint's as "
        "constraint-path, constraint-tool or constraint-action by its `must_not`.",
    )

    @model_validator(mode="after")
    def _rules(self) -> ActionProbe:
        forbidden, required = self.must_not.given(), self.must.given()
        if not forbidden and not required:
            raise ValueError("an action probe needs a rule: `must_not`, `must`, or both")
        for name, entries in required.items():
            both = sorted({e.lower() for e in entries} & {e.lower() for e in forbidden.get(name, [])})
            if both:
                raise ValueError(f"`{name}` {both[0]!r} is both required and forbidden: no step could comply")
        return self

    def kind_of(self, fact_kind: str) -> str:
        if self.kind:
            return self.kind
        if fact_kind != "constraint":
            return fact_kind
        if self.must_not.paths:
            return "constraint-path"
        return "constraint-tool" if self.must_not.programs or self.must_not.tools else "constraint-action"


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
    action: ActionProbe | None = Field(
        default=None,
        description="Also probe what the agent does: a decision point after the cut, graded by rules "
        "(asked where the probe is, after every strategy, the full history and no history alike).",
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

    def action_tools(self) -> list[str]:
        """The tools an action probe's step may call: the scenario's, else `CODING_TOOLS`."""
        return [tool.name for tool in self.tools] or [tool["name"] for tool in CODING_TOOLS]

    def scripted_history(self) -> list[dict[str, Any]]:
        """The whole conversation as scripted, live replies left out: what budgets are shares of."""
        return [m for index, turn in enumerate(self.turns) for m in turn.messages(index)]
