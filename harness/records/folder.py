"""The run folder as a run writes it: records appended a case at a time, and the batch journal.

Lines are appended and synced before a case is marked finished, so a resumed run drops the lines
of an unfinished case (and a half-written last line) and redoes it: nothing lost or doubled.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import shutil
import socket
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from .schema import ActionProbeRecord, ActionRecord, CompactionRecord, ProbeRecord, RetentionRecord, row_of

BASELINE_FILES = (
    "records.jsonl",
    "retention.jsonl",
    "compactions.jsonl",
    "manifest.json",  # what the gate reads
    "actions.jsonl",
    "action_probes.jsonl",
)


def _append_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    with path.open("a", encoding="utf-8") as file:
        file.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
        file.flush()
        os.fsync(file.fileno())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Complete lines only: a line cut short by a crash is ignored."""
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            if line.endswith("\n"):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # atomic: the old file or the new one, never half of each


def _rewrite(path: Path, rows: list[dict[str, Any]]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


class RunFolder:
    def __init__(self, path: Path):
        self.path = path
        self.records, self.compactions, self.retention, self.actions, self.action_probes, self.cases = (
            path / "records.jsonl",
            path / "compactions.jsonl",
            path / "retention.jsonl",
            path / "actions.jsonl",
            path / "action_probes.jsonl",
            path / "cases.jsonl",
        )
        self.request_keys = path / "request_keys.txt"  # the cache keys the run answered (`ResponseCache.for_run`)

    @classmethod
    def new(cls, runs: Path, name: str) -> RunFolder:
        """`<runs>/<name>-<timestamp>`, with a suffix when another run started in the same second."""
        runs.mkdir(parents=True, exist_ok=True)
        stem = f"{name}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
        for attempt in range(1, 1000):
            path = runs / (stem if attempt == 1 else f"{stem}-{attempt}")
            try:
                path.mkdir()  # atomic: two runs never share a folder
                return cls(path)
            except FileExistsError:
                continue
        raise FileExistsError(f"{runs}: too many runs named {stem}")

    @contextlib.contextmanager
    def locked(self) -> Iterator[RunFolder]:
        """Hold the folder for this process: a second process (a `--resume` while the run is still
        going) is refused, naming the holder. The OS releases the lock when the holder exits, even
        when it is killed, so a crashed run can always be resumed."""
        path = self.path / "run.lock"
        with path.open("a+", encoding="utf-8") as file:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                file.seek(0)
                raise InputError(
                    self.path,
                    f"in use by another run ({file.read().strip() or 'unknown process'}); "
                    "wait for it to finish or stop it, then --resume",
                ) from None
            file.truncate(0)
            file.write(f"process {os.getpid()} on {socket.gethostname()}, since {dt.datetime.now():%Y-%m-%d %H:%M:%S}")
            file.flush()
            yield self

    def finished_cases(self) -> set[str]:
        """Cases marked finished; lines of any other case are dropped, to be redone."""
        done = {row["case"] for row in read_jsonl(self.cases)}
        for path in (self.records, self.compactions, self.retention, self.actions, self.action_probes):
            _rewrite(path, [r for r in read_jsonl(path) if r["case"] in done])
        _rewrite(self.cases, [{"case": c} for c in sorted(done)])
        return done

    def write_scenarios(self, turns: dict[str, list[str]]) -> None:
        """Each scenario's turns as text, for reports that show where a fact was planted."""
        write_atomic(
            self.path / "scenarios.jsonl",
            "".join(
                json.dumps({"scenario": s, "turns": texts}, ensure_ascii=False) + "\n" for s, texts in turns.items()
            ),
        )

    def write_case(
        self,
        case_id: str,
        records: list[ProbeRecord],
        compactions: list[CompactionRecord],
        retention: list[RetentionRecord],
        actions: Sequence[ActionRecord] = (),
        action_probes: Sequence[ActionProbeRecord] = (),
    ) -> None:
        for path, rows in (
            (self.records, records),
            (self.compactions, compactions),
            (self.retention, retention),
            (self.actions, actions),
            (self.action_probes, action_probes),
        ):
            _append_lines(path, [row_of(r) for r in rows])
        _append_lines(self.cases, [{"case": case_id}])

    # The batch journal (`batches.jsonl`): each batch is written down as soon as the provider
    # accepts it and again when its results are in, so a resumed run collects the ones in flight.

    def submitted(self, batch_id: str, custom_ids: list[str]) -> None:
        _append_lines(self.path / "batches.jsonl", [{"batch": batch_id, "custom_ids": custom_ids}])

    def collected(self, batch_id: str) -> None:
        _append_lines(self.path / "batches.jsonl", [{"batch": batch_id, "collected": True}])

    def in_flight(self) -> list[tuple[str, list[str]]]:
        """Batches submitted and never collected, in submission order."""
        rows = read_jsonl(self.path / "batches.jsonl")
        collected = {row["batch"] for row in rows if row.get("collected")}
        return [
            (row["batch"], row["custom_ids"]) for row in rows if "custom_ids" in row and row["batch"] not in collected
        ]


BASELINE_RESPONSES = "responses.jsonl"


def record_baseline(run_dir: Path, baselines: Path, name: str, responses: Mapping[str, dict[str, Any]]) -> Path:
    """Copy what the gate needs from a finished run: its records, retention, compactions and
    manifest, and `responses` (its requests' responses, by cache key), so a candidate's requests
    identical to the baseline's are answered without the model."""
    target = baselines / name
    target.mkdir(parents=True, exist_ok=True)
    for file in BASELINE_FILES:
        if (run_dir / file).is_file():
            shutil.copyfile(run_dir / file, target / file)
    (target / BASELINE_RESPONSES).unlink(missing_ok=True)  # never an older run's
    if responses:
        _rewrite(target / BASELINE_RESPONSES, [{"key": k, "response": r} for k, r in responses.items()])
    return target


def baseline_responses(baseline: Path) -> dict[str, dict[str, Any]]:
    """A baseline's recorded responses, by cache key (none for a baseline recorded without them)."""
    return {row["key"]: row["response"] for row in read_jsonl(baseline / BASELINE_RESPONSES)}


def run_folders(runs: Path) -> list[Path]:
    """The run folders under `runs`, newest first (by when they last changed)."""
    folders = [p for p in runs.iterdir() if p.is_dir()] if runs.is_dir() else []
    return sorted(folders, key=lambda p: p.stat().st_mtime, reverse=True)
