"""Tables and plots from a run folder.

`TABLES` lists the report's tables in order, each with a title, a builder and optionally a plot;
every format iterates it: `text_report` prints the tables, `write_report` writes markdown (fits a
pull-request comment or $GITHUB_STEP_SUMMARY), CSV, and a self-contained HTML page with each
plot (PNG, embedded) under its table. `harness.records.load_run` gives the DataFrames behind
every table (for notebooks).
Every rate carries its n and a 95% Wilson interval on its effective sample size (observations
of one fact count once: see `stats`). Two metrics: *retention* (does the summary still state the
fact? no probe needed) and *recall* (does the probe answer state it?).
"""

from __future__ import annotations

import base64
import html
import io
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from .compaction import strategy_spec
from .compare import VARIANT_KEY, Comparison, pair_units, recall_units, retention_units, sensitivity
from .explorer import explorer_data, explorer_html
from .records import CEILING, CONTROLS, METRICS, NO_HISTORY, Run, budget_order, load_run, prompted, summaries
from .inputs import InputError
from .render import html_table, markdown_table, plural
from .stats import Rate, minimum_detectable_drop, rate

# --- data ----------------------------------------------------------------------------


def _compacting(df: pd.DataFrame) -> pd.DataFrame:
    """Records of strategies under test (not the ceiling or no-history controls)."""
    return df[[not strategy_spec(s).control for s in df["strategy"]]]


def _fact_clusters(group: pd.DataFrame) -> pd.Series:
    # Observations of one fact (at several budgets, compactions or repeats) count once.
    return group["scenario"].astype(str) + "/" + group["fact"].astype(str)


def recall_rate(group: pd.DataFrame) -> Rate:
    """Recalled / scored: errors are excluded, never counted as forgetting."""
    scored = group[group["verdict"] != "error"]
    return rate(scored["verdict"] == "recalled", _fact_clusters(scored))


def retention_rate(group: pd.DataFrame) -> Rate:
    """Observations whose summary states the fact; errors and unknowns excluded."""
    known = group[group["retained"].notna()]
    return rate(known["retained"].astype(bool), _fact_clusters(known))


def rate_text(group: pd.DataFrame) -> str:
    return recall_rate(group).text()


def variant_order(variants) -> list[str]:
    return sorted(variants, key=lambda v: (v in CONTROLS, v == NO_HISTORY, v))


# --- tables ----------------------------------------------------------------------------


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
    table["errors"] = [int((df[df["variant"] == v]["verdict"] == "error").sum()) for v in table.index]
    return table


def retention_by_budget(retention: pd.DataFrame) -> pd.DataFrame:
    """Per summary prompt and budget: the share of (fact, compaction) observations whose summary
    states the fact's value (of its subject), n = observations."""
    table = _by_budget(retention, lambda group: retention_rate(group).text())
    table["errors"] = [int(retention[retention["variant"] == v]["error"].notna().sum()) for v in table.index]
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
    compacted = _compacting(df)
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
    compacted = _compacting(df).copy()
    compacted["through"] = compacted["compactions"].clip(upper=3).map(lambda n: "3+" if n == 3 else str(n))
    table = {v: {t: rate_text(g) for t, g in compacted[compacted["variant"] == v].groupby("through")}
             for v in variant_order(compacted["variant"].unique())}
    return pd.DataFrame(table).T.fillna("")


COMPRESSION, SUMMARY_TOKENS = "median size after / before", "median summary tokens"


def summary_costs(compactions: pd.DataFrame, batched: bool = False) -> pd.DataFrame:
    """Per variant that writes summaries (a prompt, or a strategy with its own): how much its
    compactions shrank the history, and what they cost (a summary that keeps everything by not
    compressing is no improvement). `batched`: the run waited for batch waves, so its latency is
    that wait, not the model's."""
    made = summaries(compactions)
    rows = {}
    for variant in variant_order(made["variant"].unique()):
        mine = made[made["variant"] == variant]
        rows[variant] = {"compactions": len(mine), COMPRESSION: round(mine["ratio"].median(), 2),
                         SUMMARY_TOKENS: round(mine["output_tokens"].median()),
                         "mean wait for its batch wave (s)" if batched else "mean latency (s)":
                             round(mine["latency_s"].mean(), 2)}
    return pd.DataFrame.from_dict(rows, orient="index")


