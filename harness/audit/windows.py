"""Windows after a session's recorded compactions, and their controls.

The window after a moment holds the positions from it through its N-th step (fewer where the
session ends first: L steps) and the user's lines up to the next step (or the session's end). An
occurrence counts in it when what it repeats came before the moment (`since < moment`): after a
compaction, that is what the summary could have carried. The controls of a compaction are the
windows of the same L steps at the nearest moments of the same session (by position, the earlier
first on a tie) whose window holds no compaction and overlaps no compaction's window: the same
session's moments without a compaction, matched by position.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter

from ..records.audit import SIGNALS, CompactionAudit, Occurrence, Timeline, Window


def _end(timeline: Timeline, moment: int, steps: int) -> tuple[int, int]:
    """(end, L): the window from `moment` through its `steps`-th step and what the user says before
    the next step (or the session's end: a complaint on the last line counts), and the steps it holds."""
    first = bisect_left(timeline.steps, moment)
    held = min(steps, len(timeline.steps) - first)
    if not held:
        return moment, 0
    following = first + held
    return (timeline.steps[following] if following < len(timeline.steps) else timeline.positions), held


def window(timeline: Timeline, moment: int, end: int, steps: int, keep: bool = False) -> Window:
    counted = [o for o in timeline.occurrences if moment <= o.position < end and o.since < moment]
    counts = Counter(o.signal for o in counted)
    return Window(moment, steps, {s: counts[s] for s in SIGNALS}, tuple(counted) if keep else ())


def mentioned(summary: str, what: str) -> bool:
    """The summary names the object of an occurrence, as a whole word: all of it, or a path's file
    name (`app.py` is not named by `test_app.py`)."""
    what = what.strip()
    names = [what, what.rsplit("/", 1)[1]] if "/" in what and " " not in what else [what]
    return any(name and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", summary, re.IGNORECASE) for name in names)


def compare(timeline: Timeline, steps: int, controls: int) -> tuple[list[CompactionAudit], list[str]]:
    """Each compaction's window and its controls; and the compactions that could not be compared,
    each with where it is and why."""
    spans = [(c.position, *_end(timeline, c.position, steps)) for c in timeline.compactions]
    moments = {c.position for c in timeline.compactions}
    audits, unmatched = [], []
    for compaction, (moment, end, held) in zip(timeline.compactions, spans):
        if held == 0:
            unmatched.append(f"{compaction.where}: no agent step after it")
            continue
        candidates = []
        for j in range(timeline.positions):
            j_end, j_held = _end(timeline, j, held)
            if j in moments or j_held < held:
                continue
            if any(j < c_end and c_moment < j_end for c_moment, c_end, _ in spans):
                continue  # holds a compaction, or overlaps a compaction's window
            candidates.append((abs(j - moment), j, j_end))
        chosen = sorted(candidates)[:controls]
        if not chosen:
            unmatched.append(
                f"{compaction.where}: no window of {held} steps without a compaction elsewhere in its session"
            )
            continue
        after = window(timeline, moment, end, held, keep=True)
        audits.append(
            CompactionAudit(
                timeline.session,
                timeline.source,
                compaction,
                after,
                [window(timeline, j, j_end, held) for _, j, j_end in sorted(chosen, key=lambda c: c[1])],
                [o for o in after.occurrences if _lost(o, compaction.summary)],
            )
        )
    return audits, unmatched


def _lost(occurrence: Occurrence, summary: str) -> bool:
    """An occurrence after a compaction whose object the summary does not name (the user's own
    repetitions are what the user had to say again, whatever the summary says)."""
    return occurrence.signal == "user_repeats" or not mentioned(summary, occurrence.what)
