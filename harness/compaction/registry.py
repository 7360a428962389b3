"""The strategy registry: every compaction strategy an eval file can name, and what each depends
on (a budget, a summary prompt, the history at all). The runner plans cases by it; a custom
`module:function` gets its entry from `custom_strategy`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .custom import Strategy, custom_compaction, is_contextual
from .seed import compact, recorded, truncate


@dataclass(frozen=True)
class StrategySpec:
    """A compaction strategy and what it depends on: the runner plans cases by it. Custom
    `module:function` strategies get one from `custom_strategy`; rows are labelled by
    `records.schema.variant`."""

    name: str
    compact: Strategy | None  # None: the history is never compacted
    uses_budget: bool
    uses_prompt: bool
    uses_history: bool = True  # False: probes are asked with no conversation at all
    needs_recorded: bool = False  # compacts only where an imported log's agent did


STRATEGIES = {spec.name: spec for spec in (
    StrategySpec("summary", compact, uses_budget=True, uses_prompt=True),
    StrategySpec("truncate", truncate, uses_budget=True, uses_prompt=False),
    # An imported log's own compactions, at its own cut points: no budget, no prompt, no model call.
    StrategySpec("recorded", recorded, uses_budget=False, uses_prompt=False, needs_recorded=True),
    StrategySpec("none", None, uses_budget=False, uses_prompt=False),
    StrategySpec("no-history", None, uses_budget=False, uses_prompt=False, uses_history=False),
)}


def custom_strategy(name: str, function: Callable) -> StrategySpec:
    """A user's `module:function`: compacts at every budget; it sweeps the eval's summary prompts
    (receiving each as `context.settings.summary_prompt`) when it declares `uses_prompt = True`."""
    return StrategySpec(name, custom_compaction(name, function, is_contextual(function)), uses_budget=True,
                        uses_prompt=bool(getattr(function, "uses_prompt", False)))