# --- paired comparisons -------------------------------------------------------------------

CEILING_KEY = ["scenario", "fact", "repeat"]  # the ceiling does not depend on the budget


def _units(run: Run, metric: str) -> dict[str, pd.DataFrame]:
    """Per variant (prompt or strategy), its units of `metric` (see `compare`)."""
    rows = run.rows(metric)
    make = retention_units if metric == "retention" else recall_units
    return {v: make(rows[rows["variant"] == v]) for v in variant_order(rows["variant"].unique())} if len(rows) else {}


def paired_comparisons(run: Run) -> list[Comparison]:
    """Every two variants under test, on each metric, paired fact by fact; and on recall each
    against the ceiling (the same facts with no compaction). Tested over scenarios, as the gate."""
    comparisons = []
    for metric in METRICS:
        units = _units(run, metric)
        tested = [v for v in units if v not in CONTROLS]
        for a, b in itertools.combinations(tested, 2):
            comparisons.append(pair_units(units[a], units[b], a, b, metric, VARIANT_KEY))
        if metric == "recall" and CEILING in units:
            comparisons += [pair_units(units[CEILING], units[v], CEILING, v, metric, CEILING_KEY) for v in tested]
    return [c for c in comparisons if c.n]


def _reading(c: Comparison, alpha: float) -> str:
    if not c.test.judged:
        return "too few scenarios to tell"
    if c.p_value < alpha:
        return f"{c.label_b if c.difference > 0 else c.label_a} higher"
    return "not distinguishable from noise"


