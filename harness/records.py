"""The run folder: the contract between running an eval and analysing it.

`run` writes a run folder through `RunFolder`; `report`, `compare` and `gate` read it through the
loaders here, without importing the runner, the agent or any model SDK. Files:

- `records.jsonl`: one probe per line (see the README's Results section for the fields);
- `retention.jsonl`: one line per compaction per fact folded so far (`retained`: does the summary
  state the fact's value; null when unknown; `error` set when the case failed);
- `compactions.jsonl`: one line per compaction;
- `cases.jsonl`: finished cases (what `--resume` skips); `manifest.json`: the eval as run.

Lines are appended and synced before a case is marked finished, so a resumed run drops the lines
of an unfinished case (and a half-written last line) and redoes it: nothing lost or doubled.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .compaction import STRATEGIES, strategy_spec

CEILING, NO_HISTORY = STRATEGIES["none"].label, STRATEGIES["no-history"].label
CONTROLS = tuple(spec.label for spec in STRATEGIES.values() if spec.control)
METRICS = ("retention", "recall")  # does the summary state the fact; does the probe answer


def _append_lines(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    with path.open("a", encoding="utf-8") as file:
        file.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
        file.flush()
        os.fsync(file.fileno())


def read_jsonl(path: Path) -> list[dict]:
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


def _rewrite(path: Path, rows: list[dict]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


class RunFolder:
    def __init__(self, path: Path):
        self.path = path
        self.records, self.compactions, self.retention, self.cases = (
            path / "records.jsonl", path / "compactions.jsonl", path / "retention.jsonl", path / "cases.jsonl")

    def finished_cases(self) -> set[str]:
        """Cases marked finished; lines of any other case are dropped, to be redone."""
        done = {row["case"] for row in read_jsonl(self.cases)}
        for path in (self.records, self.compactions, self.retention):
            _rewrite(path, [r for r in read_jsonl(path) if r["case"] in done])
        _rewrite(self.cases, [{"case": c} for c in sorted(done)])
        return done

    def write_case(self, case_id: str, records: list[dict], compactions: list[dict], retention: list[dict]) -> None:
        _append_lines(self.records, records)
        _append_lines(self.compactions, compactions)
        _append_lines(self.retention, retention)
        _append_lines(self.cases, [{"case": case_id}])



RECORD_COLUMNS = ["case", "scenario", "strategy", "budget", "prompt", "repeat", "fact", "kind", "expected",
                  "verdict", "location", "compactions", "answer"]


def _labelled(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    df = pd.DataFrame(rows) if rows else pd.DataFrame(columns=columns)
    # One label per row of the main table: a summary prompt, or a strategy without one.
    df["variant"] = [strategy_spec(s).variant(p) for s, p in zip(df["strategy"], df["prompt"])]
    return df


def load_records(run_dir: str | Path) -> pd.DataFrame:
    """Probe records (empty for a run without probes)."""
    if not (Path(run_dir) / "records.jsonl").is_file() and not (Path(run_dir) / "retention.jsonl").is_file():
        raise FileNotFoundError(f"{run_dir}: no records (is this a run folder?)")
    return _labelled(read_jsonl(Path(run_dir) / "records.jsonl"), RECORD_COLUMNS)


def load_retention(run_dir: str | Path) -> pd.DataFrame:
    """Retention rows: per compaction, per fact folded so far, whether the summary states it."""
    return _labelled(read_jsonl(Path(run_dir) / "retention.jsonl"),
                     ["case", "scenario", "strategy", "budget", "prompt", "repeat", "fact", "kind", "retained", "error"])


def load_compactions(run_dir: str | Path) -> pd.DataFrame:
    return _labelled(read_jsonl(Path(run_dir) / "compactions.jsonl"),
                     ["case", "strategy", "prompt", "summary", "size_before", "size_after", "output_tokens"])


def load_manifest(run_dir: str | Path) -> dict:
    return json.loads((Path(run_dir) / "manifest.json").read_text())


@dataclass
class Run:
    """A run folder read once: its records, compactions, retention and manifest."""

    records: pd.DataFrame
    compactions: pd.DataFrame
    retention: pd.DataFrame
    about: dict

    def rows(self, metric: str) -> pd.DataFrame:
        """The rows a metric is computed from: retention rows, or probe records for recall."""
        return self.retention if metric == "retention" else self.records

    def prompts(self, strategy: str) -> list[str]:
        """The prompt ids a strategy ran with, in either metric's rows."""
        data = pd.concat([self.records, self.retention])
        return sorted(data.loc[data["strategy"] == strategy, "prompt"].dropna().unique())


def load_run(run_dir: str | Path) -> Run:
    return Run(load_records(run_dir), load_compactions(run_dir), load_retention(run_dir), load_manifest(run_dir))
