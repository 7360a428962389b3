"""The report's table builders: each turns a run's rows into one table (listed, with its plot, in
`sections.TABLES`). Every rate carries its n and a 95% Wilson interval on its effective sample
size (observations of one fact count once). Two metrics: *retention* (does the summary still
state the fact? no probe needed) and *recall* (does the probe answer state it?).
"""

from __future__ import annotations

import pandas as pd

from ..analysis.compare import retention_units, sensitivity
from ..analysis.rates import compacting, recall_rate, retention_rate, variant_order
from ..analysis.stats import minimum_detectable_drop, rate
from ..records.load import budget_order, failed, summaries


def rate_text(group: pd.DataFrame) -> str:
    return recall_rate(group).text()


def _by_budget(df: pd.DataFrame, cell) -> pd.DataFrame:
    """Rows: summary prompts and strategies; columns: budgets; `cell` describes each group.
    Controls do not depend on the budget, so their cell is repeated in every column, to read
    beside each variant."""
    budgets = sorted(df["budget"].dropna().unique(), key=budget_order) or ["any"]
    rows = {}
    for variant in variant_order(df["variant"].unique()):
        group = df[df["variant"] == variant]
        rows[variant] = {f"budget {b}": cell(group if group["budget"].isna().all() else group[group["budget"] == b])
                         for b in budgets}
    return pd.DataFrame.from_dict(rows, orient="index")


def recall_by_budget(df: pd.DataFrame) -> pd.DataFrame:
    table = _by_budget(df, rate_text)
    table["errors"] = [int(failed(df[df["variant"] == v], "recall").sum()) for v in table.index]
    return table


def retention_by_budget(retention: pd.DataFrame) -> pd.DataFrame:
    """Per summary prompt and budget: the share of (fact, compaction) observations whose summary
    states the fact's value (of its subject), n = observations."""
    table = _by_budget(retention, lambda group: retention_rate(group).text())
    table["errors"] = [int(failed(retention[retention["variant"] == v], "retention").sum()) for v in table.index]
    return table


