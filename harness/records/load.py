"""Reading a run folder back, for analysis: DataFrames of its records (`load_run`), each row
labelled with its variant, and the few selections every analysis shares (failed rows, rows with
a summary prompt, summaries made). Imports no runner, agent or model SDK."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..budget import Budget
from ..errors import InputError
from ..scoring.verdict import VERDICTS
from .decision_points import with_informative
from .folder import read_jsonl
from .manifest import Manifest, load_manifest
from .schema import (
    ACTION,
    ACTION_METRICS,
    OVERFLOWED,
    ActionProbeRecord,
    ActionRecord,
    CompactionRecord,
    ProbeRecord,
    RetentionRecord,
    columns,
    variant,
)


def _labelled(rows: list[dict[str, Any]], record_type: type) -> pd.DataFrame:
    # Every field is a column, also for files written before the field existed.
    df = pd.DataFrame(rows).reindex(columns=list(dict.fromkeys([*columns(record_type), *(rows[0] if rows else [])])))
    # One label per row of the main table: a summary prompt, or a strategy without one.
    df["variant"] = [
        variant(s, p if isinstance(p, str) else None)  # pandas holds no prompt as NaN
        for s, p in zip(df["strategy"], df["prompt"])
    ]
    return df


def read_rows(run_dir: str | Path, name: str) -> list[dict[str, Any]]:
    """The lines of one records file, for analysis: every line must be a JSON record (else an
    error names the file and line); only the last line of an unfinished run may be
    cut short. Lines of cases not marked finished (a run still going, or killed) are left out, so
    half a case is never reported as if it were whole."""
    path = Path(run_dir) / name
    if not path.exists():
        return []
    rows = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    for number, line in enumerate(lines, 1):
        if not line.endswith("\n") and number == len(lines):
            break  # cut short by a crash: its case is unfinished
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"not a JSON record ({exc.msg})", number) from None
        if not isinstance(row, dict):
            raise InputError(path, f"not a record (a JSON object), but {type(row).__name__}", number)
        if name == "records.jsonl" and row.get("verdict") not in VERDICTS:
            raise InputError(
                path, f"verdict {row.get('verdict')!r} is none of {', '.join(VERDICTS)}", number, "verdict"
            )
        rows.append(row)
    cases = Path(run_dir) / "cases.jsonl"
    if cases.exists():  # a run folder; a baseline keeps finished cases only
        finished = {row["case"] for row in read_jsonl(cases)}
        rows = [row for row in rows if row.get("case") in finished]
    return rows


def load_records(run_dir: str | Path) -> pd.DataFrame:
    """Probe records (empty for a run without probes)."""
    if not (Path(run_dir) / "records.jsonl").is_file() and not (Path(run_dir) / "retention.jsonl").is_file():
        raise FileNotFoundError(f"{run_dir}: no records (is this a run folder?)")
    records = _labelled(read_rows(run_dir, "records.jsonl"), ProbeRecord)
    # Runs written before `expected: null` marked abstain facts with this text.
    records.loc[records["expected"] == "(abstain)", "expected"] = None
    return records


def load_retention(run_dir: str | Path) -> pd.DataFrame:
    """Retention rows: per compaction, per fact folded so far, whether the summary states it."""
    return _labelled(read_rows(run_dir, "retention.jsonl"), RetentionRecord)


def load_actions(run_dir: str | Path) -> pd.DataFrame:
    """Next-action rows: per compaction where the agent's next step is the log's, the steps taken."""
    return _labelled(read_rows(run_dir, "actions.jsonl"), ActionRecord)


def load_action_probes(run_dir: str | Path) -> pd.DataFrame:
    """Action-probe rows: per fact with an `action`, the step taken at its decision point, its grade,
    and whether the probe can tell what compaction did (`informative`)."""
    return with_informative(_labelled(read_rows(run_dir, "action_probes.jsonl"), ActionProbeRecord))


def load_compactions(run_dir: str | Path) -> pd.DataFrame:
    return _labelled(read_rows(run_dir, "compactions.jsonl"), CompactionRecord)


def failed(rows: pd.DataFrame, metric: str) -> pd.Series:
    """Which rows of a metric failed with an error (a model, API, scoring or strategy failure) or
    did not fit the context window: neither is forgetting, so neither counts in a rate. A next step
    is scored against the ceiling's, so a ceiling that failed leaves its cut unscored too."""
    if metric in ("retention", ACTION):
        return rows["error"].notna()
    if metric in ACTION_METRICS:
        return rows["error"].notna() | rows["ceiling_error"].notna()
    return rows["verdict"].isin(["error", "overflow"])


