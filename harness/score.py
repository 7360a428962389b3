"""Deterministic scoring: does a piece of text state a fact?

The same matcher scores probe answers and checks summaries, so "dropped by the summary"
and "kept but not recalled" are measured with one yardstick. It is also what scenario
validation uses to reject leaky probes and facts missing from their planting turn.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

VERDICTS = ("recalled", "forgot", "stale", "abstained", "error")


@dataclass(frozen=True)
class Expectation:
    """What counts as stating one value of a fact."""

    answer: str
    aliases: tuple[str, ...] = ()
    regex: str | None = None
    tolerance: float | None = None  # absolute, for numeric answers


@dataclass(frozen=True)
class Target:
    """Everything needed to score one probe answer."""

    expected: Expectation
    stale: tuple[Expectation, ...] = ()  # values the fact had before it was superseded
    distractors: tuple[str, ...] = field(default=())


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


def states(text: str, expectation: Expectation) -> bool:
    """True when `text` states the expected value, an alias, or matches its regex."""
    if expectation.regex and re.search(expectation.regex, text, re.IGNORECASE):
        return True
    return any(mentions(text, value, expectation.tolerance)
               for value in (expectation.answer, *expectation.aliases))


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
    recalled = states(answer, target.expected)
    confused = any(mentions(answer, d) for d in target.distractors)
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
    accepted = " / ".join((target.expected.answer, *target.expected.aliases))
    response = judge.create(max_tokens=5, system=JUDGE_SYSTEM, messages=[{"role": "user", "content": (
        f"Question: {question}\nCorrect answer: {accepted}\nResponse to grade: {answer}\n\n"
        "Does the response give the correct answer? Reply YES or NO.")}])
    reply = " ".join(b.get("text", "") for b in response.get("content", []) if b["type"] == "text")
    word = reply.strip().upper()
    if word.startswith(("YES", "NO")):
        return word.startswith("YES")
    raise JudgeError(f"judge replied {reply.strip()[:80]!r}, not YES or NO")
