"""The statistics on crafted data whose right answers are worked out by hand."""

import math

import pandas as pd
import pytest
from scipy import stats as scipy_stats

from harness.analysis.stats import design_effect, minimum_detectable_drop, paired_test, rate, wilson


def crafted_pairs():
    """5 scenarios of 2 facts: scenarios 0-3 each lose one fact, scenario 4 loses none."""
    a = [1, 1] * 5
    b = [0, 1] * 4 + [1, 1]
    clusters = [s for s in range(5) for _ in range(2)]
    return a, b, clusters


def test_paired_test_over_clusters_matches_hand_computation():
    # Cluster sums of b - a: -1, -1, -1, -1, 0 over n = 10 -> difference -0.4. Residuals
    # -1 + 0.8 = -0.2 (four times) and 0.8: sum of squares 0.8; se = sqrt(5/4 * 0.8) / 10 = 0.1;
    # t = -4 on 4 degrees of freedom.
    test = paired_test(*crafted_pairs())
    assert test.difference == pytest.approx(-0.4)
    assert test.p_value == pytest.approx(2 * scipy_stats.t.sf(4, 4))  # 0.0161
    half = scipy_stats.t.ppf(0.975, 4) * 0.1
    assert (test.low, test.high) == (pytest.approx(-0.4 - half), pytest.approx(-0.4 + half))
    assert (test.pairs, test.clusters) == (10, 5)


def test_copies_of_a_fact_add_no_evidence():
    a, b, clusters = crafted_pairs()
    once = paired_test(a, b, clusters)
    thrice = paired_test(a * 3, b * 3, clusters * 3)  # the same facts at three budgets
    assert thrice.pairs == 3 * once.pairs
    assert thrice.p_value == pytest.approx(once.p_value) and thrice.low == pytest.approx(once.low)


def test_fewer_than_five_clusters_give_no_interval_and_no_p():
    test = paired_test([1, 1, 1, 1], [0, 0, 1, 0], ["s1", "s1", "s2", "s2"])
    assert test.difference == pytest.approx(-0.75)
    assert test.judgement is None and test.low is None and test.p_value is None
    assert "too few clusters" in test.describe()


def test_identical_variants_are_not_different():
    a, _, clusters = crafted_pairs()
    test = paired_test(a, a, clusters)
    assert test.difference == 0 and test.p_value == 1.0


def test_design_effect_and_rate_count_a_cluster_of_copies_once():
    # Four facts, each observed five times identically: the evidence is four observations.
    values = [1] * 5 + [0] * 5 + [1] * 5 + [0] * 5
    clusters = [f for f in "abcd" for _ in range(5)]
    assert design_effect(values, clusters) == pytest.approx(5.0)
    r = rate(values, clusters)
    assert (r.hits, r.n, r.clusters) == (10, 20, 4)
    assert (r.low, r.high) == pytest.approx(wilson(2, 4))
    # Independent observations (one per cluster) keep the plain Wilson interval.
    assert rate([1, 0, 1, 0], list("abcd")).low == pytest.approx(wilson(2, 4)[0])
    assert rate([1, 1, 0, 0], list("abcd")).text() == "50% (2/4; 15%-85%)"


def test_minimum_detectable_drop_matches_hand_computation():
    # 40 clusters of 5 independent-looking units (design effect 1): x = c^2 / 200 with
    # c = t(0.975, 39) + t(0.8, 39); d = x / (1 + x).
    values = ([1, 0, 1, 0, 1] + [0, 1, 0, 1, 0]) * 20
    clusters = [s for s in range(40) for _ in range(5)]
    assert design_effect(values, clusters) == pytest.approx(1.0)
    c = scipy_stats.t.ppf(0.975, 39) + scipy_stats.t.ppf(0.8, 39)
    x = c**2 / 200
    assert minimum_detectable_drop(values, clusters, 0.05, 0.8) == pytest.approx(x / (1 + x))
    # More units detect smaller drops; clustered outcomes detect larger ones; too few clusters: None.
    assert minimum_detectable_drop(values * 4, clusters * 4, 0.05, 0.8) < x / (1 + x)
    clustered = [v for s in range(40) for v in [s % 2] * 5]
    assert minimum_detectable_drop(clustered, clusters, 0.05, 0.8) > 3 * x / (1 + x)
    assert minimum_detectable_drop([1, 0, 1], ["a", "b", "c"], 0.05, 0.8) is None


def test_wilson_is_the_textbook_interval():
    low, high = wilson(5, 10)
    assert (low, high) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    assert wilson(0, 0) == (0.0, 1.0)
    assert math.isnan(rate(pd.Series([], dtype=float), pd.Series([], dtype=str)).value)


@pytest.mark.parametrize("n", [3, 7, 11, 50])
def test_wilson_bounds_are_exact_at_the_ends(n):
    assert wilson(0, n)[0] == 0.0 and wilson(n, n)[1] == 1.0  # an error bar never goes negative


def test_a_paired_interval_of_shares_stays_within_100_points():
    """Six clusters, five losing everything and one a little: the t interval reaches past -1; the
    difference of two shares cannot, so the interval stops there and the test is unchanged."""
    clusters = pd.Series(["s1", "s2", "s3", "s4", "s5", "s6"])
    a = pd.Series([1.0, 1.0, 1.0, 1.0, 1.0, 0.5])
    b = pd.Series([0.0, 0.0, 0.0, 0.0, 0.0, 0.4])
    test = paired_test(a, b, clusters)
    diffs = b - a
    se = diffs.std(ddof=1) / math.sqrt(6)
    t_low = diffs.mean() - scipy_stats.t.ppf(0.975, 5) * se
    assert t_low < -1.0  # what was printed before (-112 points in the frameworks table)
    assert test.low == -1.0 and test.high == pytest.approx(diffs.mean() + scipy_stats.t.ppf(0.975, 5) * se)
    assert test.p_value == pytest.approx(2 * scipy_stats.t.sf(abs(diffs.mean() / se), 5))
    up = paired_test(b, a, clusters)
    assert up.high == 1.0 and up.low == pytest.approx(-test.high)