def overflowed(rows: pd.DataFrame, metric: str) -> pd.Series:
    """Which rows of a metric could not be measured because a request exceeded the context window."""
    if metric in ("retention", ACTION):
        return _starts_overflow(rows["error"])
    if metric in ACTION_METRICS:
        return _starts_overflow(rows["error"]) | _starts_overflow(rows["ceiling_error"])
    return rows["verdict"] == "overflow"


def _starts_overflow(errors: pd.Series) -> pd.Series:
    # A column with no error at all is read as floats (NaN): no string method applies to it.
    return errors.map(lambda error: isinstance(error, str) and error.startswith(OVERFLOWED)).astype(bool)


def prompted(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of the strategies that take a summary prompt (built-in or custom: their rows carry
    one): where prompts are compared."""
    return rows[rows["prompt"].notna()] if not rows.empty else rows


def summaries(compactions: pd.DataFrame) -> pd.DataFrame:
    """Compactions that produced a summary, each with its `ratio` of size after to size before."""
    return _with_ratio(compactions[compactions["summary"].notna()])


def shrinks(compactions: pd.DataFrame) -> pd.DataFrame:
    """Compactions that changed the history: a summary written, or old tool results cleared in
    place (no summary, no model call); each with its `ratio` of size after to size before."""
    edited = compactions["edited"].fillna(0) > 0 if "edited" in compactions else False
    return _with_ratio(compactions[compactions["summary"].notna() | edited])


def _with_ratio(made: pd.DataFrame) -> pd.DataFrame:
    return made.assign(ratio=made["size_after"] / made["size_before"])


def budget_order(budget: str) -> tuple[bool, float]:
    """Sort key of budgets as records hold them: absolute ones first, each kind by size."""
    return Budget(budget).sort_key()


@dataclass(kw_only=True)
class Run:
    """A run folder read once: its records, compactions, retention and manifest."""

    records: pd.DataFrame
    compactions: pd.DataFrame
    retention: pd.DataFrame
    manifest: Manifest
    turns: dict[str, list[str]] = field(default_factory=dict)  # per scenario; empty for older runs
    actions: pd.DataFrame = field(default_factory=pd.DataFrame)  # next-action rows; empty unless measured
    action_probes: pd.DataFrame = field(default_factory=pd.DataFrame)  # empty unless the scenarios have some
    path: Path | None = None  # the folder it was read from

    def rows(self, metric: str) -> pd.DataFrame:
        """The rows a metric is computed from: retention rows, probe records for recall, the action
        probes that can tell (`decision_points`) for action, next-action rows (for fidelity and
        behaviour at the cut)."""
        if metric == ACTION:
            probes = self.action_probes
            return probes[probes["informative"] == True] if "informative" in probes else probes  # noqa: E712
        return self.retention if metric == "retention" else self.actions if metric in ACTION_METRICS else self.records

    def errors(self) -> tuple[int, int]:
        """Observations (probe records and retention rows) that failed with an error, of all."""
        return (
            int(failed(self.records, "recall").sum()) + int(failed(self.retention, "retention").sum()),
            len(self.records) + len(self.retention),
        )

    def prompts(self, strategy: str | None = None) -> list[str]:
        """The prompt ids one strategy ran with (None: any strategy that takes a prompt), in the rows
        of recall, retention or action probes."""
        measured = [prompted(rows) for rows in (self.records, self.retention, self.action_probes) if len(rows)]
        data = pd.concat(measured) if measured else pd.DataFrame(columns=["strategy", "prompt"])
        if strategy is not None:
            data = data[data["strategy"] == strategy]
        return sorted(data["prompt"].dropna().unique())


def load_run(run_dir: str | Path) -> Run:
    turns = {
        row["scenario"]: row["turns"]
        for row in read_jsonl(Path(run_dir) / "scenarios.jsonl")
        if isinstance(row, dict) and isinstance(row.get("turns"), list)
    }
    return Run(
        records=load_records(run_dir),
        compactions=load_compactions(run_dir),
        retention=load_retention(run_dir),
        manifest=load_manifest(run_dir),
        turns=turns,
        actions=load_actions(run_dir),
        action_probes=load_action_probes(run_dir),
        path=Path(run_dir),
    )
