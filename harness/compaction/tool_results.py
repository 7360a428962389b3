"""Strategies that shrink a history by emptying old tool results in place, with no model call:

- `mask-observations`: observation masking (Lindenbauer et al., "The Complexity Trap", 2025):
  every tool result but the last `keep` becomes a one-line placeholder (unless it is shorter than
  that); the agent's actions and reasoning stay;
- `clear-tool-results`: the semantics of Anthropic's `clear_tool_uses_20250919` context edit, run
  locally: the results of all but the `keep` most recent tool uses are cleared, except those of
  `exclude_tools`; `clear_tool_inputs` clears the cleared calls' inputs too (all, or those of the
  tools listed); nothing is cleared unless at least `clear_at_least` units would go.

Both run where the eval's `cut` lets compaction run, when the history is over its budget. The
history keeps every message (and every tool_use beside its tool_result), so what a fact needs to
be retained is that its value is still somewhere in the history: in a kept result, a user line,
the agent's words or a tool input. The event counts the results cleared (`edited`), and
`folded_messages` marks the end of the edited part.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..messages import Message, content_text
from ..records.schema import CompactionEvent
from .context import CompactionContext

MASKED = "[Old tool output omitted: {chars:,} characters.]"
CLEARED = "[Tool result cleared to save context.]"
CLEARED_INPUT = "[cleared]"


@dataclass(frozen=True)
class ToolUse:
    """Where one tool call and its result are in a history."""

    call_at: tuple[int, int]  # (message, block) of the tool_use
    result_at: tuple[int, int] | None  # of its tool_result; None: not answered yet
    name: str

    @property
    def answered_at(self) -> tuple[int, int]:
        """Where its result is, for a use known to be answered."""
        if self.result_at is None:
            raise ValueError(f"the tool call at {self.call_at} has no result yet")
        return self.result_at


def tool_uses(messages: list[Message]) -> list[ToolUse]:
    """The history's tool calls, oldest first, each with where its result is."""
    results = {
        block["tool_use_id"]: (m, b)
        for m, message in enumerate(messages)
        if isinstance(message["content"], list)
        for b, block in enumerate(message["content"])
        if block.get("type") == "tool_result"
    }
    return [
        ToolUse((m, b), results.get(block["id"]), block["name"])
        for m, message in enumerate(messages)
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for b, block in enumerate(message["content"])
        if block.get("type") == "tool_use"
    ]


def clear_old_results(
    messages: list[Message],
    keep: int,
    exclude: tuple[str, ...] = (),
    clear_inputs: bool | tuple[str, ...] = False,
    placeholder: Callable[[str], str] = lambda text: CLEARED,
    clearable: Callable[[ToolUse], bool] = lambda use: True,
    limit: int | None = None,
) -> tuple[list[Message], list[ToolUse]]:
    """The history with the results of all but the `keep` most recent answered tool uses replaced
    by `placeholder(old text)` (excluded tools' kept; already-cleared ones left; at most `limit`,
    oldest first), and which were cleared. Edited messages are new objects; the others are the same."""
    answered = [use for use in tool_uses(messages) if use.result_at is not None and use.name not in exclude]
    older = answered[: max(0, len(answered) - keep)]
    chosen = [use for use in older if clearable(use) and not _is_placeholder(_block(messages, use.answered_at))][:limit]
    if not chosen:
        return messages, []
    edited = list(messages)
    for use in chosen:
        m, b = use.answered_at
        block = _block(edited, use.answered_at)
        content = list(edited[m]["content"])
        content[b] = {**block, "content": placeholder(content_text(block.get("content") or ""))}
        edited[m] = {**edited[m], "content": content}
        if clear_inputs is True or (isinstance(clear_inputs, tuple) and use.name in clear_inputs):
            m, b = use.call_at
            content = list(edited[m]["content"])
            content[b] = {**content[b], "input": {key: CLEARED_INPUT for key in content[b].get("input", {})}}
            edited[m] = {**edited[m], "content": content}
    return edited, chosen


def _block(messages: list[Message], at: tuple[int, int]) -> dict[str, Any]:
    block: dict[str, Any] = messages[at[0]]["content"][at[1]]
    return block


def _is_placeholder(block: dict[str, Any]) -> bool:
    text = content_text(block.get("content") or "")
    opening, _, rest = MASKED.partition("{")
    return text == CLEARED or (text.startswith(opening) and text.endswith(rest.partition("}")[2]))


def edited_end(cleared: list[ToolUse]) -> int:
    """Where the part of the history an in-place edit changed ends (its `folded_messages`)."""
    return max(max(use.answered_at[0], use.call_at[0]) for use in cleared) + 1


def _in_place(
    name: str, edited: list[Message], cleared: list[ToolUse], sizes: tuple[int, int], context: CompactionContext
) -> list[Message]:
    """Record an in-place edit that took the history from `sizes[0]` to `sizes[1]`."""
    end = edited_end(cleared)
    context.say(f"{name}: cleared {len(cleared)} tool results")
    context.record(
        CompactionEvent(
            strategy=name,
            folded_messages=end,
            size_before=sizes[0],
            size_after=sizes[1],
            unit=context.settings.unit,
            replaced_with=end,
            edited=len(cleared),
        )
    )
    return edited


def mask_observations(messages: list[Message], context: CompactionContext) -> list[Message]:
    size = context.size(messages)
    if not context.over_limit(size):
        return messages
    # A result shorter than its placeholder stays: masking it would lengthen the history.
    edited, cleared = clear_old_results(
        messages,
        context.settings.tool_results.keep,
        placeholder=lambda text: MASKED.format(chars=len(text)),
        clearable=lambda use: (
            len(content_text(_block(messages, use.answered_at).get("content") or "")) > len(MASKED.format(chars=10**6))
        ),
    )
    if not cleared:
        return messages
    return _in_place("mask-observations", edited, cleared, (size, context.size(edited)), context)


def clear_tool_results(messages: list[Message], context: CompactionContext) -> list[Message]:
    size = context.size(messages)
    if not context.over_limit(size):
        return messages
    rules = context.settings.tool_results
    edited, cleared = clear_old_results(messages, rules.keep, rules.exclude_tools, rules.clear_tool_inputs)
    if not cleared:
        return messages
    size_after = context.size(edited)
    if size - size_after < rules.clear_at_least:
        return messages  # as the API's edit: nothing, unless at least clear_at_least would go
    return _in_place("clear-tool-results", edited, cleared, (size, size_after), context)
