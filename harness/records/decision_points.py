"""Which action probes can tell what compaction did (`probe_status`), read with the run: a probe
(one fact's decision point, in one scenario and repeat) is **informative** when the full-history
agent's step complies (the ceiling) and the no-history agent's does not (the control). Every row of
`Run.action_probes` says whether its probe is (`informative`), so the `action` metric is read only
where it can tell; the analysis lists the others with why.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pandas as pd

from .schema import StepOutcome

PROBE = ["scenario", "fact", "repeat"]  # one decision point; its rows across strategies pair on these


def probe_status(probes: pd.DataFrame) -> pd.DataFrame:
    """One row per probe: its kind, the ceiling's and the control's steps and outcomes, whether it is
    informative, and if not, why."""
    if probes.empty:
        return pd.DataFrame()
    each = probes.drop_duplicates(PROBE)[[*PROBE, "kind", "say"]]
    for arm, strategy in (("ceiling", "none"), ("control", "no-history")):
        rows = probes[probes["strategy"] == strategy].drop_duplicates(PROBE)
        rows = rows[[*PROBE, "outcome", "step", "error"]].rename(
            columns={"outcome": arm, "step": f"{arm}_step", "error": f"{arm}_error"}
        )
        each = each.merge(rows, on=PROBE, how="left")
    each["why"] = [_why_not(row) for row in each.to_dict("records")]
    each["informative"] = each["why"].isna()
    return each.reset_index(drop=True)


def _why_not(probe: dict[Hashable, Any]) -> str | None:
    """Why a probe cannot tell what compaction did (None: it can)."""
    for arm, name, strategy in (("ceiling", "the full history", "none"), ("control", "no history", "no-history")):
        if isinstance(probe.get(f"{arm}_error"), str):
            return f"{name}'s request failed: {str(probe[f'{arm}_error'])[:80]}"
        if not isinstance(probe.get(arm), str):
            return f"no {name} to compare with (add `{strategy}` to the eval's strategies)"
    if probe["ceiling"] != StepOutcome.COMPLIES:
        return f"the full history does not comply either: {probe['ceiling']} ({probe['ceiling_step']})"
    if probe["control"] == StepOutcome.COMPLIES:
        return f"no history complies too ({probe['control_step']}): the step does not need the fact"
    return None


def with_informative(probes: pd.DataFrame) -> pd.DataFrame:
    """The action-probe rows, each with whether its probe can tell (`informative`)."""
    if probes.empty:
        return probes.assign(informative=pd.Series(dtype=bool))
    status = probe_status(probes)[[*PROBE, "informative"]]
    return probes.merge(status, on=PROBE, how="left")
