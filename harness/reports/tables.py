"""The report's table builders: each turns a run's rows into one table (listed, with its plot, in
`sections.TABLES`). Every rate carries its n and a 95% Wilson interval on its effective sample
size (observations of one fact count once). Two metrics: *retention* (does the summary still
state the fact? no probe needed) and *recall* (does the probe answer state it?).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from ..analysis.compare import behaviour_floor, floor_drop, retention_units, sensitivity
from ..analysis.rates import compacting, fact_clusters, recall_rate, retention_rate, variant_order
from ..analysis.stats import PairedTest, minimum_detectable_drop, paired_test, rate
from ..errors import plural
from ..records.load import budget_order, failed, overflowed, shrinks, summaries
from ..records.schema import NO_SUMMARY, OVERFLOWED, Behaviour


def rate_text(group: pd.DataFrame) -> str:
    return recall_rate(group).text()


def _by_budget(df: pd.DataFrame, cell: Callable[[pd.DataFrame], str]) -> pd.DataFrame:
    """Rows: summary prompts and strategies; columns: budgets; `cell` describes each group.
    Controls do not depend on the budget, so their cell is repeated in every column, to read
    beside each variant."""
    budgets = sorted(df["budget"].dropna().unique(), key=budget_order) or ["any"]
    rows = {}
    for variant in variant_order(df["variant"].unique()):
        group = df[df["variant"] == variant]
        rows[variant] = {
            f"budget {b}": cell(group if group["budget"].isna().all() else group[group["budget"] == b]) for b in budgets
        }
    return pd.DataFrame.from_dict(rows, orient="index")


NOT_COMPACTED = "not compacted"  # a strategy that never fired: its answers are the full history's, not a score


def recall_by_budget(df: pd.DataFrame, compactions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Recall per variant and budget; a compacting variant that never folded anything at a budget
    reads "not compacted" there (its probes were answered from the whole history)."""
    fired = set()
    if compactions is not None and not compactions.empty:
        folded = compactions[compactions["folded_messages"].fillna(0) > 0]
        fired = set(zip(folded["variant"], folded["budget"]))

    def cell(group: pd.DataFrame) -> str:
        tested = compacting(group)
        if (
            compactions is not None
            and len(tested)
            and not any((v, b) in fired for v, b in zip(tested["variant"], tested["budget"]))
        ):
            return f"{NOT_COMPACTED} ({plural(len(tested), 'probe')})"
        return rate_text(group)

    table = _by_budget(df, cell)
    _failures(table, df, "recall")
    return table


def _failures(table: pd.DataFrame, rows: pd.DataFrame, metric: str) -> None:
    """The columns of what could not be measured, per variant: errors, and (when any) requests
    that exceeded the context window, each its own outcome."""
    by_variant = [rows[rows["variant"] == v] for v in table.index]
    overflows = [int(overflowed(group, metric).sum()) for group in by_variant]
    table["errors"] = [int(failed(group, metric).sum()) - n for group, n in zip(by_variant, overflows)]
    if any(overflows):
        table[OVERFLOWED] = overflows


def retention_by_budget(retention: pd.DataFrame) -> pd.DataFrame:
    """Per summary prompt and budget: the share of (fact, compaction) observations whose summary
    states the fact's value (of its subject), n = observations."""
    table = _by_budget(retention, lambda group: retention_rate(group).text())
    _failures(table, retention, "retention")
    return table


PER_TOKEN = "facts stated per 1,000 summary tokens"


