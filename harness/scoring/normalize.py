"""Text normalisation shared by every matcher: case, punctuation, invisible characters, thousands
separators, number words ("two thousand three hundred and fifty") and dates ("March 14th, 2025",
"14 March 2025", "2025-03-14") all become one canonical form, so values are compared as meant."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_NUMBER_WORD = "|".join([*_UNITS, *_TENS, *_SCALES])
_NUMBER_PHRASE = re.compile(rf"\b(?:{_NUMBER_WORD})(?:(?:\s+|-|\s+and\s+)(?:{_NUMBER_WORD}))*\b")

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}
_MONTHS.update({m[:3]: n for m, n in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
# Each pattern with how to read (year or None, month, day) from its match.
DateParts = Callable[[re.Match[str]], tuple[str | None, str | int, str]]
_DATE_PATTERNS: list[tuple[re.Pattern[str], DateParts]] = [
    # 2025-03-14 or 2025/03/14
    (re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b"), lambda m: (m[1], m[2], m[3])),
    # March 14, 2025 / Mar 14th / March 14
    (re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}}){_ORD}\b(?:,?\s+(\d{{4}})\b)?"), lambda m: (m[3], _MONTHS[m[1]], m[2])),
    # 14 March 2025 / 14th of March
    (
        re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s+(\d{{4}})\b)?"),
        lambda m: (m[3], _MONTHS[m[2]], m[1]),
    ),
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


def _canonical_date(match: re.Match[str], parts: DateParts) -> str:
    year, month_read, day_read = parts(match)
    month, day = int(month_read), int(day_read)
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return str(match[0])
    return f"{int(year):04d}-{month:02d}-{day:02d}" if year else f"{month:02d}-{day:02d}"


@functools.lru_cache(maxsize=4096)  # a summary or an answer is read once per fact it is checked for
def normalize(text: str) -> str:
    """Lower-case, unify numbers and dates, drop punctuation, collapse spaces."""
    text = unicodedata.normalize("NFKC", str(text)).lower()
    if not text.isascii():  # invisible format characters (zero-width spaces, soft hyphens) must not hide a word
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = _NUMBER_PHRASE.sub(lambda m: _words_to_number(str(m[0])), text)
    text = re.sub(r"(?<=\d)[,\u202f\u00a0'](?=\d{3}\b)", "", text)  # 2,350 -> 2350
    for pattern, parts in _DATE_PATTERNS:
        text = pattern.sub(functools.partial(_canonical_date, parts=parts), text)
    text = re.sub(r"(?<=\d)\.(?=\d)", "\0", text)  # keep decimal points through the next step
    text = re.sub(r"[^\w\0]+", " ", text).replace("\0", ".")
    return " ".join(text.split())


def numbers_in(text: str) -> list[float]:
    return [float(n) for n in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", normalize(text))]


def as_number(text: str) -> float | None:
    norm = normalize(text)
    return float(norm) if re.fullmatch(r"\d+(?:\.\d+)?", norm) else None


# --- matching --------------------------------------------------------------------------


_ARTICLES = {"a", "an", "the"}
# Words any answer may contain: a value made only of these would be "recalled" by anything.
COMMON_WORDS = _ARTICLES | set(
    "and or of to in on at for with by from is are was were be been it its this that these those i you he she "
    "we they me my your his her our their yes no not what which who when where how do does did has have had "
    "will would can could there here so as if then than but about".split()
)


def distinctive(value: str) -> bool:
    """A value an answer can only state on purpose: some word that is not a common one."""
    return any(token not in COMMON_WORDS for token in normalize(value).split())


def tokens(text: str) -> list[str]:
    # As LoCoMo's (SQuAD-style) evaluation: normalised words, articles dropped.
    return [t for t in normalize(text).split() if t not in _ARTICLES]


def token_f1(prediction: str, truth: str) -> float:
    predicted, expected = tokens(prediction), tokens(truth)
    common = sum(min(predicted.count(t), expected.count(t)) for t in set(expected))
    if not predicted or not expected or common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def token_recall(text: str, truth: str) -> float:
    """Share of the expected words that `text` contains: F1's recall half, for long texts."""
    present, expected = set(tokens(text)), tokens(truth)
    return sum(t in present for t in expected) / len(expected) if expected else 0.0
