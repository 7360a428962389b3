"""Paired comparisons, as the report, `harness compare` and the gate show them: every two variants
of a run on the same facts, the headline's best variant, a comparison in words, and the cells of
a paired test (difference with its interval, p, pairs in scenarios), formatted once."""

from __future__ import annotations

import itertools

import pandas as pd

from ..analysis.compare import VARIANT_KEY, Comparison, pair_units, units
from ..analysis.gate import manifest_settings
from ..analysis.rates import fact_clusters, variant_order
from ..analysis.stats import PairedTest, minimum_detectable_drop, rate
from ..errors import plural
from ..records import Run
from ..records.schema import CEILING, CONTROLS, METRICS, RECOVERY


def test_cells(t: PairedTest, difference: str, digits: str, untested: str) -> dict[str, str]:
    """The columns of one paired test: B minus A with its 95% interval (or why there is none), p,
    and pairs in scenarios. `digits`: the format of a share, such as ".1%"."""
    judged = t.judgement
    return {
        difference: (
            f"{t.difference:+{digits}} ({judged.low:+{digits}} to {judged.high:+{digits}})"
            if judged
            else f"{t.difference:+{digits}} ({untested})"
        ),
        "p": f"{judged.p_value:.3g}" if judged else "n/a",
        "pairs (scenarios)": f"{t.pairs} ({t.clusters})",
    }


CEILING_KEY = ["scenario", "fact", "repeat"]  # the ceiling does not depend on the budget


def _units(run: Run, metric: str) -> dict[str, pd.DataFrame]:
    """Per variant (prompt or strategy), its units of `metric` (see `compare`)."""
    rows = run.rows(metric)
    return (
        {v: units(rows[rows["variant"] == v], metric) for v in variant_order(rows["variant"].unique())}
        if len(rows)
        else {}
    )


def paired_comparisons(run: Run) -> list[Comparison]:
    """Every two variants under test, on each metric, paired fact by fact; and on recall each
    against the ceiling (the same facts with no compaction). Tested over scenarios, as the gate."""
    comparisons = []
    for metric in METRICS:
        by_variant = _units(run, metric)
        tested = [v for v in by_variant if v not in CONTROLS]
        for a, b in itertools.combinations(tested, 2):
            comparisons.append(pair_units(by_variant[a], by_variant[b], a, b, metric, VARIANT_KEY))
        if metric == "recall" and CEILING in by_variant:
            comparisons += [
                pair_units(by_variant[CEILING], by_variant[v], CEILING, v, metric, CEILING_KEY) for v in tested
            ]
    return [c for c in comparisons if c.n]


def collateral_loss(run: Run) -> pd.DataFrame:
    """Recall of facts still verbatim at probe time in cases whose older part was compacted, per
    variant, against the same facts in the ceiling: what compaction costs the facts it did not
    fold (a summary in front of them can crowd them out). Paired and tested over scenarios."""
    records, compactions = run.records, run.compactions
    if records.empty or CEILING not in set(records["variant"]) or compactions.empty:
        return pd.DataFrame()
    compacted = set(compactions.loc[compactions["folded_messages"].fillna(0) > 0, "case"])
    ceiling = units(records[records["variant"] == CEILING], "recall")
    alpha = manifest_settings(run.manifest).alpha
    rows = {}
    for variant in variant_order(records["variant"].unique()):
        if variant in CONTROLS:
            continue
        verbatim = records[
            (records["variant"] == variant) & (records["location"] == "verbatim") & records["case"].isin(compacted)
        ]
        c = pair_units(ceiling, units(verbatim, "recall"), CEILING, variant, "recall", CEILING_KEY)
        if c.n:
            rows[variant] = {
                "verbatim facts": f"{c.test.mean_b:.0%}",
                "same facts, ceiling": f"{c.test.mean_a:.0%}",
                **test_cells(c.test, "difference (95% CI)", ".1%", "no interval"),
                "reading": _reading(c, alpha),
            }
    return pd.DataFrame.from_dict(rows, orient="index")


def _reading(c: Comparison, alpha: float) -> str:
    if (judged := c.test.judgement) is None:
        return "too few scenarios to tell"
    if judged.p_value < alpha:
        return f"{c.label_b if c.difference > 0 else c.label_a} higher"
    return "not distinguishable from noise"


