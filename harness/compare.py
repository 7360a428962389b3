"""Paired comparison of two sets of records: the same facts, probed under two variants.

Records pair when scenario, fact, budget, strategy and repeat agree. The recall difference is
tested with an exact McNemar test on the discordant pairs (facts only one side recalled), and
given a bootstrap interval that resamples whole scenarios (facts of one scenario are not
independent). The facts that flipped each way are listed, so users see *what* a prompt loses.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np
import pandas as pd

PAIR_KEY = ["scenario", "fact", "budget", "strategy", "repeat"]
BOOTSTRAP_ITERATIONS = 2000


@dataclass
class Comparison:
    label_a: str
    label_b: str
    pairs: pd.DataFrame  # one row per paired fact, columns suffixed _a and _b

    @property
    def n(self) -> int:
        return len(self.pairs)

    @property
    def recall_a(self) -> float:
        return float(self.pairs["hit_a"].mean()) if self.n else float("nan")

    @property
    def recall_b(self) -> float:
        return float(self.pairs["hit_b"].mean()) if self.n else float("nan")

    @property
    def difference(self) -> float:
        """Recall of B minus recall of A, on the same facts."""
        return self.recall_b - self.recall_a

    @property
    def lost(self) -> pd.DataFrame:
        """Facts A recalled and B did not."""
        return self.pairs[self.pairs["hit_a"] & ~self.pairs["hit_b"]]

    @property
    def gained(self) -> pd.DataFrame:
        return self.pairs[~self.pairs["hit_a"] & self.pairs["hit_b"]]

    @property
    def p_value(self) -> float:
        return mcnemar_exact(len(self.lost), len(self.gained))

    def interval(self, seed: int = 0) -> tuple[float, float]:
        return bootstrap_interval(self.pairs, seed=seed)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: under no difference, each discordant pair is a fair coin."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def bootstrap_interval(pairs: pd.DataFrame, iterations: int = BOOTSTRAP_ITERATIONS,
                       seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of recall(B) - recall(A), resampling whole scenarios."""
    if pairs.empty:
        return (float("nan"), float("nan"))
    per_scenario = pairs.groupby("scenario").agg(a=("hit_a", "sum"), b=("hit_b", "sum"), n=("hit_a", "size"))
    counts = per_scenario.to_numpy(dtype=float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(counts), size=(iterations, len(counts)))
    totals = counts[picks].sum(axis=1)  # iterations x (a, b, n)
    differences = (totals[:, 1] - totals[:, 0]) / totals[:, 2]
    low, high = np.percentile(differences, [2.5, 97.5])
    return (float(low), float(high))


def pair(a: pd.DataFrame, b: pd.DataFrame, label_a: str, label_b: str) -> Comparison:
    """Pair two sets of records fact by fact; pairs with an error on either side are left out."""
    columns = PAIR_KEY + ["verdict", "answer", "expected", "kind"]
    left = a.reindex(columns=columns).astype({"budget": "object"})
    right = b.reindex(columns=columns).astype({"budget": "object"})
    left["budget"], right["budget"] = left["budget"].fillna("-"), right["budget"].fillna("-")
    pairs = left.merge(right, on=PAIR_KEY, suffixes=("_a", "_b"))
    pairs = pairs[(pairs["verdict_a"] != "error") & (pairs["verdict_b"] != "error")].copy()
    pairs["hit_a"] = pairs["verdict_a"] == "recalled"
    pairs["hit_b"] = pairs["verdict_b"] == "recalled"
    return Comparison(label_a, label_b, pairs.reset_index(drop=True))


def describe(comparison: Comparison, flips: int = 20) -> str:
    """A plain-text account: rates, difference with its interval and p-value, flipped facts."""
    c = comparison
    if c.n == 0:
        return f"{c.label_a} vs {c.label_b}: no paired probes"
    low, high = c.interval()
    lines = [
        f"{c.label_a}: {c.recall_a:.0%}   {c.label_b}: {c.recall_b:.0%}   on {c.n} paired probes",
        f"difference ({c.label_b} - {c.label_a}): {c.difference:+.1%}, 95% bootstrap interval over scenarios "
        f"[{low:+.1%}, {high:+.1%}]; exact McNemar p = {c.p_value:.3g} "
        f"({len(c.lost)} facts lost, {len(c.gained)} gained)",
    ]
    for title, rows in ((f"recalled by {c.label_a}, not by {c.label_b}", c.lost),
                        (f"recalled by {c.label_b}, not by {c.label_a}", c.gained)):
        if len(rows):
            lines.append(f"{title}:")
            for row in rows.head(flips).itertuples():
                lines.append(f"  {row.scenario}/{row.fact} (budget {row.budget}): expected {row.expected_a!r}; "
                             f"{c.label_b if row.hit_a else c.label_a} answered {str(row.answer_b if row.hit_a else row.answer_a)[:80]!r}")
            if len(rows) > flips:
                lines.append(f"  ... and {len(rows) - flips} more")
    return "\n".join(lines)
