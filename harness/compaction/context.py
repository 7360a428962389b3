"""The strategy seam: what every compaction strategy receives, built-in or another package's.

A strategy is a function `(messages, context) -> messages` (`Strategy`): it returns the history
to carry on with, compacted or unchanged. `context` (`CompactionContext`) holds everything else:
the model client, the limit the history must fit, the eval's settings, and where the strategy
records what it did (`record`) and says it (`say`). Every value here is built by keyword.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TextIO

from ..messages import Message, SummaryLayout, measure
from ..models.client import ModelClient
from ..records.schema import CompactionEvent

# The seed's summary prompt (agent-010): what `summary` sends when an eval names no prompt.
SEED_SUMMARY_PROMPT = (
    "Summarise the conversation below so the assistant can continue it without the original. "
    "Keep every fact, number, name, and decision that later turns might need."
)


@dataclass(frozen=True, kw_only=True)
class ToolClearing:
    """The eval's `tool_results` settings: what mask-observations, clear-tool-results and
    anthropic-context-editing keep (see `tool_results`)."""

    keep: int = 3
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool | tuple[str, ...] = False
    clear_at_least: int = 0


@dataclass(frozen=True, kw_only=True)
class CompactionSettings:
    """The eval's compaction settings, the same for every strategy of a case."""

    summary_prompt: str = SEED_SUMMARY_PROMPT
    keep_recent: int = 1  # exchanges kept verbatim
    summary_max_tokens: int = 512
    unit: Literal["chars", "tokens"] = "chars"  # the limit's yardstick
    # The longest transcript one summary request may carry; longer ones fold in chunks, each
    # summarised together with the summary so far. None: no limit (one request, as the seed).
    max_transcript_chars: int | None = None
    layout: SummaryLayout = "system"  # where the summary prompt goes (`messages.SummaryLayout`)
    prompt_id: str | None = None  # the summary prompt's id, for strategies that report it
    # Where a history may be cut: "turns" (the seed's: only between user turns, at exchange starts),
    # "steps" (also before the next model call inside a tool loop, at a step whose every tool_use
    # has its result; `keep_recent` counts steps), or "recorded" (only where an imported log's agent
    # compacted, all of the history before it, whatever the limit).
    cut: Literal["turns", "steps", "recorded"] = "turns"
    recorded_summary: str | None = None  # the log's own summary at this point (set by the runner)
    tool_results: ToolClearing = ToolClearing()
    # The eval's `strategy_options` for the strategy being run (only those it declares it takes).
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class CompactionContext:
    """What a strategy receives beside the history."""

    client: ModelClient  # `create(**messages_request)`, `count_tokens(messages=...)`
    # The size the history must fit, in `settings.unit`: the eval's budget resolved for this case.
    # None: no limit (a strategy that needs none, such as `recorded`).
    limit: int | None
    settings: CompactionSettings = CompactionSettings()
    events: list[CompactionEvent] = field(default_factory=list)  # what compactions did, oldest first
    output_stream: TextIO = field(default_factory=io.StringIO)  # a line per compaction, for a live chat

    @property
    def context_limit(self) -> int | None:
        """The seed's name for `limit`."""
        return self.limit

    def size(self, messages: list[Message]) -> int:
        """A history's size in the limit's unit (characters, or tokens counted by the model)."""
        return measure(messages, self.client, self.settings.unit)

    def over_limit(self, size: int) -> bool:
        return self.limit is not None and size > self.limit

    def record(self, event: CompactionEvent) -> None:
        """Store what one compaction did beside the case's records."""
        self.events.append(event)

    def say(self, line: str) -> None:
        self.output_stream.write(f"[compact] {line}\n")


class Strategy(Protocol):
    """A compaction strategy: the history to carry on with, compacted or unchanged."""

    def __call__(self, messages: list[Message], context: CompactionContext, /) -> list[Message]: ...
