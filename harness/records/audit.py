"""The records of an audit of agent logs (`harness audit`, docs/audit.md): what `harness.audit` reads
off each session, what `analysis.audit` tabulates and `reports.audit` shows, and the JSON file for
scripts (`asdict` of `AuditResult`). No model is called: everything here is in the logs.

A session is a sequence of positions, each a user's line or an agent step (one model call and its
tool calls); a moment is the point before a position. A recorded compaction is a moment; the
signals that follow it within a window of N steps are compared with the same signals in windows
of the same length at moments of the same session without a compaction (its controls).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from .schema import Behaviour

# The signals, in the order of every table: key -> what the docs and the tables call it. The
# agent's are the behaviours a run checks at its cuts; the user repeating themselves is the audit's own.
SIGNALS = {**{b.value: b.label for b in Behaviour}, "user_repeats": "user repeats"}


@dataclass(frozen=True)
class Occurrence:
    """One signal at one position: something the agent (or the user) did again, and where it was
    done first. It counts in a window starting at a moment after `since`."""

    signal: str  # a key of SIGNALS
    position: int
    since: int  # the position of the earliest earlier doing it repeats (or of the rule it breaks)
    where: str  # the log's file and line (or the step's number where the format has no lines)
    earlier: str  # where that earlier doing was
    what: str  # the file, the command, the rule, the plan item, the user's words (secrets redacted)


@dataclass(frozen=True)
class Compaction:
    position: int
    where: str
    summary: str  # the summary the agent continued from (secrets redacted)


@dataclass
class Timeline:
    """What the audit reads off one session."""

    session: str
    source: str  # the log file
    format: str
    positions: int
    steps: list[int]  # the positions of the agent's steps, in order
    compactions: list[Compaction]
    occurrences: list[Occurrence]


@dataclass(frozen=True)
class Window:
    """The signals in the window after one moment: how many of each, and those that count."""

    moment: int
    steps: int  # the window's length in steps (shorter than N where the session ends first)
    counts: dict[str, int]
    occurrences: tuple[Occurrence, ...] = ()


@dataclass
class CompactionAudit:
    session: str
    source: str
    compaction: Compaction
    after: Window
    controls: list[Window]  # windows of the same length at the nearest moments without a compaction
    # Of the occurrences after it, the ones whose object the summary does not mention.
    dropped: list[Occurrence] = field(default_factory=list)

    def control_share(self, signal: str) -> float | None:
        """The share of its control windows with the signal (None: no control window)."""
        if not self.controls:
            return None
        return sum(1 for w in self.controls if w.counts[signal]) / len(self.controls)


@dataclass
class SessionAudit:
    session: str
    source: str
    format: str
    positions: int
    steps: int
    compactions: int
    after: dict[str, int]  # occurrences in the windows after its compactions
    control: dict[str, float]  # mean occurrences a control window, per compaction summed
    anywhere: dict[str, int]  # every occurrence in the session, compaction or not


@dataclass
class SignalRow:
    """One signal over every compared compaction: windows after vs their controls, paired by
    compaction and tested over sessions (analysis.stats.paired_test)."""

    signal: str
    compactions: int
    sessions: int
    after: float  # share of after-windows with the signal
    after_low: float
    after_high: float
    control: float  # mean share of control windows with it
    difference: float
    low: float | None  # None: too few sessions to judge
    high: float | None
    p_value: float | None
    occurrences_after: int
    occurrences_control: float  # per compaction, summed over compactions


@dataclass
class AuditResult:
    files: int
    sessions: int
    sessions_without_compactions: int
    window: int
    controls: int
    signals: list[SignalRow]
    per_session: list[SessionAudit]
    compactions: list[CompactionAudit]
    skipped: list[str]  # the files (or sessions) left out, each with why
    unmatched: list[str]  # compactions with no control window, with where they are
    verdict: str  # what the figures can tell, in a sentence


def as_json(result: AuditResult) -> str:
    """The JSON file for scripts: every field of the result (a figure there is none of is null)."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        return value

    return json.dumps(clean(asdict(result)), indent=1, allow_nan=False)
