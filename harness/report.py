"""Tables from a run folder: recall by prompt x budget beside the controls, by fact kind,
and where the lost facts were lost."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .run import read_jsonl

CEILING, NO_HISTORY = "ceiling (full history)", "control: no history"


def load_records(run_dir: str | Path) -> pd.DataFrame:
    records = read_jsonl(Path(run_dir) / "records.jsonl")
    if not records:
        raise FileNotFoundError(f"{run_dir}: no records (is this a run folder?)")
    df = pd.DataFrame(records)
    # One label per row of the main table: a summary prompt, or a strategy without one.
    df["variant"] = [f"summary: {p}" if s == "summary" else
                     {"none": CEILING, "no-history": NO_HISTORY}.get(s, s)
                     for s, p in zip(df["strategy"], df["prompt"])]
    return df


def load_manifest(run_dir: str | Path) -> dict:
    return json.loads((Path(run_dir) / "manifest.json").read_text())


def _rate(group: pd.DataFrame) -> str:
    scored = group[group["verdict"] != "error"]
    if scored.empty:
        return "n/a"
    hits = int((scored["verdict"] == "recalled").sum())
    return f"{hits / len(scored):4.0%} ({hits}/{len(scored)})"


def _budget_order(budget: str) -> tuple[bool, float]:
    return (budget.endswith("%"), float(budget.rstrip("%")))


def recall_by_budget(df: pd.DataFrame) -> pd.DataFrame:
    """Rows: summary prompts and strategies; columns: budgets. Controls do not depend on the
    budget, so their rate is repeated in every column, to read beside each variant."""
    budgets = sorted(df["budget"].dropna().unique(), key=_budget_order)
    rows = {}
    for variant, group in df.groupby("variant", sort=True):
        if group["budget"].isna().all():
            rows[variant] = {b: _rate(group) for b in budgets} if budgets else {"any": _rate(group)}
        else:
            rows[variant] = {b: _rate(group[group["budget"] == b]) for b in budgets}
    order = sorted(rows, key=lambda v: (v in (CEILING, NO_HISTORY), v == NO_HISTORY, v))
    table = pd.DataFrame.from_dict({v: rows[v] for v in order}, orient="index")
    table.columns = [f"budget {b}" for b in table.columns]
    table["errors"] = [int((df[df["variant"] == v]["verdict"] == "error").sum()) for v in order]
    return table


def recall_by_kind(df: pd.DataFrame) -> pd.DataFrame:
    table = df.groupby(["kind", "variant"]).apply(_rate, include_groups=False).unstack("variant")
    return table.fillna("")


def where_lost(df: pd.DataFrame) -> pd.DataFrame:
    """For compacting strategies: of the facts not recalled, where they were at probe time."""
    compacted = df[~df["strategy"].isin(["none", "no-history"])]
    rows = {}
    for variant, group in compacted.groupby("variant"):
        lost = group[~group["verdict"].isin(["recalled", "error"])]
        rows[variant] = {
            "probes": len(group),
            "recalled": int((group["verdict"] == "recalled").sum()),
            "lost: not in summary": int((lost["location"] == "gone").sum()),
            "lost: in summary, not recalled": int((lost["location"] == "summary").sum()),
            "lost: still verbatim": int((lost["location"] == "verbatim").sum()),
            "of lost: stale": int((lost["verdict"] == "stale").sum()),
            "of lost: abstained": int((lost["verdict"] == "abstained").sum()),
            "errors": int((group["verdict"] == "error").sum()),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def text_report(run_dir: str | Path) -> str:
    df = load_records(run_dir)
    about = load_manifest(run_dir)
    sections = [
        f"eval {about['eval']['name']} on {about['model']}: {len(df)} probes, "
        f"{df['scenario'].nunique()} scenarios; recall = recalled / probes scored (errors excluded)",
        "Recall by summary prompt and budget\n" + recall_by_budget(df).to_string(),
        "Recall by fact kind\n" + recall_by_kind(df).to_string(),
    ]
    lost = where_lost(df)
    if not lost.empty:
        sections.append("Where facts were lost\n" + lost.to_string())
    sections.append(f"Run folder: {run_dir}")
    return "\n\n".join(sections)