def comparison_table(run: Run) -> pd.DataFrame:
    alpha = run.about.setting("gate", {}).get("alpha", 0.05)
    rows = {}
    for c in paired_comparisons(run):
        t = c.test
        rows[f"{c.metric}: {c.label_b} vs {c.label_a}"] = {
            "A": f"{c.label_a} {t.mean_a:.0%}", "B": f"{c.label_b} {t.mean_b:.0%}",
            "B minus A (95% CI)": (f"{t.difference:+.1%} ({t.low:+.1%} to {t.high:+.1%})" if t.judged
                                   else f"{t.difference:+.1%} (no interval)"),
            "p": f"{t.p_value:.3g}" if t.judged else "n/a",
            "pairs (scenarios)": f"{t.pairs} ({t.clusters})",
            "reading": _reading(c, alpha),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def _ranked(run: Run) -> tuple[str, dict[str, pd.DataFrame]]:
    """The headline metric (recall, or retention for a run without probes) and the variants under
    test with their units, best first."""
    metric = "recall" if not run.records.empty else "retention"
    units = {v: u for v, u in _units(run, metric).items() if v not in CONTROLS and len(u)}
    return metric, dict(sorted(units.items(), key=lambda item: item[1]["value"].mean(), reverse=True))


def best_variant(run: Run) -> str | None:
    """One line: the best variant under test on recall (retention when the run has no probes), by
    how much it leads the next, and whether that is distinguishable from noise at the gate's alpha,
    with the smallest difference this run could detect at the gate's power."""
    metric, units = _ranked(run)
    if not units:
        return None
    gate = run.about.setting("gate", {})
    alpha, power = gate.get("alpha", 0.05), gate.get("power", 0.8)
    ranked = list(units)
    best = ranked[0]
    line = f"Best on {metric}: {best} ({units[best]['value'].mean():.0%})"
    if len(ranked) == 1:
        return line + "; the only variant under test"
    c = pair_units(units[ranked[1]], units[best], ranked[1], best, metric, VARIANT_KEY)
    t = c.test
    lead = f"{line}, {t.difference * 100:+.1f} points over {ranked[1]} on the same {t.pairs} facts in {t.clusters} scenarios"
    if not t.judged:
        return f"{lead}: too few scenarios (under 5) to tell a difference from noise"
    detectable = minimum_detectable_drop(units[ranked[1]]["value"], units[ranked[1]]["scenario"], alpha, power)
    return (f"{lead} (95% CI {t.low * 100:+.1f} to {t.high * 100:+.1f}, p = {t.p_value:.3g}): "
            f"{'distinguishable' if t.p_value < alpha else 'not distinguishable'} from noise at alpha {alpha:g}; "
            f"this run detects differences of {detectable:.1%} or more with {power:.0%} power")


# --- plots ----------------------------------------------------------------------------


def _figure(**size):
    import matplotlib
    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt
    return plt.subplots(**size)


MIN_CELL = 5  # heatmap cells with fewer scored probes are greyed: their rate says little


def _rates_with_intervals(ax, x, groups: list[pd.DataFrame], label: str, offset: float = 0.0) -> None:
    """Recall with its 95% interval as an error bar at each x, n beside each point."""
    rates = [recall_rate(g) for g in groups]
    shown = [(xi + offset, r) for xi, r in zip(x, rates) if r.n]
    if not shown:
        return
    xs, rs = [p[0] for p in shown], [p[1] for p in shown]
    ax.errorbar(xs, [r.value for r in rs], yerr=[[r.value - r.low for r in rs], [r.high - r.value for r in rs]],
                marker="o", capsize=3, label=label)
    for xi, r in zip(xs, rs):
        ax.annotate(f"n={r.n}", (xi, r.value), textcoords="offset points", xytext=(4, 4), fontsize=7)


def plot_recall_by_budget(run: Run):
    df = run.records
    budgets = sorted(df["budget"].dropna().unique(), key=budget_order)
    if not budgets:
        return None
    fig, ax = _figure(figsize=(7, 4))
    x = list(range(len(budgets)))
    tested = [v for v in variant_order(df["variant"].unique()) if v not in CONTROLS]
    for i, v in enumerate(tested):  # a small offset per variant, so intervals do not hide each other
        group = df[df["variant"] == v]
        _rates_with_intervals(ax, x, [group[group["budget"] == b] for b in budgets], v, 0.06 * (i - len(tested) / 2))
    for control, style in ((CEILING, "--"), (NO_HISTORY, ":")):
        if control in set(df["variant"]):
            r = recall_rate(df[df["variant"] == control])
            ax.axhline(r.value, linestyle=style, color="grey", label=f"{control} (n={r.n})")
            ax.axhspan(r.low, r.high, color="grey", alpha=0.12)
    # Below 0, so a control at 0% (no history) is a visible line, not the axis itself.
    ax.set(xticks=x, xticklabels=budgets, xlabel="budget", ylabel="recall (95% interval)", ylim=(-0.05, 1.05),
           title="Recall versus budget")
    ax.legend(fontsize=8)
    return fig


def plot_recall_by_kind(run: Run):
    df = run.records
    kinds, variants = sorted(df["kind"].unique()), variant_order(df["variant"].unique())
    rates = [[recall_rate(df[(df["kind"] == k) & (df["variant"] == v)]) for v in variants] for k in kinds]
    grid = [[r.value if r.n >= MIN_CELL else float("nan") for r in row] for row in rates]
    fig, ax = _figure(figsize=(1.6 + 1.3 * len(variants), 0.8 + 0.5 * len(kinds)))
    ax.set_facecolor("#dddddd")  # NaN cells (too few probes) show the grey background
    shown = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set(xticks=range(len(variants)), yticks=range(len(kinds)), yticklabels=kinds,
           title=f"Recall by fact kind and variant (grey: under {MIN_CELL} probes)")
    ax.set_xticklabels(variants, rotation=30, ha="right", fontsize=8)
    for i, row in enumerate(rates):
        for j, r in enumerate(row):
            if r.n:
                value = grid[i][j]
                dark = value == value and value < 0.6
                ax.text(j, i, f"{r.value:.0%}\nn={r.n}", ha="center", va="center", fontsize=7,
                        color="white" if dark else "black")
    fig.colorbar(shown, ax=ax)
    return fig


def plot_where_lost(run: Run):
    lost = where_lost(run.records)
    parts = ["recalled", "lost: not in summary", "lost: in summary, not recalled", "lost: still verbatim", "errors"]
    fig, ax = _figure(figsize=(7, 0.9 + 0.5 * len(lost)))
    left = pd.Series(0, index=lost.index)
    for part in parts:
        share = lost[part] / lost["probes"]
        ax.barh(lost.index, share, left=left, label=part)
        left += share
    ax.set(xlim=(0, 1), xlabel="share of probes", title="Where facts were lost")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3)
    return fig


