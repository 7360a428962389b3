"""Paired comparison of two variants on the same facts, for each metric:

- **recall**: whether the probe answer states the fact (one 0/1 value per probe record);
- **retention**: whether the summaries state the fact's value, no probe needed (per unit, the
  share of the compactions that folded the fact whose summary still states it);
- **action**: at an action probe's decision point, whether the agent's step keeps to the fact's
  rules (per informative probe: the full history complies there and no history does not);
- **next-action**: whether the compacted agent takes the step the full-history agent takes (per
  cut; the cut stands where a fact would, as `cut-<turn>`).

Units pair when scenario, fact, budget, strategy and repeat agree; a unit with an error on
either side is left out. The difference is tested over scenarios (see `stats.paired_test`):
facts of one conversation share its summaries, so they are not independent evidence. The facts
that flipped each way are listed, so users see *what* a prompt loses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import pandas as pd

from ..errors import InputError
from ..records.load import Run, failed
from ..records.schema import ACTION, BEHAVIOURS, METRICS, StepOutcome, variant
from .stats import PairedTest, paired_test

PAIR_KEY = ["scenario", "fact", "budget", "strategy", "repeat"]
VARIANT_KEY = ["scenario", "fact", "budget", "repeat"]  # two strategies' units of one fact at one budget


def recall_units(records: pd.DataFrame) -> pd.DataFrame:
    """One unit per scored probe record: value 1 when recalled."""
    scored = records[~failed(records, "recall")]
    columns = PAIR_KEY + ["prompt", "expected", "answer", "kind"]
    units = scored.reindex(columns=columns).copy()
    units["value"] = (scored["verdict"] == "recalled").astype(float).to_numpy()
    return units


def retention_units(retention: pd.DataFrame) -> pd.DataFrame:
    """One unit per (case, fact): the share of its compactions whose summary stated it."""
    if retention.empty or "retained" not in retention:
        return pd.DataFrame(columns=PAIR_KEY + ["prompt", "expected", "answer", "kind", "value"])
    known = retention[retention["retained"].notna()].copy()
    known["budget"] = known["budget"].astype("object").fillna("-")
    known["prompt"] = known["prompt"].astype("object").fillna("-")
    known["retained"] = known["retained"].astype(float)
    units = (
        known.groupby(PAIR_KEY + ["prompt"])
        .agg(value=("retained", "mean"), expected=("expected", "last"), kind=("kind", "first"))
        .reset_index()
    )
    units["answer"] = None
    return units


def _cut_units(scored: pd.DataFrame, kind: str, value: pd.Series) -> pd.DataFrame:
    """One unit per next-action record: the cut where a fact would stand, both steps, and `value`."""
    units = scored.reindex(columns=PAIR_KEY + ["prompt"]).copy()
    units["expected"], units["answer"] = scored.get("ceiling"), scored.get("compacted")
    units["kind"] = kind
    units["value"] = value.astype(float).to_numpy() if len(scored) else []
    return units


def action_units(actions: pd.DataFrame, against: str = "exact") -> pd.DataFrame:
    """One unit per scored cut (a compaction where the log's next step is known to the ceiling): value
    1 when the compacted agent's step agrees with the full-history agent's (`against`: "exact", or
    "floor", the full-history agent against its own second sample)."""
    scored = actions[~failed(actions, "next-action")] if not actions.empty else actions
    return _cut_units(scored, "next-action", scored[against] if len(scored) else pd.Series(dtype=float))


@dataclass
class Comparison:
    """Two variants paired unit by unit on one metric: their rates, the difference (B - A) with its
    test over scenarios (`test`: interval and p), and the units that flipped each way."""

    label_a: str
    label_b: str
    pairs: pd.DataFrame  # one row per paired unit: hit_a and hit_b (0/1, or shares for retention)
    metric: str = "recall"

    @property
    def n(self) -> int:
        return len(self.pairs)

    @cached_property
    def test(self) -> PairedTest:
        return paired_test(self.pairs["hit_a"], self.pairs["hit_b"], self.pairs["scenario"])

    @property
    def rate_a(self) -> float:
        """Side a's rate on the paired units: recall, retention or fidelity, as `metric` says."""
        return self.test.mean_a

    @property
    def rate_b(self) -> float:
        return self.test.mean_b

    @property
    def difference(self) -> float:
        """B minus A, on the same units."""
        return self.test.difference

    @property
    def p_value(self) -> float | None:
        return self.test.p_value

    @property
    def lost(self) -> pd.DataFrame:
        """Units A kept better than B."""
        return self.pairs[self.pairs["hit_a"] > self.pairs["hit_b"]]

    @property
    def gained(self) -> pd.DataFrame:
        return self.pairs[self.pairs["hit_a"] < self.pairs["hit_b"]]


def behaviour_units(actions: pd.DataFrame, metric: str, agent: str = "") -> pd.DataFrame:
    """One unit per scored cut where the behaviour check had something to check: value 1 when the step
    did not go wrong (`agent`: "" for the compacted agent's step, "ceiling_" for the full history's)."""
    column = agent + BEHAVIOURS[metric]
    if actions.empty or column not in actions:
        return pd.DataFrame(columns=PAIR_KEY + ["prompt", "expected", "answer", "kind", "value"])
    scored = actions[~failed(actions, metric) & actions[column].notna()]
    return _cut_units(scored, metric, 1.0 - scored[column].astype(float))


def units(rows: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The units a metric pairs and tests: per probe record for recall, per (case, fact) for
    retention, per cut for next-action fidelity and for each behaviour check."""
    if metric in BEHAVIOURS:
        return behaviour_units(rows, metric)
    if metric == "retention":
        return retention_units(rows)
    if metric == "next-action":
        return action_units(rows)
    if metric == ACTION:
        return action_probe_units(rows)
    return recall_units(rows)


def action_probe_units(probes: pd.DataFrame) -> pd.DataFrame:
    """One unit per action probe answered (`Run.rows` gives the informative ones): value 1 when the
    step does not break the fact's rules (it complies, or is neither)."""
    scored = probes[~failed(probes, ACTION)] if not probes.empty else probes
    units = scored.reindex(columns=PAIR_KEY + ["prompt", "kind"]).copy()
    units["expected"], units["answer"] = scored.get("say"), scored.get("step")
    units["value"] = (scored["outcome"] != StepOutcome.VIOLATES).astype(float).to_numpy() if len(scored) else []
    return units


def behaviour_floor(actions: pd.DataFrame, metric: str) -> Comparison:
    """A behaviour check of the compacted agent's step (B) against the same check of the full-history
    agent's step at the same cut (A, the floor), paired and tested over scenarios."""
    return pair_units(
        behaviour_units(actions, metric, "ceiling_"),
        behaviour_units(actions, metric),
        "full history",
        "compacted",
        metric,
    )


def floor_drop(actions: pd.DataFrame) -> Comparison:
    """Compaction's effect on the next step: per cut, the compacted agent's agreement with the
    full-history agent (B) against the full-history agent's agreement with itself, its noise floor
    (A), paired and tested over scenarios."""
    return pair_units(action_units(actions, "floor"), action_units(actions), "floor", "compacted", "next-action")


def pair_units(
    a: pd.DataFrame, b: pd.DataFrame, label_a: str, label_b: str, metric: str, key: list[str] = PAIR_KEY
) -> Comparison:
    """Units of A and B paired on `key` (by default the same fact, budget, strategy and repeat). A
    side with no budget (the `recorded` or `none` strategy) pairs with the other at each of its budgets."""
    left, right = a.copy(), b.copy()
    for side in (left, right):
        side["budget"] = side["budget"].astype("object").fillna("-")
    if "budget" in key and any(len(side) and (side["budget"] == "-").all() for side in (left, right)):
        key = [k for k in key if k != "budget"]
    pairs = left.merge(right, on=key, suffixes=("_a", "_b"))
    pairs = pairs.rename(columns={f"{k}_b": k for k in PAIR_KEY if k not in key})
    pairs = pairs.rename(columns={"value_a": "hit_a", "value_b": "hit_b"})
    return Comparison(label_a, label_b, pairs.reset_index(drop=True), metric)


def pair(a: pd.DataFrame, b: pd.DataFrame, label_a: str, label_b: str) -> Comparison:
    """Pair two sets of probe records fact by fact on recall."""
    return pair_units(recall_units(a), recall_units(b), label_a, label_b, "recall")


def pair_retention(a: pd.DataFrame, b: pd.DataFrame, label_a: str, label_b: str) -> Comparison:
    """Pair two sets of retention rows fact by fact on retention."""
    return pair_units(retention_units(a), retention_units(b), label_a, label_b, "retention")


def sensitivity(summary: pd.DataFrame, control: str) -> dict[str, Comparison]:
    """Per summary prompt, its retention paired against the keeps-nothing control's (A: control);
    `summary`: retention rows of strategies that take a prompt."""
    reference = summary[summary["prompt"] == control]
    return {
        prompt: pair_retention(reference, summary[summary["prompt"] == prompt], control, prompt)
        for prompt in sorted(set(summary["prompt"].dropna()) - {control})
    }


def compare_variants(
    run_a: Run,
    run_b: Run,
    a: str | None,
    b: str | None,
    strategy: str = "summary",
    names: tuple[str, str] = ("a", "b"),
) -> list[Comparison]:
    """Variant `a` of `run_a` against variant `b` of `run_b` (the same run, to compare two prompts),
    paired on every metric both measured. A variant is a prompt id of `strategy` (`seed`), a
    strategy (`truncate`, `mymodule:compact`) or both (`summary:seed`, or as tables name it,
    `summary: seed`); None: `strategy`'s only
    prompt. `names`: what a bad variant is blamed on (the command line's `--a`, `--b`)."""
    side_a, side_b = _variant(run_a, a, strategy, names[0]), _variant(run_b, b, strategy, names[1])

    def label(side: str, chosen: tuple[str, str | None]) -> str:
        return f"{side} ({variant(*chosen)})"

    def rows(run: Run, metric: str, chosen: tuple[str, str | None]) -> pd.DataFrame:
        data = run.rows(metric)
        data = data[data["strategy"] == chosen[0]]
        return data[data["prompt"] == chosen[1]] if chosen[1] is not None else data

    # Within one strategy units pair on the strategy too; across strategies on fact and budget.
    key = PAIR_KEY if side_a[0] == side_b[0] else VARIANT_KEY
    return [
        pair_units(
            units(rows(run_a, metric, side_a), metric),
            units(rows(run_b, metric, side_b), metric),
            label("A", side_a),
            label("B", side_b),
            metric,
            key,
        )
        for metric in METRICS
        if not run_a.rows(metric).empty and not run_b.rows(metric).empty
    ]


def _variant(run: Run, spec: str | None, strategy: str, name: str) -> tuple[str, str | None]:
    """A side's (strategy, prompt) in `run` (see `compare_variants`)."""
    strategies = set(run.records["strategy"]) | set(run.retention["strategy"])
    prompt = spec
    if spec is not None and spec in strategies:
        strategy, prompt = spec, None
    elif spec and (split := spec.rpartition(":"))[0] in strategies:  # "summary:seed", or as tables say, "summary: seed"
        strategy, prompt = split[0], split[2].strip()
    if strategy not in strategies:
        raise InputError(name, f"no strategy {strategy!r} in this run (it has: {', '.join(sorted(strategies))})")
    existing = run.prompts(strategy)
    if not existing:  # a strategy without prompts
        return strategy, None
    if prompt is None and len(existing) == 1:
        prompt = existing[0]
    if prompt not in existing:
        problem = (
            f"no prompt {prompt!r} with strategy {strategy} in this run"
            if prompt
            else f"strategy {strategy} ran with several prompts; name one"
        )
        raise InputError(name, f"{problem} (it has: {', '.join(existing)})")
    return strategy, prompt
