"""Deterministic scoring: does a piece of text state a fact?

A fact's `match:` picks its matcher from `BUILT_IN_MATCHERS` (`exact`: normalised phrases and numbers;
`f1`: token F1 for free-form answers; `locomo`: the benchmark's own scoring). The same matcher
scores probe answers and checks summaries, so "dropped by the summary" and "kept but not
recalled" are measured with one yardstick. It is also what scenario validation uses to reject
leaky probes and facts missing from their planting turn.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import regex

from .affirmation import CLAUSE_END, affirms, occurrences
from .locomo import LOCOMO_NO_ANSWER, locomo_f1, locomo_multi_f1, locomo_tokens
from .normalize import normalize, token_f1, token_recall


class Matcher(Protocol):
    """How a fact's `match:` decides that a text states an expected value."""

    def states(self, text: str, expectation: Expectation, within: bool) -> bool:
        """`within`: the text is a long document (a summary, a planting turn), not an answer."""

    def score(self, answer: str, expectation: Expectation | None) -> float | None:
        """A graded score recorded beside the verdict (`expectation` None: abstaining is right), or
        None when the matcher has none."""

    def extras(self, answer: str, expectation: Expectation | None) -> int | None:
        """How many things the answer names that are not part of the fact (items never touched, for
        a set), or None when the matcher does not count them."""


@dataclass(frozen=True)
class Expectation:
    """What counts as stating one value of a fact."""

    answer: str
    aliases: tuple[str, ...] = ()
    regex: str | None = None  # also counts, whatever the matcher
    tolerance: float | None = None  # absolute, for numeric answers
    matcher: Matcher = field(default_factory=lambda: ExactMatch())
    constraint: bool = False  # a prohibition ("never deploy on Fridays"): restating it is recall
    items: tuple[str, ...] = ()  # a set fact's members (match: set), or a plan's items (match: plan)
    done: tuple[str, ...] = ()  # a plan's items that are finished (match: plan); the others are still to do

    @property
    def values(self) -> tuple[str, ...]:
        return (self.answer, *self.aliases)


@dataclass(frozen=True)
class Target:
    """Everything needed to score one probe answer."""

    expected: Expectation | None  # None: the right outcome is to abstain
    stale: tuple[Expectation, ...] = ()  # values the fact had before it was superseded
    distractors: tuple[str, ...] = ()
    confabulations: tuple[Expectation, ...] = ()  # for abstain facts: tempting wrong answers
    matcher: Matcher = field(default_factory=lambda: ExactMatch())  # the fact's, for its graded score


def mentions(text: str, value: str, tolerance: float | None = None) -> bool:
    """True when `text` states `value`: as a whole-word phrase, or numerically."""
    return bool(occurrences(normalize(text), value, tolerance))


def _best(score: Callable[[str, str], float], text: str, expectation: Expectation) -> float:
    """The best score of `text` against the expected value and its aliases."""
    return max(score(text, value) for value in expectation.values)


@dataclass(frozen=True)
class ExactMatch:
    """`match: exact`: the value (or an alias) as a whole-word phrase after normalisation, or
    a number within the tolerance. In an answer it must be affirmed, not refused or negated; in
    a long text (a summary, a planting turn) any mention counts."""

    def states(self, text: str, expectation: Expectation, within: bool = False) -> bool:
        if within:
            return any(mentions(text, value, expectation.tolerance) for value in expectation.values)
        return any(affirms(text, value, expectation.tolerance, expectation.constraint) for value in expectation.values)

    def score(self, answer: str, expectation: Expectation | None) -> float | None:
        return None

    def extras(self, answer: str, expectation: Expectation | None) -> int | None:
        return None


@dataclass(frozen=True)
class TokenF1:
    """`match: f1`: free-form answers scored by token F1 (LoCoMo's metric) against the value or
    an alias; a long text is scored by the share of the value's words it contains instead."""

    threshold: float = 0.5

    def states(self, text: str, expectation: Expectation, within: bool = False) -> bool:
        return _best(token_recall if within else token_f1, text, expectation) >= self.threshold

    def score(self, answer: str, expectation: Expectation | None) -> float | None:
        return _best(token_f1, answer, expectation) if expectation else None

    def extras(self, answer: str, expectation: Expectation | None) -> int | None:
        return None