def comparison_table(run: Run) -> pd.DataFrame:
    alpha = manifest_settings(run.manifest).alpha
    rows = {}
    for c in paired_comparisons(run):
        t = c.test
        # The row reads in the direction of its number: "seed minus bullets", seed's figure first.
        rows[f"{c.metric}: {c.label_b} minus {c.label_a}"] = {
            "first": f"{c.label_b} {t.mean_b:.0%}",
            "second": f"{c.label_a} {t.mean_a:.0%}",
            **test_cells(t, "first minus second (95% CI)", ".1%", "no interval"),
            "reading": _reading(c, alpha),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def ranked(run: Run) -> tuple[str, dict[str, pd.DataFrame]]:
    """The headline metric (recall, or retention for a run without probes) and the variants under
    test with their units, best first."""
    metric = "recall" if not run.records.empty else "retention"
    tested = {v: u for v, u in _units(run, metric).items() if v not in CONTROLS and len(u)}
    return metric, dict(sorted(tested.items(), key=lambda item: item[1]["value"].mean(), reverse=True))


def best_variant(run: Run) -> str | None:
    """One line: the best variant under test on recall (retention when the run has no probes), by
    how much it leads the next, and whether that is distinguishable from noise at the gate's alpha,
    with the smallest difference this run could detect at the gate's power."""
    metric, by_variant = ranked(run)
    if not by_variant:
        return None
    settings = manifest_settings(run.manifest)
    alpha, power = settings.alpha, settings.power
    order = list(by_variant)
    best = order[0]
    line = f"Best on {metric}: {best} ({by_variant[best]['value'].mean():.0%})"
    if len(order) == 1:
        return line + "; the only variant under test"
    c = pair_units(by_variant[order[1]], by_variant[best], order[1], best, metric, VARIANT_KEY)
    t = c.test
    if not t.pairs:
        return (
            f"{line}; it shares no measured fact with {order[1]} (they compacted different scenarios), "
            "so the two are not compared"
        )
    lead = (
        f"{line}, {t.difference * 100:+.1f} points over {order[1]} on the same {plural(t.pairs, 'fact')} in "
        f"{plural(t.clusters, 'scenario')}"
    )
    if (judged := t.judgement) is None:
        return f"{lead}: too few scenarios (under 5) to tell a difference from noise"
    detectable = minimum_detectable_drop(by_variant[order[1]]["value"], by_variant[order[1]]["scenario"], alpha, power)
    return (
        f"{lead} (95% CI {judged.low * 100:+.1f} to {judged.high * 100:+.1f}, p = {judged.p_value:.3g}): "
        f"{'distinguishable' if judged.p_value < alpha else 'not distinguishable'} from noise at alpha {alpha:g}; "
        f"this run detects differences of {detectable:.1%} or more with {power:.0%} power"
    )


def describe(comparison: Comparison, flips: int = 20) -> str:
    """A plain-text account: rates, difference with its interval and p-value, flipped facts."""
    c = comparison
    if c.n == 0:
        return f"{c.metric}: {c.label_a} vs {c.label_b}: no paired units"
    lines = [
        f"{c.metric}: {c.label_a}: {c.rate_a:.0%}   {c.label_b}: {c.rate_b:.0%}",
        f"difference ({c.label_b} - {c.label_a}): {c.test.describe()}; "
        f"{plural(len(c.lost), 'fact')} lost, {len(c.gained)} gained",
    ]
    for title, rows in ((f"kept better by {c.label_a}", c.lost), (f"kept better by {c.label_b}", c.gained)):
        if len(rows):
            lines.append(f"{title}:")
            for row in rows.head(flips).to_dict("records"):
                detail = f"expected {row['expected_a']!r}"
                if c.metric == "recall":
                    b_lost = row["hit_a"] > row["hit_b"]
                    detail += (
                        f"; {c.label_b if b_lost else c.label_a} answered "
                        f"{str(row['answer_b'] if b_lost else row['answer_a'])[:80]!r}"
                    )
                else:
                    detail += f"; retained in {row['hit_a']:.0%} vs {row['hit_b']:.0%} of summaries"
                lines.append(f"  {row['scenario']}/{row['fact']} (budget {row['budget']}): {detail}")
            if len(rows) > flips:
                lines.append(f"  ... and {len(rows) - flips} more")
    return "\n".join(lines)


def _prompt_tokens(records: pd.DataFrame) -> float:
    """Mean prompt tokens a probe sent, searches included: `input_tokens` plus the server's cache
    reads, which both Anthropic's API and llama.cpp count apart from it."""
    cached = records["cache_read_tokens"].fillna(0) if "cache_read_tokens" in records else 0
    return float((records["input_tokens"] + cached).mean())


def recovery_arm(run: Run) -> pd.DataFrame:
    """Per variant with the recovery arm (`<strategy>+recovery`): its recall against the same facts
    under the same strategy and prompt without it (paired, tested over scenarios), how often the
    agent searched and found the value, and what searching cost per probe."""
    records = run.records
    if records.empty or not records["strategy"].str.endswith(RECOVERY).any():
        return pd.DataFrame()
    alpha = manifest_settings(run.manifest).alpha
    rows = {}
    for variant in variant_order(records.loc[records["strategy"].str.endswith(RECOVERY), "variant"].unique()):
        mine = records[records["variant"] == variant]
        strategy, prompt = mine["strategy"].iloc[0], mine["prompt"].iloc[0]
        base = records[
            (records["strategy"] == strategy.removesuffix(RECOVERY))
            & (records["prompt"].isna() if pd.isna(prompt) else records["prompt"] == prompt)
        ]
        c = pair_units(units(base, "recall"), units(mine, "recall"), "without", variant, "recall", VARIANT_KEY)
        scored = mine[mine["searches"].notna()]
        clusters = fact_clusters(scored)
        searched = scored[scored["searches"] > 0]
        rows[variant] = {
            "recall": f"{c.test.mean_b:.0%}" if c.n else "n/a",
            "same facts without": f"{c.test.mean_a:.0%}" if c.n else "n/a",
            **test_cells(c.test, "difference (95% CI)", ".1%", "no interval"),
            "reading": _reading(c, alpha) if c.n else "nothing to pair",
            "probes that searched": rate(scored["searches"] > 0, clusters).text() if len(scored) else "n/a",
            "search found the value": (
                rate(searched["found_by_search"].astype(bool), fact_clusters(searched)).text()
                if len(searched)
                else "n/a"
            ),
            "searches per probe": f"{scored['searches'].mean():.2f}" if len(scored) else "n/a",
            "requests per probe": f"{scored['requests'].mean():.2f}" if len(scored) else "n/a",
            "prompt tokens per probe, with / without": f"{_prompt_tokens(mine):,.0f} / {_prompt_tokens(base):,.0f}",
        }
    return pd.DataFrame.from_dict(rows, orient="index")
