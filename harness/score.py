"""Deterministic scoring: does a piece of text state a fact?

A fact's `match:` picks its matcher from `MATCHERS` (`exact`: normalised phrases and numbers;
`f1`: token F1 for free-form answers); `verdict` turns a probe answer into recalled, forgot,
stale, abstained or confabulated. The same matcher scores probe answers and checks summaries, so "dropped by the summary"
and "kept but not recalled" are measured with one yardstick. It is also what scenario
validation uses to reject leaky probes and facts missing from their planting turn.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import regex

VERDICTS = ("recalled", "forgot", "stale", "abstained", "confabulated", "error")


class Matcher(Protocol):
    """How a fact's `match:` decides that a text states an expected value."""

    def states(self, text: str, expectation: Expectation, within: bool) -> bool:
        """`within`: the text is a long document (a summary, a planting turn), not an answer."""

    def score(self, answer: str, expectation: Expectation | None) -> float | None:
        """A graded score recorded beside the verdict (`expectation` None: abstaining is right), or
        None when the matcher has none."""


@dataclass(frozen=True)
class Expectation:
    """What counts as stating one value of a fact."""

    answer: str
    aliases: tuple[str, ...] = ()
    regex: str | None = None  # also counts, whatever the matcher
    tolerance: float | None = None  # absolute, for numeric answers
    matcher: Matcher = field(default_factory=lambda: ExactMatch())

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


# --- normalisation ---------------------------------------------------------------------

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_NUMBER_WORD = "|".join([*_UNITS, *_TENS, *_SCALES])
_NUMBER_PHRASE = re.compile(rf"\b(?:{_NUMBER_WORD})(?:(?:\s+|-|\s+and\s+)(?:{_NUMBER_WORD}))*\b")

_MONTHS = {m: i + 1 for i, m in enumerate(
    "january february march april may june july august september october november december".split())}
_MONTHS.update({m[:3]: n for m, n in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_DATE_PATTERNS = [
    # 2025-03-14 or 2025/03/14
    (re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b"), lambda m: (m[1], m[2], m[3])),
    # March 14, 2025 / Mar 14th / March 14
    (re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}}){_ORD}\b(?:,?\s+(\d{{4}})\b)?"),
     lambda m: (m[3], _MONTHS[m[1]], m[2])),
    # 14 March 2025 / 14th of March
    (re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s+(\d{{4}})\b)?"),
     lambda m: (m[3], _MONTHS[m[2]], m[1])),
]


def _words_to_number(phrase: str) -> str:
    total, current = 0, 0
    for word in re.split(r"\s+|-", phrase):
        if word == "and" or not word:
            continue
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        else:
            total += max(current, 1) * _SCALES[word]
            current = 0
    return str(total + current)


def _canonical_date(match: re.Match, parts) -> str:
    year, month, day = parts(match)
    month, day = int(month), int(day)
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match[0]
    return f"{int(year):04d}-{month:02d}-{day:02d}" if year else f"{month:02d}-{day:02d}"


def normalize(text: str) -> str:
    """Lower-case, unify numbers and dates, drop punctuation, collapse spaces."""
    text = unicodedata.normalize("NFKC", str(text)).lower()
    # Invisible format characters (zero-width spaces, soft hyphens) must not hide a word.
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = _NUMBER_PHRASE.sub(lambda m: _words_to_number(m[0]), text)
    text = re.sub(r"(?<=\d)[,\u202f\u00a0'](?=\d{3}\b)", "", text)  # 2,350 -> 2350
    for pattern, parts in _DATE_PATTERNS:
        text = pattern.sub(lambda m, parts=parts: _canonical_date(m, parts), text)
    text = re.sub(r"(?<=\d)\.(?=\d)", "\0", text)  # keep decimal points through the next step
    text = re.sub(r"[^\w\0]+", " ", text).replace("\0", ".")
    return " ".join(text.split())


