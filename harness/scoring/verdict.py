"""Probe verdicts: `verdict` turns an answer into recalled, forgot, stale, abstained or confabulated
(`error` is the runner's, for a model or API failure: never counted as forgetting)."""

from __future__ import annotations

import re

from .affirmation import affirms, offers_both
from .matchers import Target, states

# `error` (the model or API failed) and `overflow` (the request did not fit the context window) are
# the runner's: never counted as forgetting, left out of every rate.
VERDICTS = ("recalled", "forgot", "stale", "abstained", "confabulated", "error", "overflow")


_ABSTENTION = re.compile(
    r"\b(?:i\s+(?:do\s+not|don'?t|cannot|can'?t)\s+"
    r"(?:know|recall|remember|say|tell|have\s+(?:that|this|any|enough)\s+information)"
    r"|not\s+(?:sure|certain)"
    r"|not\s+(?:been\s+)?(?:mentioned|specified|provided|stated|given)"
    r"|(?:does|did|do)(?:\s+not|n'?t)\s+(?:say|mention|specify|tell)"
    r"|no\s+(?:information|record|mention)"
    r"|(?:unknown|unclear)\b)"
    r"|n't\s+(?:been\s+)?(?:mentioned|specified|provided|stated|given)",  # "wasn't mentioned": no \b inside a word
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
    # Naming a near miss beside the answer, or offering an old value as an alternative to it, is a
    # hedge, not recall ("X, not <distractor>" and "it went from <old> to X" are not).
    confused = any(affirms(answer, d) for d in target.distractors) or any(
        offers_both(answer, value, old_value, target.expected.tolerance)
        for value in target.expected.values
        for old in target.stale
        for old_value in old.values
    )
    if recalled and not confused:
        return "recalled"
    if not recalled and any(states(answer, old) for old in target.stale):
        return "stale"
    if not recalled and abstains(answer):
        return "abstained"
    return "forgot"
