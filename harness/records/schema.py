"""The records contract: the typed lines of a run folder, one description of every field.

`execution` writes these records and `analysis` and `reports` read them back as DataFrames
(`records.load`): this module is what the two sides agree on, including how a row is labelled
(`variant`) and which strategies are reference points rather than compactions under test.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from typing import Any

# The reference points every eval may run beside the compactions under test (strategy -> label).
CONTROL_LABELS = {"none": "ceiling (full history)", "no-history": "control: no history"}
CEILING, NO_HISTORY = CONTROL_LABELS["none"], CONTROL_LABELS["no-history"]
CONTROLS = tuple(CONTROL_LABELS.values())


class Behaviour(StrEnum):
    """A step that goes against what the history says: checked at each cut of a run (a column of the
    next-action records) and found in agents' own logs by the audit. One label each, in every table."""

    REREADS = "rereads"
    REPEATS_FAILURE = "repeats_failure"
    BREAKS_CONSTRAINT = "breaks_constraint"
    REDOES_FINISHED = "redoes_finished"

    @property
    def label(self) -> str:
        return _BEHAVIOUR_LABELS[self]

    @property
    def metric(self) -> str:
        """Its metric, where higher is better: the share of cuts where the step did not go wrong."""
        return _BEHAVIOUR_METRICS[self]


_BEHAVIOUR_LABELS = {
    Behaviour.REREADS: "re-read",
    Behaviour.REPEATS_FAILURE: "repeated failure",
    Behaviour.BREAKS_CONSTRAINT: "constraint broken",
    Behaviour.REDOES_FINISHED: "plan regressed",
}
_BEHAVIOUR_METRICS = {
    Behaviour.REREADS: "no-reread",
    Behaviour.REPEATS_FAILURE: "no-repeated-failure",
    Behaviour.BREAKS_CONSTRAINT: "keeps-constraints",
    Behaviour.REDOES_FINISHED: "keeps-finished-work",
}
BEHAVIOURS = {b.metric: b for b in Behaviour}  # metric -> the behaviour (its column) it reads
# Does the summary state the fact; does the probe answer; does the compacted agent take the step the
# uncompacted one takes; and does its step keep to what the history says.
ACTION = "action"  # at an action probe's decision point, the step does not break the fact's rules
METRICS = ("retention", "recall", ACTION, "next-action", *BEHAVIOURS)
ACTION_METRICS = ("next-action", *BEHAVIOURS)  # the metrics of the next-action records
OVERFLOWED = "context window exceeded"  # how an error that is a context overflow begins
NO_SUMMARY = "the server returned no summary (compaction content null)"  # its own outcome, not the prompt's


RECOVERY = "+recovery"  # a strategy named with it: the same strategy, the agent may search what it folded
PIN = "+pin"  # a strategy named with it: the same strategy, the user's rules put back verbatim after it


def variant(strategy: str, prompt: str | None) -> str:
    """A row's label in every table: a control's label, else the strategy with its summary prompt
    (strategies that take none are named alone)."""
    if strategy in CONTROL_LABELS:
        return CONTROL_LABELS[strategy]
    return f"{strategy}: {prompt}" if prompt else strategy


@dataclass
class CompactionEvent:
    """What one compaction did, for the harness to store beside the records."""

    strategy: str
    folded_messages: int  # messages[:folded_messages] were replaced
    size_before: int
    size_after: int
    unit: str
    summary: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0  # input tokens the server read from its prompt cache (llama.cpp, Anthropic)
    latency_s: float = 0.0
    cached: bool = False
    chunks: int = 0  # model requests this compaction made (summary: more than one when folded in chunks)
    error: str | None = None  # set when the compaction was skipped; the history is unchanged
    replaced_with: int = 0  # new messages put in place of the folded ones (0: dropped outright)
    capped: bool | None = None  # the summary stopped at its token cap (max_tokens); None: no model wrote it
    edited: int = 0  # tool results cleared in place (mask-observations, clear-tool-results, context editing)
    cleared_input_tokens: int | None = None  # context editing: what the server reported it cleared
    pinned: str | None = None  # the +pin arm: the user's rules put back verbatim (`execution.pin`)
    pinned_size: int = 0  # what the pinned block adds to the history, in the eval's unit