def numbers_in(text: str) -> list[float]:
    return [float(n) for n in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", normalize(text))]


def _as_number(text: str) -> float | None:
    norm = normalize(text)
    return float(norm) if re.fullmatch(r"\d+(?:\.\d+)?", norm) else None


# --- matching --------------------------------------------------------------------------


def mentions(text: str, value: str, tolerance: float | None = None) -> bool:
    """True when `text` states `value`: as a whole-word phrase, or numerically."""
    number = _as_number(value)
    if number is not None:
        return any(abs(n - number) <= (tolerance or 0) + 1e-9 for n in numbers_in(text))
    needle = normalize(value)
    return bool(needle) and f" {needle} " in f" {normalize(text)} "


_ARTICLES = {"a", "an", "the"}
# Words any answer may contain: a value made only of these would be "recalled" by anything.
COMMON_WORDS = _ARTICLES | set(
    "and or of to in on at for with by from is are was were be been it its this that these those i you he she "
    "we they me my your his her our their yes no not what which who when where how do does did has have had "
    "will would can could there here so as if then than but about".split())


def distinctive(value: str) -> bool:
    """A value an answer can only state on purpose: some word that is not a common one."""
    return any(token not in COMMON_WORDS for token in normalize(value).split())


def _tokens(text: str) -> list[str]:
    # As LoCoMo's (SQuAD-style) evaluation: normalised words, articles dropped.
    return [t for t in normalize(text).split() if t not in _ARTICLES]


def token_f1(prediction: str, truth: str) -> float:
    predicted, expected = _tokens(prediction), _tokens(truth)
    common = sum(min(predicted.count(t), expected.count(t)) for t in set(expected))
    if not predicted or not expected or common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def _best(score, text: str, expectation: Expectation) -> float:
    """The best score of `text` against the expected value and its aliases."""
    return max(score(text, value) for value in expectation.values)


def token_recall(text: str, truth: str) -> float:
    """Share of the expected words that `text` contains: F1's recall half, for long texts."""
    present, expected = set(_tokens(text)), _tokens(truth)
    return sum(t in present for t in expected) / len(expected) if expected else 0.0


# A clause ends at sentence punctuation, a comma (not the one before a year: "March 14, 2025"), a
# dash, or a contrast ("..., not the Baixa Grand", "not 2350 but 2800").
_CLAUSE_END = re.compile(r"[;!?]|\.(?=\s|$)|,(?!\s*\d{4}\b)(?=\s)|\s[-\u2013\u2014]\s|\b(?:but|however|although)\b")
# Negation cues in normalised text ("can't" normalises to "can t").
_NEGATION = re.compile(r"\b(?:not|no|never|cannot|unable|neither|nor|without|\w+n t)\b")


def affirms(text: str, value: str, tolerance: float | None = None) -> bool:
    """True when an answer states `value` in some clause that does not negate it before it:
    "not Lisbon" and "I'm unable to provide a refund or replacement" do not affirm Lisbon or
    replacement; "Casa Alfama, not the Baixa Grand" affirms Casa Alfama and not the Baixa Grand."""
    for clause in _CLAUSE_END.split(text):
        norm = normalize(clause)
        if any(not _NEGATION.search(norm[:at]) for at in _occurrences(norm, value, tolerance)):
            return True
    return False


@dataclass(frozen=True)
class ExactMatch:
    """`match: exact`: the value (or an alias) as a whole-word phrase after normalisation, or
    a number within the tolerance. In an answer it must be affirmed, not refused or negated; in
    a long text (a summary, a planting turn) any mention counts."""

    def states(self, text: str, expectation: Expectation, within: bool = False) -> bool:
        said = mentions if within else affirms
        return any(said(text, value, expectation.tolerance) for value in expectation.values)

    def score(self, answer: str, expectation: Expectation | None) -> float | None:
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


# --- LoCoMo's own scoring (task_eval/evaluation.py of the benchmark), per QA category ---------

_PUNCTUATION = set(string.punctuation)


@functools.cache
def _stemmer():
    from nltk.stem import PorterStemmer  # imported when a LoCoMo fact is first scored
    return PorterStemmer()


@functools.cache
def _stem(word: str) -> str:
    return _stemmer().stem(word)


def locomo_tokens(text: str) -> list[str]:
    """The benchmark's normalisation: commas removed, lower case, punctuation removed, the words
    a, an, the and "and" removed, then each word Porter-stemmed. (No number or date unification.)"""
    text = "".join(ch for ch in str(text).replace(",", "").lower() if ch not in _PUNCTUATION)
    return [_stem(word) for word in re.sub(r"\b(a|an|the|and)\b", " ", text).split()]


def locomo_f1(prediction: str, truth: str) -> float:
    predicted, expected = locomo_tokens(prediction), locomo_tokens(truth)
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def locomo_multi_f1(prediction: str, truth: str) -> float:
    """Category 1 (multi-hop): both sides split at commas; each expected sub-answer scores its best
    predicted part, and the scores are averaged."""
    predictions = [p.strip() for p in prediction.split(",")]
    truths = [t.strip() for t in truth.split(",")]
    return sum(max(locomo_f1(p, t) for p in predictions) for t in truths) / len(truths)


LOCOMO_NO_ANSWER = ("no information available", "not mentioned")  # category 5's accepted replies


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
        return max(self._against(answer, value) for value in expectation.values)

    def states(self, text: str, expectation: Expectation, within: bool = False) -> bool:
        if not within:
            return self.score(text, expectation) >= self.threshold
        present = set(locomo_tokens(text))
        return any(sum(t in present for t in words) / len(words) >= self.threshold
                   for words in map(locomo_tokens, expectation.values) if words)


# A fact's `match:` names its matcher, built from the fact's own settings (such as `f1_threshold`).
MATCHERS: dict[str, Callable[[Any], Matcher]] = {
    "exact": lambda fact: ExactMatch(),
    "f1": lambda fact: TokenF1(fact.f1_threshold),
    "locomo": lambda fact: LocomoF1(fact.category, fact.f1_threshold),
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


def _occurrences(norm: str, value: str, tolerance: float | None) -> list[int]:
    """Character offsets in normalised text where `value` is stated."""
    number = _as_number(value)
    if number is not None:
        return [m.start() for m in re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", norm)
                if abs(float(m[0]) - number) <= (tolerance or 0) + 1e-9]
    needle = normalize(value)
    return [m.start() for m in re.finditer(rf"(?<!\w){re.escape(needle)}(?!\w)", norm)] if needle else []


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
        anchors = [(p, s == subject) for s in {subject, *others} for p in _occurrences(norm, s, None)]
        if not any(mine for _, mine in anchors):
            continue
        values = [p for v in expectation.values for p in _occurrences(norm, v, expectation.tolerance)]
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


_ABSTENTION = re.compile(
    r"\b(?:i\s+(?:do\s+not|don'?t|cannot|can'?t)\s+"
    r"(?:know|recall|remember|say|tell|have\s+(?:that|this|any|enough)\s+information)"
    r"|not\s+(?:sure|certain)"
    r"|not\s+(?:been\s+)?(?:mentioned|specified|provided|stated|given)"
    r"|no\s+(?:information|record|mention)"
    r"|(?:unknown|unclear)\b)",
    re.IGNORECASE,
)


def abstains(text: str) -> bool:
    return bool(_ABSTENTION.search(text.replace("’", "'")))


def verdict(answer: str, target: Target) -> str:
    """Score one probe answer. A model or API failure is scored `error` by the caller."""
    if target.expected is None:  # the conversation cannot answer this: abstaining is right
        if any(states(answer, c) for c in target.confabulations):
            return "confabulated"
        return "recalled" if abstains(answer) else "forgot"
    recalled = states(answer, target.expected)
    confused = any(affirms(answer, d) for d in target.distractors)  # "X, not <distractor>" is not confused
    if recalled and not confused:
        return "recalled"
    if not recalled and any(states(answer, old) for old in target.stale):
        return "stale"
    if not recalled and abstains(answer):
        return "abstained"
    return "forgot"


# --- the optional LLM judge (`--judge MODEL`) ------------------------------------------

JUDGE_SYSTEM = "You grade answers to questions. Reply with exactly one word: YES or NO."


class JudgeError(Exception):
    """The judge's reply could not be read as YES or NO."""


def judge_says_recalled(judge, question: str, target: Target, answer: str) -> bool:
    """Ask a judge model whether a paraphrased answer states the expected value."""
    accepted = " / ".join(target.expected.values)
    response = judge.create(max_tokens=5, system=JUDGE_SYSTEM, messages=[{"role": "user", "content": (
        f"Question: {question}\nCorrect answer: {accepted}\nResponse to grade: {answer}\n\n"
        "Does the response give the correct answer? Reply YES or NO.")}])
    reply = " ".join(b.get("text", "") for b in response.get("content", []) if b["type"] == "text")
    word = reply.strip().upper()
    if word.startswith(("YES", "NO")):
        return word.startswith("YES")
    raise JudgeError(f"judge replied {reply.strip()[:80]!r}, not YES or NO")