@dataclass(frozen=True)
class LocomoF1:
    """`match: locomo`: LoCoMo's published scoring for the fact's `category`: stemmed token F1
    (categories 2 and 4), the answer cut at its first ";" (category 3), per-sub-answer F1 (category
    1), and for category 5 (unanswerable) 1 when the reply says "no information available" or "not
    mentioned", else 0. A long text states the answer when it holds `threshold` of its words."""

    category: int
    threshold: float = 0.5

    def _against(self, answer: str, truth: str) -> float:
        if self.category == 1:
            return locomo_multi_f1(answer, truth)
        if self.category == 3:
            truth = truth.split(";")[0].strip()
        return locomo_f1(answer, truth)

    def score(self, answer: str, expectation: Expectation | None) -> float | None:
        if expectation is None:
            return float(any(phrase in answer.lower() for phrase in LOCOMO_NO_ANSWER))
        return _best(self._against, answer, expectation)

    def extras(self, answer: str, expectation: Expectation | None) -> int | None:
        return None

    def states(self, text: str, expectation: Expectation, within: bool = False) -> bool:
        if not within:
            return _best(self._against, text, expectation) >= self.threshold
        present = set(locomo_tokens(text))
        return any(
            sum(t in present for t in words) / len(words) >= self.threshold
            for words in map(locomo_tokens, expectation.values)
            if words
        )


# A file path as an answer names one: a file name with an extension, or a path with a slash.
_PATH = re.compile(r"[\w.-]*/[\w./-]+|[\w-]+\.[A-Za-z][\w]{0,5}\b")


@dataclass(frozen=True)
class SetMatch:
    """`match: set`: a fact that is a set (the files an agent modified, the commands it ran). A text
    gets credit for the share of the items it names (a path also by its file name), affirmed in an
    answer; it states the fact at `threshold`. Paths an answer names that are not items (files never
    touched) are counted apart (`extras`)."""

    threshold: float = 0.5

    def names(self, text: str, item: str, within: bool = True, constraint: bool = False) -> bool:
        """Whether `text` names one item (a path also by its file name): mentioned (a summary), or
        affirmed (`within=False`, an answer). The items of a prohibition (`constraint`) are affirmed
        by restating it: "never run scripts from untrusted sources" names "untrusted sources"."""
        if within:
            return any(mentions(text, form) for form in item_forms(item))
        return any(affirms(text, form, constraint=constraint) for form in item_forms(item))

    def share(self, text: str, expectation: Expectation, within: bool = False) -> float:
        named = [self.names(text, item, within, expectation.constraint) for item in expectation.items]
        return sum(named) / len(named) if named else 0.0

    def states(self, text: str, expectation: Expectation, within: bool = False) -> bool:
        return self.share(text, expectation, within) >= self.threshold

    def score(self, answer: str, expectation: Expectation | None) -> float | None:
        return self.share(answer, expectation) if expectation else None

    def extras(self, answer: str, expectation: Expectation | None) -> int | None:
        if expectation is None:
            return None
        known = {normalize(form) for item in expectation.items for form in item_forms(item)}
        return len({normalize(p) for p in _PATH.findall(answer)} - known)


def item_forms(item: str) -> list[str]:
    """How a text may name an item: as written, or a path by its file name."""
    name = item.rstrip("/").rsplit("/", 1)[-1]
    return [item, name] if name != item and "." in name else [item]