@dataclass(kw_only=True)
class CaseRow:
    """The case a line belongs to; every line of every records file starts with these."""

    case: str  # scenario/strategy/budget/prompt/repeat
    scenario: str
    strategy: str  # a name of `compaction.STRATEGIES`, or a custom `module:function`
    budget: str | None  # as written in the eval ("1200" or "40%"); None: the strategy ignores budgets
    prompt: str | None  # summary prompt id; None: the strategy takes no prompt
    prompt_hash: str | None = None
    repeat: int = 0
    model: str | None = None  # the client's identity
    unit: str | None = None  # the budget's unit: chars or tokens


@dataclass(kw_only=True)
class ProbeRecord(CaseRow):
    """One probe: a fact asked about after the case was played, and how the answer scored."""

    fact: str
    kind: str
    question: str | None = None  # the probe as asked
    planted_turn: int
    changed_turn: int  # the turn that set the value probed (the planting turn unless superseded)
    superseded: bool
    literal: bool  # false: the answer paraphrases the conversation (imported benchmarks)
    constraint: bool = False  # a negative constraint ("never deploy on Fridays"): restating it is recall
    expected: str | None  # None: the right outcome is to abstain
    verdict: str  # one of `score.VERDICTS`
    error: str | None = None  # why the probe or its case failed (verdict `error`)
    limit: int | None = None  # the budget resolved in units; None: never compacts (or failed)
    location: str | None = None  # at probe time: verbatim, summary, gone; none (no history)
    compactions: int | None = None  # compactions that folded the fact
    in_summary: bool | None = None  # the last summary states the value; None: no summary
    summary_reading: str | None = None  # a rule's reading in the last summary (kept, weakened, contradicted, dropped)
    answer: str | None = None
    f1: float | None = None  # the matcher's graded score (token F1 for `match: f1`, the share named for `set`)
    extras: int | None = None  # `match: set`: paths the answer names that are none of the items
    items: list[dict[str, Any]] | None = None  # `match: set`: each item, whether the answer names it, where it was
    judge: bool | None = None  # the judge's word on an answer the matcher scored `forgot`
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    latency_s: float | None = None
    cached: bool | None = None  # every call of the probe came from the response cache
    tool_calls_from_text: int | None = (
        None  # tool calls made while answering that the model wrote as text (models.tool_text)
    )
    # The recovery arm (`<strategy>+recovery`): searches of what compaction folded made before answering,
    # whether one returned the expected value, and the requests the answer took (one without a tool call).
    searches: int | None = None
    found_by_search: bool | None = None
    requests: int | None = None


@dataclass(kw_only=True)
class RetentionRecord(CaseRow):
    """After one compaction, one fact folded so far: does the summary state its current value?"""

    fact: str
    kind: str
    retained: bool | None  # of its subject, when it has one; None: unknown (or the case failed)
    error: str | None = None  # set when the case failed
    compaction: int | None = None  # index of the compaction in the case's compaction records
    before_turn: int | None = None  # the compaction ran before this turn
    value_turn: int | None = None  # the turn that set the value checked
    expected: str | None = None
    credit: float | None = None  # a set fact: the share of its items the summary names (partial credit)
    missing: list[str] | None = None  # a set fact: its folded items the summary does not name
    stale: bool | None = None  # a changed constraint: the summary still forbids what the user lifted (not retained)
    # A rule (a constraint, a decision) as the summary states it: kept, weakened, contradicted or dropped
    # (`scoring.polarity`); only kept is retained. None: the fact is no rule, or nothing was left to read.
    reading: str | None = None


