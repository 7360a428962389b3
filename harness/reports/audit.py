"""The audit's report (`harness audit`, docs/audit.md) as text, markdown and HTML: the verdict, each
signal after compaction against its controls, the sessions, and the worst compactions with the lines
to open, each beside its recorded summary and what the agent went looking for that it does not name."""

from __future__ import annotations

import html
from pathlib import PurePath

import pandas as pd

from ..errors import plural
from ..records.audit import SIGNALS, AuditResult, CompactionAudit
from .formats import html_page
from .render import html_table, markdown_table

WORST = 5  # compactions listed in detail
SUMMARY_SHOWN = 600  # characters of a recorded summary shown beside what was lost


def headline(result: AuditResult) -> list[str]:
    with_compactions = result.sessions - result.sessions_without_compactions
    lines = [
        f"{plural(result.files, 'log file')}, {plural(result.sessions, 'session')}: {with_compactions} with recorded "
        f"compactions, {result.sessions_without_compactions} without (counted apart); "
        f"{plural(len(result.compactions), 'compaction')} compared, each with up to {result.controls} control "
        f"windows; windows of {plural(result.window, 'step')}",
        f"verdict: {result.verdict}",
    ]
    lines += [f"not compared: {line}" for line in result.unmatched]
    lines += [f"skipped: {line}" for line in result.skipped]
    return lines


def signal_table(result: AuditResult) -> pd.DataFrame:
    """Each signal: the share of windows after a compaction holding it, of their controls, the difference."""
    rows = {}
    for row in result.signals:
        if not row.compactions:
            continue
        difference = f"{row.difference:+.0%}" + (
            f" ({row.low:+.0%} to {row.high:+.0%}; p = {row.p_value:.2g})"
            if row.low is not None and row.high is not None and row.p_value is not None
            else " (too few sessions to test)"
        )
        rows[SIGNALS[row.signal]] = {
            "after compaction": f"{row.after:.0%} ({row.after_low:.0%}-{row.after_high:.0%})",
            "control": f"{row.control:.0%}",
            "difference": difference,
            "occurrences after": row.occurrences_after,
            "occurrences in controls (one window a compaction)": f"{row.occurrences_control:.1f}",
            "n": f"{plural(row.compactions, 'compaction')}, {plural(row.sessions, 'session')}",
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def session_table(result: AuditResult, limit: int | None = None) -> pd.DataFrame:
    """A row a session; with `limit`, the sessions with the most occurrences after compactions first."""
    sessions = result.per_session
    if limit is not None:
        sessions = sorted(sessions, key=lambda s: (-sum(s.after.values()), -s.compactions))[:limit]
    rows = {}
    for s in sessions:
        counts = {SIGNALS[k]: f"{s.after[k]} / {s.control[k]:.1f}" if s.compactions else "-" for k in SIGNALS}
        anywhere = ", ".join(f"{n} {SIGNALS[k]}" for k, n in s.anywhere.items() if n) or "none"
        rows[f"{s.session} ({s.source})"] = {
            "format": s.format,
            "steps": s.steps,
            "compactions": s.compactions,
            **counts,
            "signals anywhere in it": anywhere,
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def worst(result: AuditResult, n: int = WORST) -> list[CompactionAudit]:
    """The compactions followed by the most signals (then the most lost from their summary)."""
    return sorted(
        result.compactions, key=lambda a: (-sum(a.after.counts.values()), -len(a.dropped), a.compaction.where)
    )[:n]


def _at(audited: CompactionAudit, where: str) -> str:
    """A place in the log with the log's path as given, so it can be opened (`logs/s.jsonl:15`)."""
    name = PurePath(audited.source).name
    return audited.source + where[len(name) :] if where.startswith(name + ":") else where


def _events(audited: CompactionAudit) -> list[str]:
    dropped = {id(o) for o in audited.dropped}
    return [
        f"{_at(audited, o.where)}: {SIGNALS[o.signal]}: {o.what} (before: {_at(audited, o.earlier)})"
        + (" — the summary does not name it" if id(o) in dropped and o.signal != "user_repeats" else "")
        for o in audited.after.occurrences
    ]


def _summary(audited: CompactionAudit) -> str:
    text = audited.compaction.summary
    return text if len(text) <= SUMMARY_SHOWN else text[:SUMMARY_SHOWN] + " [...]"


SESSIONS = "Sessions (occurrences after compactions / in their control windows)"
SIGNALS_TITLE = "Signals after compaction vs the same sessions' other moments"


def audit_markdown(result: AuditResult, sessions: int | None = None) -> str:
    """The report; with `sessions`, the session table holds that many (the worst first)."""
    parts = ["# Audit of recorded compactions", "", *headline(result), ""]
    table = signal_table(result)
    if not table.empty:
        parts += [f"## {SIGNALS_TITLE}", "", markdown_table(table), ""]
    if result.per_session:
        parts += [f"## {SESSIONS}", "", markdown_table(session_table(result, sessions)), ""]
        if sessions is not None and len(result.per_session) > sessions:
            parts += [f"({len(result.per_session) - sessions:,} more sessions in audit.md and audit.json)", ""]
    if result.compactions:
        parts += ["## The worst compactions", ""]
    for audited in worst(result):
        parts += [f"### {_at(audited, audited.compaction.where)} ({audited.session})", ""]
        parts += [f"- {line}" for line in _events(audited) or ["no signal in the window after it"]]
        parts += ["", "Recorded summary:", "", "> " + _summary(audited).replace("\n", "\n> "), ""]
    return "\n".join(parts)


def audit_html(result: AuditResult) -> str:
    e = html.escape
    sections = ["<h1>Audit of recorded compactions</h1>", *(f"<p>{e(line)}</p>" for line in headline(result))]
    table = signal_table(result)
    if not table.empty:
        sections += [f"<h2>{e(SIGNALS_TITLE)}</h2>", f'<div class="wide">{html_table(table)}</div>']
    if result.per_session:
        sections += [f"<h2>{e(SESSIONS)}</h2>", f'<div class="wide">{html_table(session_table(result))}</div>']
    if result.compactions:
        sections.append("<h2>The worst compactions</h2>")
    for audited in worst(result):
        events = "".join(f"<li>{e(line)}</li>" for line in _events(audited)) or "<li>no signal after it</li>"
        sections += [
            f"<h3>{e(_at(audited, audited.compaction.where))} ({e(audited.session)})</h3><ul>{events}</ul>",
            f"<p>Recorded summary:</p><pre>{e(_summary(audited))}</pre>",
        ]
    return html_page("Audit of recorded compactions", "".join(sections))
