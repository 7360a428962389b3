"""Steps 2 and 3 of a case (`runner`): each probe's request sent (`ask`), then its answer scored
(`Scorer`): where the fact was when asked (verbatim, in the summary, gone), the verdict, and the
judge's word on a `forgot`.
"""

from __future__ import annotations

from dataclasses import asdict

from ..inputs.probes import Probe
from ..messages import Message, render_message
from ..models.client import ModelClient, Usage, purpose
from ..records.schema import OVERFLOWED, ProbeRecord
from ..scoring.matchers import Expectation, SetMatch, states
from ..scoring.verdict import verdict
from . import recovery
from .cases import first_verbatim_turn
from .evals import Eval
from .failures import RECORDED_ERRORS, describe_error
from .judge import judge_says_recalled
from .played import PlayedCase, ProbeRequest


def ask(request: ProbeRequest) -> tuple[str | None, str | None, Usage]:
    """Send one probe request now: the answer or the error that stopped it, and its cost."""
    try:
        with purpose("probe"):
            answer, error = request.agent.respond(), None
    except RECORDED_ERRORS as exc:
        answer, error = None, describe_error(exc)
    return answer, error, sum(request.agent.usage, Usage())


class Scorer:
    """Scores the answers of one eval's probes (`judge`: the optional LLM judge of `forgot` answers)."""

    def __init__(self, ev: Eval, judge: ModelClient | None = None):
        self.ev, self.judge = ev, judge

    def score(
        self,
        played: PlayedCase,
        fact: Probe,
        answer: str | None = None,
        error: str | None = None,
        usage: Usage = Usage(),
        answering: list[Message] | None = None,
    ) -> ProbeRecord:
        """The probe record of one answer (or of the error that replaced it): where the fact was
        at probe time, the verdict, and the judge's word on a `forgot`. `answering`: the messages
        after the question (the recovery arm's searches are read from them)."""
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
            expected=expected.answer if expected else None,
            verdict="overflow" if error and error.startswith(OVERFLOWED) else "error",
            error=error,
        )
        if played.error:
            return record
        record.limit = played.limit
        self._locate(record, played, fact)
        if error is not None or answer is None:  # an answer is missing only beside its error
            return record
        _grade(record, fact, answer)
        record.input_tokens, record.output_tokens = usage.input_tokens, usage.output_tokens
        record.cache_read_tokens, record.latency_s, record.cached = (
            usage.cache_read_tokens,
            usage.latency_s,
            usage.cached,
        )
        record.tool_calls_from_text = usage.tool_calls_from_text
        if self.ev.strategy(played.case.strategy).recovery and answering is not None:
            _searched(record, answering, expected)
        if self.judge is not None and record.verdict == "forgot" and expected is not None:
            _judged(self.judge, record, fact, expected, answer)
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
        if summaries and expected:  # the last summary states the value (a rule, as a rule)
            mentioned = states(summaries[-1], expected, within=True)
            record.in_summary, record.summary_reading = fact.kept_in(
                summaries[-1], mentioned, fact.changed_turn, expected
            )
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


def _grade(record: ProbeRecord, fact: Probe, answer: str) -> None:
    """The answer's verdict, F1 and extras; for a set, which of the items `_locate` listed it names."""
    expected = fact.target.expected
    record.answer, record.verdict = answer, verdict(answer, fact.target)
    record.f1 = fact.target.matcher.score(answer, expected)
    record.extras = fact.target.matcher.extras(answer, expected)
    if expected is not None and isinstance(expected.matcher, SetMatch):
        names, constraint = expected.matcher.names, expected.constraint
        for item in record.items or []:
            item["named"] = names(answer, item["item"], within=False, constraint=constraint)


def _searched(record: ProbeRecord, answering: list[Message], expected: Expectation | None) -> None:
    """The recovery arm's searches before the answer, and whether one found the fact."""
    searches = recovery.searches_in(answering)
    record.searches, record.requests = len(searches.queries), sum(1 for m in answering if m["role"] == "assistant")
    record.found_by_search = (
        None if expected is None else searches.found(lambda text: states(text, expected, within=True))
    )


def _judged(judge: ModelClient, record: ProbeRecord, fact: Probe, expected: Expectation, answer: str) -> None:
    """The judge's word on a `forgot` (an error of the judge's is the record's error)."""
    try:
        record.judge = judge_says_recalled(judge, fact.question, expected, answer)
    except RECORDED_ERRORS as exc:
        record.verdict, record.error = "error", f"judge: {describe_error(exc)}"
        return
    if record.judge:
        record.verdict = "recalled"