# How a text says an item of a plan is finished, or still to do: words, and checkboxes ("[x]", "[ ]").
_DONE = re.compile(
    r"\b(?:done|finished|completed?|fixed|resolved|implemented|already|has been|have been)\b"
    r"|\[[xX]\]|\u2713|\u2714|\u2705",
    re.IGNORECASE,
)
_PENDING = re.compile(
    r"\b(?:pending|to ?do|remaining|remain|still|next|not yet|in progress|in_progress|ongoing|open"
    r"|left|outstanding|upcoming|will|needs? to|yet to|planned|not (?:done|finished|started)"
    r"|unfinished|incomplete)\b|\[ \]",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class PlanMatch:
    """`match: plan`: the state of an agent's plan, its `items` with the ones finished (`done`). A
    text states it when it gives the right status of at least `threshold` of the items and the wrong
    status of none: a finished item named as still to do (or the reverse) is wrong, not partial. A
    text is read line by line, then clause by clause: an item takes the status its clause says
    ("done", "finished", "still to do", "next", "[x]"), its record's `status` field (a plan tool's
    call), else the status of the heading it stands under ("Done:", "Remaining:"); where a text gives
    an item's status more than once (a history holding several states of the plan), the last one
    counts; an item named with no status is not credited."""

    threshold: float = 0.5

    def placements(self, text: str, expectation: Expectation, within: bool = True) -> dict[str, str | None]:
        """Each item's status as the text gives it: "done", "pending", "unsaid" (named, no status),
        or None (not named)."""
        found: dict[str, str | None] = {item: None for item in expectation.items}
        heading = None  # the status a heading line ("Done:", "Still to do:") gives the lines under it
        for line in text.splitlines():
            if line.rstrip().endswith(":") and not any(mentions(line, i) for i in expectation.items):
                heading = _status(line) or heading
                continue
            fields = _status_fields(line, expectation.items)
            current = None  # a status said in a line holds for the rest of it ("Done: a, b. Next: c")
            for clause in CLAUSE_END.split(line):
                current = _status(clause) or current
                for item in expectation.items:
                    if mentions(clause, item) and item not in fields and (current or heading or not found[item]):
                        found[item] = current or heading or "unsaid"
            found.update(fields)
        return found

    def share(self, text: str, expectation: Expectation, within: bool = False) -> tuple[float, int]:
        """The share of items given their right status, and how many are given the wrong one."""
        placed = self.placements(text, expectation, within)
        truth = {item: "done" if item in expectation.done else "pending" for item in expectation.items}
        right = sum(placed[i] == truth[i] for i in truth)
        wrong = sum(placed[i] in ("done", "pending") and placed[i] != truth[i] for i in truth)
        return (right / len(truth) if truth else 0.0), wrong

    def states(self, text: str, expectation: Expectation, within: bool = False) -> bool:
        share, wrong = self.share(text, expectation, within)
        return share >= self.threshold and not wrong

    def score(self, answer: str, expectation: Expectation | None) -> float | None:
        if expectation is None:
            return None
        share, wrong = self.share(answer, expectation)
        return 0.0 if wrong else share

    def extras(self, answer: str, expectation: Expectation | None) -> int | None:
        return None


# A plan written as records ({'content': 'A', 'status': 'completed'}, a TodoWrite call in a transcript).
_STATUS_FIELD = re.compile(r"\bstatus\b\W{1,6}(\w+)", re.IGNORECASE)


def _status_fields(line: str, items: tuple[str, ...]) -> dict[str, str]:
    """Items whose record in the line gives a `status` field after them, before the next item: its status."""
    at = sorted((m.start(), item) for item in items for m in re.finditer(re.escape(item), line, re.IGNORECASE))
    statuses = {}
    for (start, item), (end, _) in zip(at, at[1:] + [(len(line), None)]):
        field = _STATUS_FIELD.search(line, start + len(item), end)
        if field and (status := _status(field[1].replace("_", " "))):
            statuses[item] = status
    return statuses


def _status(clause: str) -> str | None:
    """What a clause says of the items in it: "pending" wins a tie ("not yet done")."""
    if _PENDING.search(clause):
        return "pending"
    return "done" if _DONE.search(clause) else None


# A fact's `match:` names its matcher, built from the fact's own settings (such as `f1_threshold`).
# Scenarios look them up with other packages' (`inputs.scenario.MATCHERS`, by entry point).
BUILT_IN_MATCHERS: dict[str, Callable[[Any], Matcher]] = {
    "exact": lambda fact: ExactMatch(),
    "f1": lambda fact: TokenF1(fact.f1_threshold),
    "locomo": lambda fact: LocomoF1(fact.category, fact.f1_threshold),
    "set": lambda fact: SetMatch(fact.f1_threshold),
    "plan": lambda fact: PlanMatch(fact.f1_threshold),
}


REGEX_SECONDS = 0.5  # a fact's regex that takes longer on one text backtracks catastrophically


class ScoringError(Exception):
    """A text could not be scored (a fact's regex ran out of time): recorded as an error."""


def regex_matches(pattern: str, text: str) -> bool:
    """A fact's regex, case-insensitive and bounded in time (the `regex` module's timeout)."""
    try:
        return regex.search(pattern, text, regex.IGNORECASE, timeout=REGEX_SECONDS) is not None
    except TimeoutError:
        raise ScoringError(f"the regex {pattern!r} ran longer than {REGEX_SECONDS} s") from None


def states(text: str, expectation: Expectation, within: bool = False) -> bool:
    """True when `text` states the expected value, by its regex or by its matcher."""
    if expectation.regex and regex_matches(expectation.regex, text):
        return True
    return expectation.matcher.states(text, expectation, within)


def states_about(text: str, expectation: Expectation, subject: str | None, others: tuple[str, ...] = ()) -> bool:
    """Does a long text (a summary) state this value *of this subject*? Without a subject this is
    `states(within=True)`. With one, in some line or sentence the value must belong to the subject rather
    than to any of the `others` (the scenario's other subjects; see `_bound_subject`), so swapped
    values do not count."""
    if subject is None:
        return states(text, expectation, within=True)
    for segment in re.split(r"\n|(?<=[.!?;])\s+", text):
        if not states(segment, expectation, within=True):
            continue
        norm = normalize(segment)
        anchors = [(p, s == subject) for s in {subject, *others} for p, _ in occurrences(norm, s)]
        if not any(mine for _, mine in anchors):
            continue
        values = [p for v in expectation.values for p, _ in occurrences(norm, v, expectation.tolerance)]
        if not values:  # stated by regex or token overlap: the subject in the same segment must do
            return True
        if any(_bound_subject(anchors, v) for v in values):
            return True
    return False


def _bound_subject(anchors: list[tuple[int, bool]], value: int) -> bool:
    """Whether the subject a value belongs to is ours: the nearest subject before it ("crate Amber
    weighs 418 kg"), or, when none precedes, the nearest after it ("418 kg for crate Amber")."""
    before = [a for a in anchors if a[0] < value]
    nearest = max(before) if before else min(anchors, key=lambda a: a[0] - value)
    return nearest[1]
