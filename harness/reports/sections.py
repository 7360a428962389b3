"""The report's sections: `TABLES` lists them in order, each with a title, a builder and optionally
a plot. Every format (`formats`: text, markdown, CSV, HTML) iterates it, so a new table is a
builder (`tables`) and an entry here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from ..analysis.action_probes import action_probe_table, informative_share, uninformative
from ..analysis.gate import manifest_settings
from ..records import Run
from ..records.load import prompted
from .comparisons import collateral_loss, comparison_table, recovery_arm
from .plots import plot_recall_by_budget, plot_recall_by_kind, plot_summary_costs, plot_survival, plot_where_lost
from .tables import (
    answer_types,
    artifact_trail,
    behaviour_at_the_cut,
    mean_f1_by_budget,
    next_action_fidelity,
    next_action_substitutes,
    prompt_sensitivity,
    recall_by_answer_type,
    recall_by_budget,
    recall_by_kind,
    retention_by_budget,
    retention_by_kind,
    retention_per_prompt,
    set_credit,
    summary_costs,
    survival_by_compactions,
    where_lost,
)

if TYPE_CHECKING:  # matplotlib is imported when a plot is drawn
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Table:
    """One section of every report format; a builder that returns an empty table leaves it out."""

    title: str
    build: Callable[[Run], pd.DataFrame]
    plot: Callable[[Run], Figure | None] | None = None  # None from the plot: nothing to draw


def _with_records(build: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[Run], pd.DataFrame]:
    """A builder over probe records; a run without probes (retention only) has none of these tables."""
    return lambda run: build(run.records) if not run.records.empty else pd.DataFrame()


def _retention_per_prompt(run: Run) -> pd.DataFrame:
    if run.retention.empty:
        return pd.DataFrame()
    settings = manifest_settings(run.manifest)
    return retention_per_prompt(run.retention, run.compactions, settings.alpha, settings.power)


def _prompt_sensitivity(run: Run) -> pd.DataFrame:
    control = run.manifest.control_prompt
    return (
        prompt_sensitivity(prompted(run.retention), control) if control and not run.retention.empty else pd.DataFrame()
    )


def _answer_types(df: pd.DataFrame) -> pd.DataFrame:
    return recall_by_answer_type(df) if (answer_types(df) != "literal").any() else pd.DataFrame()


TABLES = [
    Table(
        "Summary retention by prompt and budget",
        lambda run: retention_by_budget(run.retention) if not run.retention.empty else pd.DataFrame(),
    ),
    Table(
        "Recall by summary prompt and budget",
        lambda run: recall_by_budget(run.records, run.compactions) if not run.records.empty else pd.DataFrame(),
        plot_recall_by_budget,
    ),
    Table("Paired comparisons (same facts; tested over scenarios, as the gate)", comparison_table),
    Table(
        "Collateral loss: recall of facts still verbatim after compaction, against the same facts in the ceiling",
        collateral_loss,
    ),
    Table("Retention per prompt, and the smallest drop this run detects", _retention_per_prompt),
    Table(
        "Compression and cost per prompt",
        lambda run: summary_costs(run.compactions, run.manifest.wave_seconds),
        plot_summary_costs,
    ),
    Table("Prompt sensitivity: retention against the keeps-nothing control", _prompt_sensitivity),
    Table(
        "Summary retention by fact kind",
        lambda run: retention_by_kind(run.retention) if not run.retention.empty else pd.DataFrame(),
    ),
    Table("Recall by fact kind", _with_records(recall_by_kind), plot_recall_by_kind),
    Table(
        "Set facts (files changed, commands run): partial credit", lambda run: set_credit(run.retention, run.records)
    ),
    Table(
        "The artifact trail at every cut: share of the files changed and commands run so far that the summary names",
        lambda run: artifact_trail(run.retention) if not run.retention.empty else pd.DataFrame(),
    ),
    Table(
        "Next-action fidelity: does the compacted agent take the step the full-history agent takes?",
        lambda run: (
            next_action_fidelity(run.actions, manifest_settings(run.manifest).alpha)
            if not run.actions.empty
            else pd.DataFrame()
        ),
    ),
    Table(
        "Behaviour at the cut: how often the next step goes against what the history says",
        lambda run: (
            behaviour_at_the_cut(run.actions, manifest_settings(run.manifest).alpha)
            if not run.actions.empty
            else pd.DataFrame()
        ),
    ),
    Table(
        "Where the compacted agent went instead (the most frequent different steps)",
        lambda run: next_action_substitutes(run.actions) if not run.actions.empty else pd.DataFrame(),
    ),
    Table(
        "Action probes: can each kind tell? (informative: the full history's step complies, no history's does not)",
        lambda run: informative_share(run.action_probes),
    ),
    Table(
        "Action probes: what the agent does at a decision point, over the informative probes",
        lambda run: action_probe_table(run.action_probes),
    ),
    Table("Action probes that cannot tell, and why", lambda run: uninformative(run.action_probes)),
    Table(
        "The recovery arm: recall when the agent may search what compaction folded, and what searching cost",
        recovery_arm,
    ),
    Table("Recall by answer type", _with_records(_answer_types)),
    Table("Mean token F1 of free-form answers (LoCoMo's metric)", _with_records(mean_f1_by_budget)),
    Table("Where facts were lost", _with_records(where_lost), plot_where_lost),
    Table("Survival by number of compactions", _with_records(survival_by_compactions), plot_survival),
]


def tables(run: Run) -> list[tuple[Table, pd.DataFrame]]:
    """The tables this run has data for, in order, each with its built data."""
    built = [(table, table.build(run)) for table in TABLES]
    return [(table, data) for table, data in built if not data.empty]
