"""The LoCoMo benchmark's own scoring functions (its `task_eval/evaluation.py`), which `match: locomo`
(`matchers.LocomoF1`) applies per QA category.

Written from the benchmark's description and tested on hand-derived pairs; it differs from our
`match: f1` (no number or date unification; Porter stems)."""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from typing import Any

_PUNCTUATION = set(string.punctuation)


@functools.cache
def _stemmer() -> Any:  # nltk has no type hints
    from nltk.stem import PorterStemmer  # imported when a LoCoMo fact is first scored

    return PorterStemmer()


@functools.cache
def _stem(word: str) -> str:
    return str(_stemmer().stem(word))


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