def retention_per_prompt(retention: pd.DataFrame, alpha: float, power: float) -> pd.DataFrame:
    """Per summary prompt over all budgets: retention, and the smallest retention drop this run
    could detect (the gate's power check). Its cost is the next table."""
    rows = {}
    for variant in variant_order(retention["variant"].unique()):
        group = retention[retention["variant"] == variant]
        units = retention_units(group)
        drop = minimum_detectable_drop(units["value"], units["scenario"], alpha, power) if len(units) else None
        rows[variant] = {
            "retention": retention_rate(group).text(),
            f"detectable drop (alpha {alpha:g}, power {power:.0%})":
                f"{drop:.1%}" if drop is not None else "too few scenarios",
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def prompt_sensitivity(retention: pd.DataFrame, control: str) -> pd.DataFrame:
    """Each summary prompt's retention minus the keeps-nothing control's, paired fact by fact:
    near zero, the model is not steered by its summary prompt and prompt comparisons measure noise."""
    comparisons = sensitivity(retention, control)
    rows = {f"summary: {prompt}": {"retention": f"{c.recall_b:.0%}", f"control ({control})": f"{c.recall_a:.0%}",
                                   "sensitivity": c.test.describe()} for prompt, c in comparisons.items()}
    table = pd.DataFrame.from_dict(rows, orient="index")
    if comparisons:
        best = max(comparisons, key=lambda prompt: comparisons[prompt].recall_b)
        table = table.rename(index={f"summary: {best}": f"summary: {best} (best)"})
    return table


def recall_by_kind(df: pd.DataFrame) -> pd.DataFrame:
    table = {v: {kind: rate_text(g) for kind, g in df[df["variant"] == v].groupby("kind")}
             for v in variant_order(df["variant"].unique())}
    return pd.DataFrame(table).fillna("")


def answer_types(df: pd.DataFrame) -> pd.Series:
    """Literal facts (the answer is a span of the conversation) apart from paraphrased ones
    (imported benchmarks), and from facts whose right outcome is to abstain."""
    types = pd.Series("literal", index=df.index)
    if "literal" in df:
        types[df["literal"] == False] = "paraphrased"  # noqa: E712 (a column that may hold NaN)
    types[df["expected"].isna()] = "abstain expected"
    return types


def recall_by_answer_type(df: pd.DataFrame) -> pd.DataFrame:
    typed = df.assign(answer_type=answer_types(df))
    table = {v: {t: rate_text(g) for t, g in typed[typed["variant"] == v].groupby("answer_type")}
             for v in variant_order(df["variant"].unique())}
    return pd.DataFrame(table).fillna("")


def mean_f1_by_budget(df: pd.DataFrame) -> pd.DataFrame:
    """The mean graded score of answers whose matcher has one (LoCoMo's own metric for `match:
    locomo`, token F1 for `match: f1`; errors excluded), beside our thresholded recall; n in brackets."""
    scored = df[df["f1"].notna() & (df["verdict"] != "error")]
    return _by_budget(scored, lambda group: f"{group['f1'].mean():.2f} (n={len(group)})" if len(group) else "n/a")


def where_lost(df: pd.DataFrame) -> pd.DataFrame:
    """For compacting strategies: of the facts not recalled, where they were at probe time."""
    compacted = compacting(df)
    rows = {}
    for variant in variant_order(compacted["variant"].unique()):
        group = compacted[compacted["variant"] == variant]
        lost = group[~group["verdict"].isin(["recalled", "error"])]
        rows[variant] = {
            "probes": len(group),
            "recalled": int((group["verdict"] == "recalled").sum()),
            "lost: not in summary": int((lost["location"] == "gone").sum()),
            "lost: in summary, not recalled": int((lost["location"] == "summary").sum()),
            "lost: still verbatim": int((lost["location"] == "verbatim").sum()),
            **({"lost: summary not identified": int((lost["location"] == "unknown").sum())}
               if (compacted["location"] == "unknown").any() else {}),
            "of lost: stale": int((lost["verdict"] == "stale").sum()),
            "of lost: abstained": int((lost["verdict"] == "abstained").sum()),
            "errors": int((group["verdict"] == "error").sum()),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def survival_by_compactions(df: pd.DataFrame) -> pd.DataFrame:
    """Recall by how many compactions a fact went through (3 and more pooled)."""
    compacted = compacting(df).copy()
    compacted["through"] = compacted["compactions"].clip(upper=3).map(lambda n: "3+" if n == 3 else str(n))
    table = {v: {t: rate_text(g) for t, g in compacted[compacted["variant"] == v].groupby("through")}
             for v in variant_order(compacted["variant"].unique())}
    return pd.DataFrame(table).T.fillna("")


COMPRESSION, SUMMARY_TOKENS = "median size after / before", "median summary tokens"
AT_CAP = "stopped at the token cap"  # a summary cut at summary_max_tokens: it did not finish compressing


def summary_costs(compactions: pd.DataFrame, wave_seconds: list[float] | None = None) -> pd.DataFrame:
    """Per variant that writes summaries (a prompt, or a strategy with its own): how much its
    compactions shrank the history, and what they cost (a summary that keeps everything by not
    compressing is no improvement), and how often the summary was cut at its token cap (with its
    interval, compactions of one case counted as a cluster). `wave_seconds`: a batch run's waves, whose wait is every
    request's latency (the model's own is not measured there)."""
    made = summaries(compactions)
    rows = {}
    for variant in variant_order(made["variant"].unique()):
        mine = made[made["variant"] == variant]
        latency = (("mean wait for its batch wave (s)", sum(wave_seconds) / len(wave_seconds)) if wave_seconds
                   else ("mean latency (s)", mine["latency_s"].mean()))
        known = mine[mine["capped"].notna()]
        capped = rate(known["capped"].astype(bool), known["case"]).text() if len(known) else "not recorded"
        rows[variant] = {"compactions": len(mine), COMPRESSION: round(mine["ratio"].median(), 2),
                         SUMMARY_TOKENS: round(mine["output_tokens"].median()), AT_CAP: capped,
                         latency[0]: round(latency[1], 2)}
    return pd.DataFrame.from_dict(rows, orient="index")
