"""Rates of a run's rows, each with its n and a 95% Wilson interval on its effective sample size
(observations of one fact, at several budgets, compactions or repeats, count once: see `stats`).
Recall is per probe answer; retention per fact and case (`retention_rate`), the unit the paired
comparisons and the gate test, so one figure of a variant is the same on every surface."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from ..records.load import failed
from ..records.schema import CONTROL_LABELS, CONTROLS, NO_HISTORY
from .compare import retention_units
from .stats import Rate, rate


def compacting(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of strategies under test (not the ceiling or no-history controls)."""
    return df[~df["strategy"].isin(list(CONTROL_LABELS))]


def fact_clusters(group: pd.DataFrame) -> pd.Series:
    # Observations of one fact (at several budgets, compactions or repeats) count once.
    return group["scenario"].astype(str) + "/" + group["fact"].astype(str)


def recall_rate(group: pd.DataFrame) -> Rate:
    """Recalled / scored: errors are excluded, never counted as forgetting."""
    scored = group[~failed(group, "recall")]
    return rate(scored["verdict"] == "recalled", fact_clusters(scored))


def retention_rate(group: pd.DataFrame) -> Rate:
    """Retention as the gate and `compare` count it: each fact of each case once (a unit), valued at
    the share of the case's summaries after its folding that state it; errors and unknowns excluded.
    n is units; the interval treats the shares as outcomes, on the effective n of fact clusters."""
    units = retention_units(group)
    return rate(units["value"], fact_clusters(units))


def variant_order(variants: Iterable[str]) -> list[str]:
    """Variants under test first, then the ceiling, then the no-history control; each by name."""
    return sorted(variants, key=lambda v: (v in CONTROLS, v == NO_HISTORY, v))
