"""The audit's figures (docs/audit.md): for each signal, the share of windows after a recorded
compaction that hold it against the share of their control windows, paired by compaction and tested
over sessions (`stats.paired_test`: a session's compactions share its agent, task and user, so the
session is the unit of evidence). With fewer than `stats.MIN_CLUSTERS` sessions there is no
interval and no test: too few compactions to tell."""

from __future__ import annotations

import pandas as pd

from ..errors import plural
from ..records.audit import SIGNALS, CompactionAudit, SessionAudit, SignalRow, Timeline
from .stats import MIN_CLUSTERS, paired_test, rate


def signal_rows(audits: list[CompactionAudit]) -> list[SignalRow]:
    rows = []
    sessions = pd.Series([f"{a.source}#{a.session}" for a in audits], dtype=object)
    for signal in SIGNALS:
        after = pd.Series([1.0 if a.after.counts[signal] else 0.0 for a in audits])
        control = pd.Series([a.control_share(signal) for a in audits], dtype=float)
        test = paired_test(control, after, sessions)
        share = rate(after, sessions)
        rows.append(
            SignalRow(
                signal=signal,
                compactions=len(audits),
                sessions=sessions.nunique(),
                after=share.value,
                after_low=share.low,
                after_high=share.high,
                control=float(control.mean()) if len(control) else float("nan"),
                difference=test.difference,
                low=test.low,
                high=test.high,
                p_value=test.p_value,
                occurrences_after=sum(a.after.counts[signal] for a in audits),
                occurrences_control=sum(sum(w.counts[signal] for w in a.controls) / len(a.controls) for a in audits),
            )
        )
    return rows


def per_session(timeline: Timeline, audits: list[CompactionAudit]) -> SessionAudit:
    own = [a for a in audits if a.session == timeline.session and a.source == timeline.source]
    return SessionAudit(
        session=timeline.session,
        source=timeline.source,
        format=timeline.format,
        positions=timeline.positions,
        steps=len(timeline.steps),
        compactions=len(timeline.compactions),
        after={s: sum(a.after.counts[s] for a in own) for s in SIGNALS},
        control={s: sum(sum(w.counts[s] for w in a.controls) / len(a.controls) for a in own) for s in SIGNALS},
        anywhere={s: sum(1 for o in timeline.occurrences if o.signal == s) for s in SIGNALS},
    )


def verdict(rows: list[SignalRow], compactions: int, sessions_with: int) -> str:
    """What the figures can tell, in a sentence."""
    if compactions == 0:
        return "no recorded compaction in these logs: nothing to audit (the sessions are counted apart)"
    if sessions_with < MIN_CLUSTERS:
        return (
            f"too few compactions to tell: {plural(compactions, 'compared compaction')} in "
            f"{plural(sessions_with, 'session')}; a difference needs at least {MIN_CLUSTERS} sessions with "
            "compactions to be tested (the rates are shown, with no interval on the difference)"
        )
    worse = [SIGNALS[r.signal] for r in rows if r.low is not None and r.low > 0]
    if worse:
        return "more after compaction than at other moments of the same sessions: " + ", ".join(worse)
    return "no signal is measurably more frequent after compaction than at other moments of the same sessions"
