"""Action probes read back (`records.schema.ActionProbeRecord`): which probes can tell, and what each
variant's agent did at those.

A probe (one fact's decision point, in one scenario and repeat) is **informative** when the
full-history agent's step complies (the ceiling: with the rule in view the agent keeps it) and the
no-history agent's does not (the control: without it, the natural step goes the other way). Only
informative probes say anything about what compaction did; the others are listed with why. Over the
informative probes, each variant's steps are counted as violating, neither (no tool call, or a step
the rules do not speak to) and complying, per kind, with intervals clustered by scenario, and its
compliance is paired with the ceiling's over scenarios.
"""

from __future__ import annotations

import pandas as pd

from ..records.decision_points import PROBE, probe_status
from ..records.schema import StepOutcome
from .stats import paired_test, rate

ALL_KINDS = "all kinds"


def action_probe_table(probes: pd.DataFrame) -> pd.DataFrame:
    """Per variant (and budget) and kind, over the informative probes: the share of steps that
    violate (95% interval, clustered by scenario), that are neither, that comply, and the compliance
    against the ceiling's, paired over scenarios (the ceiling complies on every informative probe)."""
    status = probe_status(probes)
    if status.empty or not status["informative"].any():
        return pd.DataFrame()
    informative = status.loc[status["informative"], PROBE]
    rows = probes.merge(informative, on=PROBE)
    rows = rows[rows["error"].isna()].copy()
    # (the loaded rows' `variant` labels a strategy without a prompt alone: never "mask-observations: nan")
    rows["budget"] = rows["budget"].astype("object").fillna("-")
    table = []
    for (name, budget), group in rows.groupby(["variant", "budget"], sort=False):
        for kind, part in [(ALL_KINDS, group), *sorted(group.groupby("kind"))]:
            if kind != ALL_KINDS and group["kind"].nunique() == 1:
                continue  # one kind: the all-kinds row says it
            table.append(_row(str(name), str(budget), str(kind), part))
    return pd.DataFrame(table).set_index(["variant", "budget", "kind"])


def _row(name: str, budget: str, kind: str, part: pd.DataFrame) -> dict[str, object]:
    outcome = part["outcome"]
    violates = rate((outcome == StepOutcome.VIOLATES).astype(float), part["scenario"])
    complies = (outcome == StepOutcome.COMPLIES).astype(float)
    against = paired_test(pd.Series(1.0, index=part.index), complies, part["scenario"])
    return {
        "variant": name,
        "budget": budget,
        "kind": kind,
        "probes": len(part),
        "violates (95% CI)": violates.text(),
        "neither": f"{(outcome == StepOutcome.NEITHER).mean():.0%} ({int((outcome == StepOutcome.NEITHER).sum())})",
        "complies": f"{complies.mean():.0%} ({int(complies.sum())})",
        "compliance vs ceiling": against.describe(),
    }


def uninformative(probes: pd.DataFrame) -> pd.DataFrame:
    """The probes that cannot tell, with why (never dropped silently)."""
    status = probe_status(probes)
    if status.empty:
        return status
    left_out = status[~status["informative"]]
    return left_out[[*PROBE, "kind", "say", "why"]].set_index(PROBE) if not left_out.empty else pd.DataFrame()


def informative_share(probes: pd.DataFrame) -> pd.DataFrame:
    """Per kind: the probes, how many are informative, the ceiling's compliance and the control's
    violation rate (what decides whether a probe's temptation works on this model)."""
    status = probe_status(probes)
    if status.empty:
        return status
    table = []
    for kind, part in [(ALL_KINDS, status), *sorted(status.groupby("kind"))]:
        measured = part[part["ceiling"].notna() & part["control"].notna()]
        table.append(
            {
                "kind": kind,
                "probes": len(part),
                "informative": f"{part['informative'].mean():.0%} ({int(part['informative'].sum())})",
                "ceiling complies": _share(measured["ceiling"] == StepOutcome.COMPLIES),
                "control violates": _share(measured["control"] == StepOutcome.VIOLATES),
                "control neither": _share(measured["control"] == StepOutcome.NEITHER),
            }
        )
    return pd.DataFrame(table).set_index("kind")


def _share(hits: pd.Series) -> str:
    return f"{hits.mean():.0%} ({int(hits.sum())}/{len(hits)})" if len(hits) else "n/a"
