"""The report's plots, each with its uncertainty: recall versus budget with 95% intervals and n per
point (controls as bands), the kind x variant heatmap with n in every cell, where facts were lost,
survival by compactions, and compression. Each returns a matplotlib figure, or None."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ..analysis.rates import compacting, recall_rate, variant_order
from ..records import Run
from ..records.load import budget_order
from ..records.schema import CEILING, CONTROLS, NO_HISTORY
from .tables import COMPRESSION, SUMMARY_TOKENS, summary_costs, where_lost

if TYPE_CHECKING:  # matplotlib is imported when a plot is drawn, not when reports are read
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _figure(width: float, height: float, columns: int = 1) -> tuple[Figure, list[Axes]]:
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(width, height))
    return figure, [figure.add_subplot(1, columns, i + 1) for i in range(columns)]


MIN_CELL = 5  # heatmap cells with fewer scored probes are greyed: their rate says little


def _rates_with_intervals(ax: Axes, x: list[int], groups: list[pd.DataFrame], label: str, offset: float = 0.0) -> None:
    """Recall with its 95% interval as an error bar at each x, n beside each point."""
    rates = [recall_rate(g) for g in groups]
    shown = [(xi + offset, r) for xi, r in zip(x, rates) if r.n]
    if not shown:
        return
    xs, rs = [p[0] for p in shown], [p[1] for p in shown]
    ax.errorbar(
        xs,
        [r.value for r in rs],
        yerr=[[r.value - r.low for r in rs], [r.high - r.value for r in rs]],
        marker="o",
        capsize=3,
        label=label,
    )
    for xi, r in zip(xs, rs):
        ax.annotate(f"n={r.n}", (xi, r.value), textcoords="offset points", xytext=(4, 4), fontsize=7)


def plot_recall_by_budget(run: Run) -> Figure | None:
    df = run.records
    budgets = sorted(df["budget"].dropna().unique(), key=budget_order)
    if not budgets:
        return None
    fig, (ax,) = _figure(7, 4)
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
    # A fixed half-unit margin: with one budget, autoscaling would stretch the variants' small offsets
    # across the whole axis, as if they were at different budgets.
    ax.set(
        xticks=x,
        xticklabels=budgets,
        xlabel="budget",
        ylabel="recall (95% interval)",
        ylim=(-0.05, 1.05),
        xlim=(-0.5, len(budgets) - 0.5),
        title="Recall versus budget",
    )
    ax.legend(fontsize=8)
    return fig


def plot_recall_by_kind(run: Run) -> Figure | None:
    df = run.records
    kinds, variants = sorted(df["kind"].unique()), variant_order(df["variant"].unique())
    rates = [[recall_rate(df[(df["kind"] == k) & (df["variant"] == v)]) for v in variants] for k in kinds]
    grid = [[r.value if r.n >= MIN_CELL else float("nan") for r in row] for row in rates]
    fig, (ax,) = _figure(1.6 + 1.3 * len(variants), 0.8 + 0.5 * len(kinds))
    ax.set_facecolor("#dddddd")  # NaN cells (too few probes) show the grey background
    shown = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set(
        xticks=range(len(variants)),
        yticks=range(len(kinds)),
        yticklabels=kinds,
        title=f"Recall by fact kind and variant (grey: under {MIN_CELL} probes)",
    )
    ax.set_xticklabels(variants, rotation=30, ha="right", fontsize=8)
    for i, row in enumerate(rates):
        for j, r in enumerate(row):
            if r.n:
                value = grid[i][j]
                dark = value == value and value < 0.6
                ax.text(
                    j,
                    i,
                    f"{r.value:.0%}\nn={r.n}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if dark else "black",
                )
    fig.colorbar(shown, ax=ax)
    return fig


def plot_where_lost(run: Run) -> Figure | None:
    lost = where_lost(run.records)
    parts = ["recalled", "lost: not in summary", "lost: in summary, not recalled", "lost: still verbatim", "errors"]
    fig, (ax,) = _figure(7, 0.9 + 0.5 * len(lost))
    left = pd.Series(0, index=lost.index)
    for part in parts:
        share = lost[part] / lost["probes"]
        ax.barh(lost.index, share, left=left, label=part)
        left += share
    ax.set(xlim=(0, 1), xlabel="share of probes", title="Where facts were lost")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3)
    return fig


def plot_survival(run: Run) -> Figure | None:
    compacted = compacting(run.records)
    fig, (ax,) = _figure(7, 4)
    variants = variant_order(compacted["variant"].unique())
    for i, v in enumerate(variants):
        group = compacted[compacted["variant"] == v]
        through = group["compactions"].clip(upper=3)
        counts = sorted(through.unique())
        _rates_with_intervals(ax, counts, [group[through == c] for c in counts], v, 0.06 * (i - len(variants) / 2))
    ax.set(
        xticks=[0, 1, 2, 3],
        xticklabels=["0", "1", "2", "3+"],
        xlim=(-0.5, 3.5),
        xlabel="compactions the fact went through",
        ylabel="recall (95% interval)",
        ylim=(-0.05, 1.05),
        title="Survival by number of compactions",
    )
    ax.legend(fontsize=8)
    return fig


def plot_summary_costs(run: Run) -> Figure | None:
    costs = summary_costs(run.compactions)
    fig, (left_ax, right_ax) = _figure(9, 3.5, columns=2)
    left_ax.bar(costs.index, costs[COMPRESSION])
    left_ax.axhline(1, color="grey", linestyle="--")
    left_ax.set(title="Median size after / before compaction", ylabel="ratio (below 1 shrinks)")
    right_ax.bar(costs.index, costs[SUMMARY_TOKENS])
    right_ax.set(title="Median summary length", ylabel="tokens")
    for axis in (left_ax, right_ax):
        axis.tick_params(axis="x", labelrotation=30, labelsize=8)
    return fig
