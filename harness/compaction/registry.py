"""The strategy registry: every compaction strategy an eval file can name, and what each depends
on (a budget, a summary prompt, the history at all). The runner plans cases by it; a custom
`module:function` gets its entry from `custom_strategy`."""

from __future__ import annotations

from dataclasses import dataclass

from .context import Strategy
from .custom import Compactor, custom_compaction, is_contextual
from .seed import compact, recorded, truncate
from .server import anthropic_auto_compact, anthropic_compact, anthropic_context_editing
from .tool_results import clear_tool_results, mask_observations


@dataclass(frozen=True, kw_only=True)
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
    needs_claude: bool = False  # a server-side feature of Claude's API: the embedded model cannot serve it
    needs_tokens: bool = False  # its budget is an input-token trigger: the eval's unit must be tokens
    recovery: bool = False  # `<name>+recovery`: the agent may search what it folded (execution.recovery)
    pin: bool = False  # `<name>+pin`: the user's rules put back verbatim after it compacts (execution.pin)


STRATEGIES = {
    spec.name: spec
    for spec in (
        StrategySpec(name="summary", compact=compact, uses_budget=True, uses_prompt=True),
        StrategySpec(name="truncate", compact=truncate, uses_budget=True, uses_prompt=False),
        # An imported log's own compactions, at its own cut points: no budget, no prompt, no model call.
        # Old tool results emptied in place, no model call (see tool_results).
        StrategySpec(name="mask-observations", compact=mask_observations, uses_budget=True, uses_prompt=False),
        StrategySpec(name="clear-tool-results", compact=clear_tool_results, uses_budget=True, uses_prompt=False),
        # Anthropic's server-side compaction and context editing (see server).
        StrategySpec(
            name="anthropic-compact", compact=anthropic_compact, uses_budget=True, uses_prompt=True, needs_claude=True
        ),
        StrategySpec(
            name="anthropic-compact-default",
            compact=anthropic_compact,
            uses_budget=True,
            uses_prompt=False,
            needs_claude=True,
        ),
        StrategySpec(
            name="anthropic-auto-compact",
            compact=anthropic_auto_compact,
            uses_budget=True,
            uses_prompt=False,
            needs_claude=True,
            needs_tokens=True,
        ),
        StrategySpec(
            name="anthropic-context-editing",
            compact=anthropic_context_editing,
            uses_budget=True,
            uses_prompt=False,
            needs_claude=True,
        ),
        StrategySpec(name="recorded", compact=recorded, uses_budget=False, uses_prompt=False, needs_recorded=True),
        StrategySpec(name="none", compact=None, uses_budget=False, uses_prompt=False),
        StrategySpec(name="no-history", compact=None, uses_budget=False, uses_prompt=False, uses_history=False),
    )
}


def custom_strategy(name: str, compactor: Compactor) -> StrategySpec:
    """A user's strategy (`module:function` or a plugin's): compacts at every budget; it sweeps the
    eval's summary prompts (receiving each as `context.settings.summary_prompt`) when it declares
    `uses_prompt`."""
    return StrategySpec(
        name=name,
        compact=custom_compaction(name, compactor.function, is_contextual(compactor.function)),
        uses_budget=True,
        uses_prompt=compactor.uses_prompt,
    )
