"""Statistics that count evidence once.

Observations of one fact are not independent of each other (the same fact at several budgets
or compactions), nor are the facts of one conversation (they share its summaries). So:

- a rate's interval is a Wilson interval on the *effective* sample size: n divided by the
  design effect of the clusters the caller names (at least 1; exactly 1 when no cluster holds
  more than one observation);
- a paired difference is tested over clusters (scenarios): the per-cluster sums of differences
  with a cluster-robust standard error and a t distribution on K - 1 degrees of freedom
  (a paired t-test on cluster totals), which is exact in the limit and honest for few clusters;
- with fewer than `MIN_CLUSTERS` clusters no interval or p-value is given: too few to judge;
- the minimum detectable drop is the difference such a test finds with the given power at
  level alpha, from the baseline's size and cluster structure alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from ..errors import plural

MIN_CLUSTERS = 5  # fewer clusters give no usable estimate of the between-cluster variance


def wilson(hits: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval: sensible at 0, at n, and for small n, unlike p +- 2se."""
    if n <= 0:
        return (0.0, 1.0)
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # Exactly 0 and 1 at the ends (rounding would leave the bound a hair inside the point).
    return (0.0 if hits <= 0 else max(0.0, centre - half), 1.0 if hits >= n else min(1.0, centre + half))


def _cluster_sums(values: pd.Series, clusters: pd.Series) -> pd.DataFrame:
    frame = pd.DataFrame({"y": np.asarray(values, dtype=float), "cluster": np.asarray(clusters)})
    return frame.groupby("cluster", sort=False)["y"].agg(["sum", "size"])


def design_effect(values: pd.Series, clusters: pd.Series) -> float:
    """Variance of the mean under clustering over its variance if every value were independent
    (at least 1). Values are 0/1 or shares."""
    sums = _cluster_sums(values, clusters)
    n, mean = sums["size"].sum(), sums["sum"].sum() / sums["size"].sum()
    independent = float(((np.asarray(values, dtype=float) - mean) ** 2).sum())
    clustered = float(((sums["sum"] - mean * sums["size"]) ** 2).sum())
    return max(1.0, clustered / independent) if independent > 0 and n > 0 else 1.0


@dataclass(frozen=True)
class Rate:
    hits: float
    n: int  # observations
    clusters: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.hits / self.n if self.n else float("nan")

    def text(self) -> str:
        if not self.n:
            return "n/a"
        hits = f"{self.hits:.0f}" if float(self.hits).is_integer() else f"{self.hits:.1f}"
        return f"{self.value:.0%} ({hits}/{self.n}; {self.low:.0%}-{self.high:.0%})"


def rate(values: pd.Series, clusters: pd.Series) -> Rate:
    """The mean of 0/1 values, with a Wilson interval on the effective sample size."""
    values = pd.Series(np.asarray(values, dtype=float))
    n = len(values)
    if n == 0:
        return Rate(0, 0, 0, 0.0, 1.0)
    hits = float(values.sum())
    effective = n / design_effect(values, clusters)
    low, high = wilson(hits / n * effective, effective)
    return Rate(hits, n, pd.Series(np.asarray(clusters)).nunique(), low, high)


@dataclass(frozen=True)
class Judgement:
    """A judged difference's 95% interval and its p-value."""

    low: float
    high: float
    p_value: float


@dataclass(frozen=True, kw_only=True)
class PairedTest:
    """B minus A on paired units, tested over clusters."""

    mean_a: float
    mean_b: float
    pairs: int
    clusters: int
    judgement: Judgement | None = None  # None: too few clusters for an interval or a p-value

    @property
    def difference(self) -> float:
        return self.mean_b - self.mean_a

    @property
    def low(self) -> float | None:
        return self.judgement.low if self.judgement else None

    @property
    def high(self) -> float | None:
        return self.judgement.high if self.judgement else None

    @property
    def p_value(self) -> float | None:
        return self.judgement.p_value if self.judgement else None

    def describe(self) -> str:
        if (judged := self.judgement) is None:
            return (
                f"{self.difference:+.1%} on {plural(self.pairs, 'pair')} in {plural(self.clusters, 'cluster')}: "
                f"too few clusters (under {MIN_CLUSTERS}) for an interval or a test"
            )
        return (
            f"{self.difference:+.1%} (95% CI {judged.low:+.1%} to {judged.high:+.1%}; p = {judged.p_value:.3g}; "
            f"{plural(self.pairs, 'pair')} in {plural(self.clusters, 'cluster')})"
        )


def paired_test(a: pd.Series, b: pd.Series, clusters: pd.Series, confidence: float = 0.95) -> PairedTest:
    """Paired difference mean(b) - mean(a) of shares (values in [0, 1]) with a cluster-robust t-test and
    interval. The interval is truncated to the differences shares can have, [-1, +1]: on few clusters the
    t interval can reach past them (-112 to -31 points), and the true difference is never there, so
    truncating keeps the coverage and the test."""
    before, after = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    sums = _cluster_sums(after - before, clusters)
    n, k = int(sums["size"].sum()), len(sums)
    if n == 0:
        return PairedTest(mean_a=float("nan"), mean_b=float("nan"), pairs=0, clusters=0)
    result = PairedTest(mean_a=float(before.mean()), mean_b=float(after.mean()), pairs=n, clusters=k)
    if k < MIN_CLUSTERS:
        return result
    difference = float(sums["sum"].sum() / n)
    residuals = sums["sum"] - difference * sums["size"]
    se = math.sqrt(k / (k - 1) * float((residuals**2).sum())) / n
    if se == 0:  # every cluster moved by exactly the same share: no noise at all
        return replace(result, judgement=Judgement(difference, difference, 1.0 if difference == 0 else 0.0))
    quantile = scipy_stats.t.ppf(0.5 + confidence / 2, k - 1)
    p = float(2 * scipy_stats.t.sf(abs(difference / se), k - 1))
    low, high = max(difference - quantile * se, -1.0), min(difference + quantile * se, 1.0)
    return replace(result, judgement=Judgement(low, high, p))


def minimum_detectable_drop(values: pd.Series, clusters: pd.Series, alpha: float, power: float) -> float | None:
    """The smallest drop from the baseline's rate that `paired_test` detects at level `alpha` with
    probability `power`, from the baseline alone: N units in K clusters whose outcomes cluster with
    the baseline's design effect D. A drop d made of lost units only gives paired differences of
    variance d(1 - d) per unit, so d solves d = c * sqrt(D d (1 - d) / N), with c the sum of the
    two t quantiles on K - 1 degrees of freedom: d = x / (1 + x), x = c^2 D / N. Flips in both
    directions (noise) add variance, so this is the best case. None: fewer than MIN_CLUSTERS clusters."""
    sums = _cluster_sums(values, clusters)
    return detectable_drop(int(sums["size"].sum()), len(sums), design_effect(values, clusters), alpha, power)


def detectable_drop(units: int, clusters: int, design: float, alpha: float, power: float) -> float | None:
    """`minimum_detectable_drop` from the counts alone (before any run: design effect 1 is the best case)."""
    if clusters < MIN_CLUSTERS or units == 0:
        return None
    quantiles = scipy_stats.t.ppf(1 - alpha / 2, clusters - 1) + scipy_stats.t.ppf(power, clusters - 1)
    x = quantiles**2 * design / units
    return float(x / (1 + x))
