"""`harness audit PATH...`: what compaction already cost in an agent's own logs, with no model call
(docs/audit.md). Each log is read with its format's importer (detected, or named), one file at a
time in worker processes, so memory holds one file a worker and the small timelines read off them;
a file that cannot be read is named and skipped. Each session becomes a timeline (`signals`), each
recorded compaction a window compared with its controls (`windows`), and the figures come from
`analysis.audit`. Secrets are redacted from everything the audit quotes.
"""

from __future__ import annotations

import glob
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tqdm import tqdm

from ..analysis.audit import per_session, signal_rows, verdict
from ..errors import InputError
from ..records.audit import AuditResult, CompactionAudit, Timeline
from ..sources.importers.agent_logs import FORMATS
from ..sources.importers.detect import detect, is_log_name
from .signals import timeline
from .windows import compare

DEFAULT_WINDOW = 10  # steps after a compaction
DEFAULT_CONTROLS = 4  # control windows a compaction


def log_files(paths: list[str]) -> tuple[list[Path], list[str]]:
    """The log files that paths name: files as they are, folders searched for logs (.jsonl, .json,
    .traj, compressed or not), globs expanded; and what named nothing."""
    found: list[Path] = []
    missing: list[str] = []
    for given in paths:
        matches = (
            [Path(p) for p in sorted(glob.glob(given, recursive=True))] if glob.has_magic(given) else [Path(given)]
        )
        if not any(p.exists() for p in matches):
            missing.append(f"{given}: no such file or folder")
            continue
        for match in matches:
            if match.is_dir():
                found += sorted(p for p in match.rglob("*") if p.is_file() and is_log_name(p))
            elif match.is_file():
                found.append(match)
    return list(dict.fromkeys(found)), missing


def read_log(path: Path, fmt: str | None = None) -> tuple[list[Timeline], str | None]:
    """The timelines of one log file, or why it was skipped."""
    try:
        name = fmt or detect(path)
        sessions = FORMATS[name](path)
    except InputError as exc:
        return [], str(exc)
    except Exception as exc:  # a reader's bug skips this file, never the rest
        return [], f"{path}: the reader failed: {type(exc).__name__}: {exc}"
    return [timeline(session, str(path), name) for session in sessions], None


def _read(args: tuple[Path, str | None]) -> tuple[list[Timeline], str | None]:
    return read_log(*args)


def read_logs(
    files: list[Path], fmt: str | None, jobs: int, progress: bool
) -> Iterator[tuple[list[Timeline], str | None]]:
    """Each file's timelines (or why it was skipped), in the files' order."""
    work = [(path, fmt) for path in files]
    bar = tqdm(total=len(files), unit="log", desc="audit", disable=not progress)
    with bar:
        if jobs <= 1 or len(files) < 2:
            for item in work:
                yield _read(item)
                bar.update()
            return
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            for result in pool.map(_read, work, chunksize=max(1, min(16, len(work) // (jobs * 4)))):
                yield result
                bar.update()


def audit(
    paths: list[str],
    window: int = DEFAULT_WINDOW,
    controls: int = DEFAULT_CONTROLS,
    fmt: str | None = None,
    jobs: int | None = None,
    progress: bool = False,
) -> AuditResult:
    """Audit every log the paths name (see the module docstring)."""
    files, skipped = log_files(paths)
    timelines: list[Timeline] = []
    for found, problem in read_logs(files, fmt, jobs or os.cpu_count() or 1, progress):
        timelines += found
        if problem:
            skipped.append(problem)
    audits: list[CompactionAudit] = []
    unmatched: list[str] = []
    for line in timelines:
        compared, left = compare(line, window, controls)
        audits += compared
        unmatched += left
    rows = signal_rows(audits)
    with_compactions = {(a.source, a.session) for a in audits}
    return AuditResult(
        files=len(files),
        sessions=len(timelines),
        sessions_without_compactions=sum(1 for t in timelines if not t.compactions),
        window=window,
        controls=controls,
        signals=rows,
        per_session=[per_session(t, audits) for t in timelines],
        compactions=audits,
        skipped=skipped,
        unmatched=unmatched,
        verdict=verdict(rows, len(audits), len(with_compactions)),
    )