def retention_per_prompt(
    retention: pd.DataFrame, compactions: pd.DataFrame, alpha: float, power: float
) -> pd.DataFrame:
    """Per summary prompt over all budgets: retention, the smallest retention drop this run could
    detect (the gate's power check), and retention per summary token, so loss and compression
    read together (a summary that keeps everything by not compressing is no improvement)."""
    rows = {}
    made = summaries(compactions)
    for variant in variant_order(retention["variant"].unique()):
        group = retention[retention["variant"] == variant]
        units = retention_units(group)
        drop = minimum_detectable_drop(units["value"], units["scenario"], alpha, power) if len(units) else None
        tokens = made.loc[made["variant"] == variant, "output_tokens"].sum()
        stated = (group["retained"] == True).sum()  # noqa: E712 (None is unknown, not False)
        rows[variant] = {
            "retention": retention_rate(group).text(),
            f"detectable drop (alpha {alpha:g}, power {power:.0%})": f"{drop:.1%}"
            if drop is not None
            else "too few scenarios",
            PER_TOKEN: f"{1000 * stated / tokens:.1f} ({stated:,} in {tokens:,.0f})"
            if tokens
            else "no tokens counted (no model call)",
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def retention_by_kind(retention: pd.DataFrame) -> pd.DataFrame:
    """Per variant and fact kind (recall, artifact, continuation, decision, ...): retention; for the
    kinds that hold rules, how many of their readings the summaries weakened or reversed."""
    table = {
        v: {kind: retention_rate(g).text() + _rule_readings(g) for kind, g in group.groupby("kind")}
        for v in variant_order(retention["variant"].unique())
        for group in [retention[retention["variant"] == v]]
    }
    return pd.DataFrame(table).fillna("")


def _rule_readings(group: pd.DataFrame) -> str:
    """ "; 2 weakened, 1 contradicted" of a kind's readings (each summary's of each fact), when any."""
    if "reading" not in group:
        return ""
    counts = group["reading"].value_counts()
    said = [f"{counts[r]} {r}" for r in ("weakened", "contradicted") if counts.get(r, 0)]
    return f"; {', '.join(said)}" if said else ""


def set_credit(retention: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """Set facts (match: set; the files changed, the commands run): the mean share of their items
    that summaries and probe answers name (partial credit), and the paths answers name that were
    never touched (extras). n: facts of cases (each counted once)."""
    rows: dict[str, dict[str, str]] = {}
    if "credit" in retention:
        credited = retention[retention["credit"].notna()]
        for variant, group in credited.groupby("variant"):
            per_unit = group.groupby(["case", "fact"])["credit"].mean()
            rows.setdefault(str(variant), {})["summaries: mean share of items"] = (
                f"{per_unit.mean():.0%} (n={len(per_unit)})"
            )
    if not records.empty and "extras" in records:
        sets = records[records["extras"].notna() & ~failed(records, "recall")]
        for variant, group in sets.groupby("variant"):
            rows.setdefault(str(variant), {}).update(
                {
                    "probe answers: mean share of items": f"{group['f1'].mean():.0%} (n={len(group)})",
                    "untouched paths named per answer": f"{group['extras'].mean():.2f}",
                }
            )
    return (
        pd.DataFrame.from_dict(rows, orient="index").reindex(variant_order(rows)).fillna("") if rows else pd.DataFrame()
    )


def artifact_trail(retention: pd.DataFrame) -> pd.DataFrame:
    """The artifact trail at every cut: per variant and compaction of a case (its 1st, 2nd, ...), the
    share of the files changed and commands run so far (the items folded by then) that the summary
    names, with n (set facts of cases) and its interval. Sets that grow are scored on the items
    planted before each cut, so the trail is measured where it is lost, not only at the end."""
    if "credit" not in retention:
        return pd.DataFrame()
    trail = compacting(retention[(retention["kind"] == "artifact") & retention["credit"].notna()]).copy()
    if trail.empty:
        return trail
    trail["cut"] = trail.groupby("case")["compaction"].rank(method="dense").astype(int)
    table = {
        v: {f"cut {cut}": rate(g["credit"], fact_clusters(g)).text() for cut, g in group.groupby("cut")}
        for v, group in ((v, trail[trail["variant"] == v]) for v in variant_order(trail["variant"].unique()))
    }
    return pd.DataFrame(table).T.fillna("")


def next_action_fidelity(actions: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per variant: how often the compacted agent takes the step the full-history agent takes
    (exact; same tool; same target), and the log's own step; the noise floor (the full-history agent
    against its own second sample) and the drop from it, paired over scenarios; steps read from text
    and ceilings over the context window. n: cuts (a compaction where the next step is the log's)."""
    rows = {}
    for v in variant_order(compacting(actions)["variant"].unique()):
        mine = actions[actions["variant"] == v]
        scored = mine[~failed(mine, "next-action")]
        cuts = scored["scenario"].astype(str) + "/" + scored["fact"].astype(str)

        def share(column: str, of: pd.DataFrame = scored, cuts: pd.Series = cuts) -> str:
            known = of[of[column].notna()]
            return rate(known[column].astype(float), cuts[known.index]).text() if len(known) else "n/a"

        drop = floor_drop(scored).test
        rows[v] = {
            "agrees with the full history": share("exact"),
            "same tool": share("same_tool"),
            "same target": share("same_target"),
            "agrees with the log": share("matches_log"),
            "full history agrees with the log": share("ceiling_matches_log"),
            "noise floor (full history twice)": share("floor"),
            "drop from the floor (95% CI)": _drop_text(drop, share("floor"), alpha),
            "read from text": int(scored["from_text"].sum()),
            "errors": int(mine["error"].notna().sum()),
            OVERFLOWED: int(overflowed(mine, "next-action").sum()),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


MIN_FLOOR = 0.5  # a full-history agent that disagrees with itself this often says nothing of compaction


def _drop_text(test: PairedTest, floor: str, alpha: float) -> str:
    """Compaction's effect as the drop from the floor, or why it cannot be told."""
    if (judged := test.judgement) is None:
        return f"{-test.difference:.1%} on {plural(test.clusters, 'scenario')}: too few to tell"
    if test.mean_a < MIN_FLOOR:
        return f"cannot tell: the full-history agent agrees with itself in only {test.mean_a:.0%} of cuts"
    verdict = "a drop" if judged.p_value < alpha and test.difference < 0 else "not distinguishable from the floor"
    low, high = max(-judged.high, -1.0), min(-judged.low, 1.0)  # a difference of shares lies in [-1, 1]
    return f"{-test.difference:.1%} ({low:.1%} to {high:.1%}), p = {judged.p_value:.3g}: {verdict}"


def behaviour_at_the_cut(actions: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per variant and check: how often the compacted agent's next step goes wrong, how often the
    full-history agent's step at the same cut does (the floor), and the difference, paired and tested
    over scenarios. n: the cuts where the check had something to look at (a constraint in force, a
    finished item, a failure, a file read)."""
    rows = {}
    for v in variant_order(compacting(actions)["variant"].unique()):
        for behaviour in Behaviour:
            pairs = behaviour_floor(actions[actions["variant"] == v], behaviour.metric).pairs
            if pairs.empty:
                continue
            wrong = 1.0 - pairs[["hit_a", "hit_b"]]
            test = paired_test(wrong["hit_a"], wrong["hit_b"], pairs["scenario"])
            if (judged := test.judgement) is None:
                verdict = ""
            elif judged.p_value < alpha:  # compaction may also make a step go wrong less often
                verdict = f": {'more' if test.difference > 0 else 'less'} often than the floor"
            else:
                verdict = ": not distinguishable from the floor"
            rows[(v, behaviour.label)] = {
                "compacted": rate(wrong["hit_b"], pairs["scenario"]).text(),
                "full history (the floor)": rate(wrong["hit_a"], pairs["scenario"]).text(),
                "difference": test.describe() + verdict,
            }
    return pd.DataFrame.from_dict(rows, orient="index") if rows else pd.DataFrame()


def next_action_substitutes(actions: pd.DataFrame, top: int = 5) -> pd.DataFrame:
    """Where the compacted agent went instead: its most frequent steps where the full-history agent
    took another, with how often, and how often the log's step needed a fact this compaction's
    summary did not state."""
    scored = compacting(actions)
    scored = scored[~failed(scored, "next-action") & (scored["exact"] == False)]  # noqa: E712 (a boolean column with NaN)
    rows = []
    for v in variant_order(scored["variant"].unique()):
        mine = scored[scored["variant"] == v]
        steps = mine.groupby(["ceiling", "compacted"]).size().sort_values(ascending=False).head(top)
        for (ceiling, compacted), group in zip(steps.index, steps):
            lacked = mine[(mine["ceiling"] == ceiling) & (mine["compacted"] == compacted)]["lacked"].notna().sum()
            rows.append(
                {
                    "variant": v,
                    "full history took": ceiling,
                    "compacted took": compacted,
                    "cuts": int(group),
                    "the log's step needed a fact the summary lacked": int(lacked),
                }
            )
    return pd.DataFrame(rows).set_index("variant") if rows else pd.DataFrame()


def next_steps(actions: pd.DataFrame) -> pd.DataFrame:
    """Every cut: the log's step, the full-history agent's (twice) and the compacted agent's, side by
    side, with the fact the log's step needed that the summary lacked (the report's step explorer)."""
    columns = {
        "variant": "variant",
        "scenario": "scenario",
        "budget": "budget",
        "before_turn": "before turn",
        "log": "the log's step",
        "ceiling": "full history",
        "ceiling_again": "full history again",
        "compacted": "compacted",
        "exact": "agrees",
        "lacked": "needed, not in the summary",
        "ceiling_error": "full history failed",
    }
    return actions.reindex(columns=list(columns)).rename(columns=columns).fillna("").set_index("variant")


def prompt_sensitivity(retention: pd.DataFrame, control: str) -> pd.DataFrame:
    """Each summary prompt's retention minus the keeps-nothing control's, paired fact by fact:
    near zero, the model is not steered by its summary prompt and prompt comparisons measure noise."""
    comparisons = sensitivity(retention, control)
    rows = {
        f"summary: {prompt}": {
            "retention": f"{c.rate_b:.0%}",
            f"control ({control})": f"{c.rate_a:.0%}",
            "sensitivity": c.test.describe(),
        }
        for prompt, c in comparisons.items()
    }
    table = pd.DataFrame.from_dict(rows, orient="index")
    if comparisons:
        best = max(comparisons, key=lambda prompt: comparisons[prompt].rate_b)
        table = table.rename(index={f"summary: {best}": f"summary: {best} (best)"})
    return table


def recall_by_kind(df: pd.DataFrame) -> pd.DataFrame:
    table = {
        v: {kind: rate_text(g) for kind, g in df[df["variant"] == v].groupby("kind")}
        for v in variant_order(df["variant"].unique())
    }
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
    table = {
        v: {t: rate_text(g) for t, g in typed[typed["variant"] == v].groupby("answer_type")}
        for v in variant_order(df["variant"].unique())
    }
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
        lost = group[(group["verdict"] != "recalled") & ~failed(group, "recall")]
        rows[variant] = {
            "probes": len(group),
            "recalled": int((group["verdict"] == "recalled").sum()),
            "lost: not in summary": int((lost["location"] == "gone").sum()),
            "lost: in summary, not recalled": int((lost["location"] == "summary").sum()),
            "lost: still verbatim": int((lost["location"] == "verbatim").sum()),
            **(
                {"lost: summary not identified": int((lost["location"] == "unknown").sum())}
                if (compacted["location"] == "unknown").any()
                else {}
            ),
            "of lost: stale": int((lost["verdict"] == "stale").sum()),
            **{
                f"of lost: summary {reading} the rule": int((lost["summary_reading"] == reading).sum())
                for reading in ("weakened", "contradicted")
                if "summary_reading" in compacted and (compacted["summary_reading"] == reading).any()
            },
            "of lost: abstained": int((lost["verdict"] == "abstained").sum()),
            "errors": int((group["verdict"] == "error").sum()),
            **({OVERFLOWED: int(overflowed(group, "recall").sum())} if overflowed(compacted, "recall").any() else {}),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def survival_by_compactions(df: pd.DataFrame) -> pd.DataFrame:
    """Recall by how many compactions a fact went through (3 and more pooled)."""
    compacted = compacting(df).copy()
    compacted["through"] = compacted["compactions"].clip(upper=3).map(lambda n: "3+" if n == 3 else str(n))
    table = {
        v: {t: rate_text(g) for t, g in compacted[compacted["variant"] == v].groupby("through")}
        for v in variant_order(compacted["variant"].unique())
    }
    return pd.DataFrame(table).fillna("")


COMPRESSION, SUMMARY_TOKENS = "median size after / before", "median summary tokens"
FROM_CACHE = "prompt tokens from the server's cache"  # a prefix shared with an earlier request, read not recomputed
AT_CAP = "stopped at the token cap"  # a summary cut at summary_max_tokens: it did not finish compressing


def summary_costs(compactions: pd.DataFrame, wave_seconds: list[float] | None = None) -> pd.DataFrame:
    """Per variant that writes summaries (a prompt, or a strategy with its own): how much its
    compactions shrank the history, and what they cost (a summary that keeps everything by not
    compressing is no improvement), and how often the summary was cut at its token cap (with its
    interval, compactions of one case counted as a cluster). `wave_seconds`: a batch run's waves, whose wait is every
    request's latency (the model's own is not measured there)."""
    made = shrinks(compactions)
    unwritten = compactions[compactions["error"] == NO_SUMMARY] if "error" in compactions else compactions.iloc[:0]
    rows = {}
    for variant in variant_order(set(made["variant"]) | set(unwritten["variant"])):
        mine = made[made["variant"] == variant]
        latency = (
            ("mean wait for its batch wave (s)", sum(wave_seconds) / len(wave_seconds))
            if wave_seconds
            else ("mean latency (s)", mine["latency_s"].mean())
        )
        known = mine[mine["capped"].notna()]
        capped = rate(known["capped"].astype(bool), known["case"]).text() if len(known) else "not recorded"
        rows[variant] = {
            "compactions": len(mine),
            COMPRESSION: round(mine["ratio"].median(), 2) if len(mine) else "n/a",
            SUMMARY_TOKENS: round(mine["output_tokens"].median()) if len(mine) else "n/a",
            AT_CAP: capped,
            latency[0]: round(latency[1], 2) if len(mine) else "n/a",
            FROM_CACHE: _cache_share(mine),
        }
        if len(unwritten):
            rows[variant][NO_SUMMARY] = int((unwritten["variant"] == variant).sum())
    return pd.DataFrame.from_dict(rows, orient="index")


def _cache_share(compactions: pd.DataFrame) -> str:
    """The share of the compactions' prompt tokens the server read from its prompt cache ("n/a" for
    runs recorded before it was, or compactions that sent no request). Both Anthropic's API and
    llama.cpp's count cache reads apart from `input_tokens`, so the prompt is their sum."""
    if "cache_read_tokens" not in compactions or compactions["cache_read_tokens"].isna().all():
        return "n/a"
    read = compactions["cache_read_tokens"].sum()
    prompt = compactions["input_tokens"].sum() + read
    return f"{read / prompt:.0%}" if prompt else "n/a"