def plot_survival(run: Run):
    compacted = _compacting(run.records)
    fig, ax = _figure(figsize=(7, 4))
    variants = variant_order(compacted["variant"].unique())
    for i, v in enumerate(variants):
        group = compacted[compacted["variant"] == v]
        through = group["compactions"].clip(upper=3)
        counts = sorted(through.unique())
        _rates_with_intervals(ax, counts, [group[through == c] for c in counts], v, 0.06 * (i - len(variants) / 2))
    ax.set(xticks=[0, 1, 2, 3], xticklabels=["0", "1", "2", "3+"], xlabel="compactions the fact went through",
           ylabel="recall (95% interval)", ylim=(-0.05, 1.05), title="Survival by number of compactions")
    ax.legend(fontsize=8)
    return fig


def plot_summary_costs(run: Run):
    costs = summary_costs(run.compactions)
    fig, (left_ax, right_ax) = _figure(ncols=2, figsize=(9, 3.5))
    left_ax.bar(costs.index, costs[COMPRESSION])
    left_ax.axhline(1, color="grey", linestyle="--")
    left_ax.set(title="Median size after / before compaction", ylabel="ratio (below 1 shrinks)")
    right_ax.bar(costs.index, costs[SUMMARY_TOKENS])
    right_ax.set(title="Median summary length", ylabel="tokens")
    for axis in (left_ax, right_ax):
        axis.tick_params(axis="x", labelrotation=30, labelsize=8)
    return fig


# --- the tables ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """One section of every report format; a builder that returns an empty table leaves it out."""

    title: str
    build: Callable[[Run], pd.DataFrame]
    plot: Callable[[Run], object] | None = None  # a matplotlib figure, or None when there is nothing to draw


def _with_records(build: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[Run], pd.DataFrame]:
    """A builder over probe records; a run without probes (retention only) has none of these tables."""
    return lambda run: build(run.records) if not run.records.empty else pd.DataFrame()


def _retention_per_prompt(run: Run) -> pd.DataFrame:
    if run.retention.empty:
        return pd.DataFrame()
    gate = run.about.setting("gate", {})
    return retention_per_prompt(run.retention, gate.get("alpha", 0.05), gate.get("power", 0.8))


def _prompt_sensitivity(run: Run) -> pd.DataFrame:
    control = run.about.control_prompt
    return prompt_sensitivity(prompted(run.retention), control) if control and not run.retention.empty \
        else pd.DataFrame()


def _answer_types(df: pd.DataFrame) -> pd.DataFrame:
    return recall_by_answer_type(df) if (answer_types(df) != "literal").any() else pd.DataFrame()


TABLES = [
    Table("Summary retention by prompt and budget",
          lambda run: retention_by_budget(run.retention) if not run.retention.empty else pd.DataFrame()),
    Table("Recall by summary prompt and budget", _with_records(recall_by_budget), plot_recall_by_budget),
    Table("Paired comparisons (same facts; tested over scenarios, as the gate)", comparison_table),
    Table("Retention per prompt, and the smallest drop this run detects", _retention_per_prompt),
    Table("Compression and cost per prompt", lambda run: summary_costs(run.compactions, bool(run.about.waves)),
          plot_summary_costs),
    Table("Prompt sensitivity: retention against the keeps-nothing control", _prompt_sensitivity),
    Table("Recall by fact kind", _with_records(recall_by_kind), plot_recall_by_kind),
    Table("Recall by answer type", _with_records(_answer_types)),
    Table("Mean token F1 of free-form answers (LoCoMo's metric)", _with_records(mean_f1_by_budget)),
    Table("Where facts were lost", _with_records(where_lost), plot_where_lost),
    Table("Survival by number of compactions", _with_records(survival_by_compactions), plot_survival),
]


def tables(run: Run) -> list[tuple[Table, pd.DataFrame]]:
    """The tables this run has data for, in order, each with its built data."""
    built = [(table, table.build(run)) for table in TABLES]
    return [(table, data) for table, data in built if not data.empty]


# --- formats ------------------------------------------------------------------------------


