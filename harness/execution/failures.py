"""What a case records instead of a score when something other than the summary failed."""

from __future__ import annotations

from ..compaction.custom import StrategyError
from ..compaction.seed import TranscriptTooLarge
from ..models.client import ContextOverflow, ModelError
from ..records.schema import OVERFLOWED
from ..scoring.matchers import ScoringError
from .judge import JudgeError

# Failures of the model, its API, the judge, a regex, a custom strategy or compaction: recorded as
# `error`, never scored as forgetting.
RECORDED_ERRORS = (ModelError, JudgeError, ScoringError, StrategyError, TranscriptTooLarge)


def describe_error(exc: Exception) -> str:
    # A plain ModelError already names the SDK error it wraps; SDK messages carry status and
    # body, never the API key. A context overflow says so first: it is its own outcome.
    if isinstance(exc, ContextOverflow):
        return f"{OVERFLOWED}: {exc}"[:500]
    return (str(exc) if type(exc) is ModelError else f"{type(exc).__name__}: {exc}")[:500]