@dataclass(kw_only=True)
class ActionRecord(CaseRow):
    """At one compaction where the agent's next step is the log's: the step the model takes from the
    compacted history, from the full one (twice: the second sample is the noise floor), and the step
    the log took, each as an action key (`harness.actions`)."""

    fact: str  # "cut-<turn>": what pairs this cut with the same cut of another run or variant
    compaction: int  # index of the compaction in the case's compaction records
    before_turn: int  # the step asked for is this turn's
    log: str | None  # the logged agent's own step (None: the turn is live, the log has none)
    compacted: str | None = None  # the compacted agent's step (None: its request failed)
    ceiling: str | None = None  # with the full history (None: it failed or did not fit the window)
    ceiling_again: str | None = None  # a second sample with the full history: the noise floor
    exact: bool | None = None  # compacted == ceiling (the action keys)
    same_tool: bool | None = None
    same_target: bool | None = None
    floor: bool | None = None  # ceiling == ceiling_again
    matches_log: bool | None = None  # compacted == log
    ceiling_matches_log: bool | None = None
    from_text: int = 0  # of the three steps, those the model wrote as text (read as calls)
    lacked: str | None = None  # a fact the log's step needed that this compaction's summary did not state
    error: str | None = None  # the compacted request failed (the cut is not scored)
    ceiling_error: str | None = None  # the ceiling failed; "context window exceeded ..." is its own outcome
    # Behaviour at the cut (`execution.behaviour`), of the compacted agent's step and of the full-history
    # agent's (the floor); None: nothing to check at this cut (no constraint in force, nothing finished...).
    breaks_constraint: bool | None = None  # writes a forbidden path, or runs a tool or program ruled out
    redoes_finished: bool | None = None  # puts a finished plan item back, or makes again the change that finished it
    repeats_failure: bool | None = None  # the same failing command or refused edit, nothing changed since
    rereads: bool | None = None  # reads a file already read and not changed since
    ceiling_breaks_constraint: bool | None = None
    ceiling_redoes_finished: bool | None = None
    ceiling_repeats_failure: bool | None = None
    ceiling_rereads: bool | None = None
    requests: int = 0  # of the three requests, those sent to the model (not answered from the response cache)
    prompt_tokens_sent: int = 0  # their prompt tokens
    prompt_tokens_processed: int = 0  # of those, the ones the model evaluated (not read from its prompt cache)
    searches: int | None = None  # the recovery arm: searches the compacted agent made before its step


class StepOutcome(StrEnum):
    """How an action probe's step is graded by its rules."""

    COMPLIES = "complies"
    VIOLATES = "violates"
    NEITHER = "neither"  # no tool call (asks, refuses, answers in text), or a step the rules do not speak to


@dataclass(kw_only=True)
class ActionProbeRecord(CaseRow):
    """One action probe: at a decision point after the case was played, the step the agent took
    and how its rules grade it (`execution.action_probes`)."""

    fact: str  # the fact whose `action` this is
    kind: str  # what the report groups it under (`ActionProbe.kind_of`)
    say: str  # the user's line at the decision point
    planted_turn: int
    compactions: int | None = None  # compactions before the probe
    step: str | None = None  # the step as an action key (`harness.actions`); None: the request failed
    text: str | None = None  # what the reply said beside (or instead of) its call, cut to 500 characters
    outcome: str | None = None  # a `StepOutcome`; None: the request failed
    reason: str | None = None  # which rule the step met or missed
    from_text: bool | None = None  # the model wrote the call as text, and it was read as a call
    error: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(kw_only=True)
class CompactionRecord(CaseRow):
    """One compaction: where it ran in the case, and what the strategy reported (the fields of
    `CompactionEvent`, written on the same line)."""

    before_turn: int
    first_verbatim_turn: int  # turns before this one are no longer verbatim in the history
    event: CompactionEvent

    def row(self) -> dict[str, Any]:
        line = asdict(self)
        event = line.pop("event")
        # The case's strategy names the row (`summary+pin`, `anthropic-compact-default`), not the
        # function that compacted (`summary`, `anthropic-compact`), so arms never pool.
        return {**event, **line}


Record = ProbeRecord | RetentionRecord | CompactionRecord | ActionRecord | ActionProbeRecord


def row_of(record: Record) -> dict[str, Any]:
    """A record as the line written for it."""
    return record.row() if isinstance(record, CompactionRecord) else asdict(record)


def columns(record_type: type) -> list[str]:
    """Every field of a record type, as the columns of its DataFrame."""
    names = [f.name for f in fields(record_type) if f.name != "event"]
    return names + (
        [f.name for f in fields(CompactionEvent) if f.name not in names] if record_type is CompactionRecord else []
    )