def _headline(run: Run) -> str:
    about = run.about
    played = f" (first {turns} turns of each)" if (turns := about.setting("max_turns")) else ""
    scenarios = pd.concat([run.records["scenario"], run.retention["scenario"]]).nunique()
    partial = ("UNFINISHED RUN, the figures cover only its finished cases (`harness run EVAL --resume RUN_DIR` "
               "completes it): " if about.unfinished else "")
    return (f"{partial}eval {about.name} on {about.model}: {plural(len(run.records), 'probe')}, "
            f"{plural(len(run.retention), 'retention check')}, {plural(scenarios, 'scenario')}{played}; "
            "retention = summaries that state the fact, recall = probe answers that state it (errors excluded; "
            "95% Wilson interval, each fact counted once)" + (f"\n{best}" if (best := best_variant(run)) else ""))


def text_report(run_dir: str | Path) -> str:
    run = load_run(run_dir)
    sections = [_headline(run), *(f"{table.title}\n{data.to_string()}" for table, data in tables(run)),
                f"Run folder: {run_dir}"]
    return "\n\n".join(sections)


def markdown_report(run_dir: str | Path) -> str:
    return _markdown(load_run(run_dir))


def _markdown(run: Run) -> str:
    parts = [f"### Compaction recall: {run.about.name}", _headline(run)]
    for table, data in tables(run):
        parts += [f"**{table.title}**", markdown_table(data)]
    return "\n\n".join(parts) + "\n"


def _png(figure) -> str:
    import matplotlib.pyplot as plt
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode()


def html_report(run_dir: str | Path) -> str:
    return _html(load_run(run_dir))


def _html(run: Run) -> str:
    e = html.escape
    name = e(run.about.name)
    sections = [f"<h1>Compaction recall: {name}</h1>", *(f"<p>{e(line)}</p>" for line in _headline(run).splitlines())]
    for table, data in tables(run):
        sections += [f"<h2>{e(table.title)}</h2>", f'<div class="wide">{html_table(data)}</div>']
        if table.plot and (figure := table.plot(run)) is not None:
            sections.append(f'<img alt="{e(table.title)}" src="data:image/png;base64,{_png(figure)}">')
    if not run.records.empty:  # a run without probes has no answers to explore
        sections.append(explorer_html(explorer_data(run.records, run.compactions, run.retention, run.turns)))
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
             "table.t{border-collapse:collapse;font-size:13px;margin-bottom:1em}"
             "table.t td,table.t th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}"
             "img{max-width:100%}p{overflow-wrap:anywhere}.wide{overflow-x:auto}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{name} report</title>"
            f"<style>{style}</style></head><body>{''.join(sections)}</body></html>")


def run_index(runs: Path) -> pd.DataFrame:
    """One row per run folder, newest first: eval, model, when, status, size, and its best variant."""
    rows = {}
    for folder in sorted((p for p in runs.iterdir() if p.is_dir()), reverse=True) if runs.is_dir() else []:
        try:
            run = load_run(folder)
        except (InputError, FileNotFoundError) as exc:
            rows[folder.name] = {"eval": "?", "status": f"unreadable: {exc}"}
            continue
        metric, units = _ranked(run)
        best = next(iter(units), None)
        rows[folder.name] = {
            "eval": run.about.name, "model": run.about.model.split(":")[0], "started": run.about.started or "",
            "status": "unfinished" if run.about.unfinished else "finished",
            "probes": len(run.records), "retention checks": len(run.retention),
            "best": f"{best} {metric} {units[best]['value'].mean():.0%}" if best else "",
            "size": f"{sum(f.stat().st_size for f in folder.rglob('*') if f.is_file()) / 1e6:.1f} MB"}
    index = pd.DataFrame.from_dict(rows, orient="index").fillna("")
    return index.sort_values("started", ascending=False) if "started" in index else index


def write_report(run_dir: str | Path, out_dir: str | Path | None = None) -> dict[str, Path]:
    """Write report.md, records.csv and report.html; return their paths."""
    out = Path(out_dir or Path(run_dir) / "report")
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / "report.md", "csv": out / "records.csv", "html": out / "report.html"}
    run = load_run(run_dir)
    paths["markdown"].write_text(_markdown(run), encoding="utf-8")
    run.records.to_csv(paths["csv"], index=False)
    paths["html"].write_text(_html(run), encoding="utf-8")
    return paths
