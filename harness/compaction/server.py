"""Anthropic's server-side alternatives to a summary prompt, as strategies (they need Claude's
Messages API, or a server implementing these betas; the embedded model cannot serve them):

- `anthropic-compact`: on-demand compaction (`compaction: {type: "summarize", instructions}`, beta
  `compact-2026-09-04`) at the harness's cut points, with the eval's prompt as `instructions`;
  `anthropic-compact-default` sends none, so the server's own prompt writes the summary. The reply
  is one `compaction` block (`stop_reason` "compaction"): the messages sent are replaced by the
  returned message, block first and exactly as returned (`content`, `encrypted_content`,
  `signature`), as the API requires of every later request.
- `anthropic-auto-compact`: the `compact_20260112` context-management edit (beta
  `compact-2026-01-12`) with the budget as its input-token trigger (the API's minimum is 50,000)
  and `pause_after_compaction`, so the block comes back alone; the history before it goes, as the
  API drops it.
- `anthropic-context-editing`: the `clear_tool_uses_20250919` edit (beta
  `context-management-2025-06-27`) sent at the cut points when the history is over its budget,
  with a trigger of `keep` + 1 tool uses (the harness decides when); the server reports what it cleared
  (`applied_edits`: `cleared_tool_uses`, `cleared_input_tokens`) but not the edited history, so
  the harness clears the same tool uses in its copy (the oldest ones past `keep`), which later
  requests carry.

A block's `content` is the summary checked for retention. A compaction the server could not
write (`content` null) keeps the history whole and is recorded as `NO_SUMMARY`, never blamed on a
prompt. Usage includes the server's summarisation iterations (`usage.iterations`), which the
top-level counts leave out.
"""

from __future__ import annotations

from typing import Any

from ..messages import Message
from ..models.client import usage_of
from ..records.schema import NO_SUMMARY, CompactionEvent
from .context import CompactionContext, CompactionSettings
from .seed import cut_at
from .tool_results import clear_old_results, edited_end

COMPACT_BETA = "compact-2026-09-04"
AUTO_COMPACT_BETA = "compact-2026-01-12"
CONTEXT_EDITING_BETA = "context-management-2025-06-27"


def _event(name: str, split: int, size_before: int, unit: str, response: dict[str, Any]) -> CompactionEvent:
    spent = usage_of(response)
    return CompactionEvent(
        strategy=name,
        folded_messages=split,
        size_before=size_before,
        size_after=size_before,
        unit=unit,
        input_tokens=spent.input_tokens,
        output_tokens=spent.output_tokens,
        cache_read_tokens=spent.cache_read_tokens,
        latency_s=spent.latency_s,
        cached=spent.cached,
        chunks=1,
        capped=response.get("stop_reason") == "max_tokens",
    )


def _swap(
    name: str,
    messages: list[Message],
    size_before: int,
    split: int,
    response: dict[str, Any],
    context: CompactionContext,
) -> list[Message]:
    """The history (of `size_before`) with `messages[:split]` replaced by the returned compaction
    block, or unchanged (and why) when no summary came back."""
    event = _event(name, split, size_before, context.settings.unit, response)
    block = next((b for b in response.get("content", []) if b.get("type") == "compaction"), None)
    if block is None:
        event.folded_messages = 0
        event.error = f"the server did not compact (stop_reason {response.get('stop_reason')!r})"
    elif block.get("content") is None:
        event.folded_messages, event.error = 0, NO_SUMMARY
    else:
        kept = messages[split:]
        opening: dict[str, Any] = {"role": "assistant", "content": [block]}
        if kept and kept[0]["role"] == "assistant":  # cut inside a tool loop: the step joins the block's turn
            step = kept.pop(0)["content"]
            opening["content"] += step if isinstance(step, list) else [{"type": "text", "text": step}]
        messages = [opening, *kept]
        event.summary, event.replaced_with = block["content"], 1
        event.size_after = context.size(messages)
    context.say(f"{name}: {event.error or f'folded {split} messages into the server summary'}")
    context.record(event)
    return messages


def _instructions(settings: CompactionSettings) -> dict[str, str]:
    """The eval's prompt as `instructions`; none (the server's own prompt) when it is blank."""
    return {"instructions": settings.summary_prompt} if settings.summary_prompt.strip() else {}


def anthropic_compact(messages: list[Message], context: CompactionContext) -> list[Message]:
    size, split = cut_at(messages, context)
    if split is None:
        return messages
    response = context.client.create(
        max_tokens=context.settings.summary_max_tokens,
        messages=messages[:split],
        betas=[COMPACT_BETA],
        compaction={"type": "summarize", **_instructions(context.settings)},
    )
    return _swap("anthropic-compact", messages, size, split, response, context)


def anthropic_auto_compact(messages: list[Message], context: CompactionContext) -> list[Message]:
    size = context.size(messages) if messages else 0  # the strategy needs `unit: tokens`
    if not context.over_limit(size):
        return messages
    edit = {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": context.limit},
        "pause_after_compaction": True,
        **_instructions(context.settings),
    }
    response = context.client.create(
        max_tokens=context.settings.summary_max_tokens,
        messages=messages,
        betas=[AUTO_COMPACT_BETA],
        context_management={"edits": [edit]},
    )
    return _swap("anthropic-auto-compact", messages, size, len(messages), response, context)


def anthropic_context_editing(messages: list[Message], context: CompactionContext) -> list[Message]:
    size = context.size(messages) if messages else 0
    if not context.over_limit(size):
        return messages
    rules = context.settings.tool_results
    # The harness decides when (its limit, in its unit); the server clears whatever is past `keep`.
    edit: dict[str, Any] = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": rules.keep + 1},
        "keep": {"type": "tool_uses", "value": rules.keep},
    }
    if rules.exclude_tools:
        edit["exclude_tools"] = list(rules.exclude_tools)
    if rules.clear_tool_inputs is True:
        edit["clear_tool_inputs"] = True
    elif rules.clear_tool_inputs:
        edit["clear_tool_inputs"] = list(rules.clear_tool_inputs)
    if rules.clear_at_least:
        edit["clear_at_least"] = {"type": "input_tokens", "value": rules.clear_at_least}
    response = context.client.create(
        max_tokens=1, messages=messages, betas=[CONTEXT_EDITING_BETA], context_management={"edits": [edit]}
    )
    applied = [
        e
        for e in (response.get("context_management") or {}).get("applied_edits", [])
        if e.get("type") == "clear_tool_uses_20250919"
    ]
    cleared_uses = sum(e.get("cleared_tool_uses", 0) for e in applied)
    if not cleared_uses:
        return messages
    edited, cleared = clear_old_results(
        messages, rules.keep, rules.exclude_tools, rules.clear_tool_inputs, limit=cleared_uses
    )
    event = _event("anthropic-context-editing", edited_end(cleared), size, context.settings.unit, response)
    event.size_after, event.replaced_with = context.size(edited), event.folded_messages
    event.edited, event.cleared_input_tokens = len(cleared), sum(e.get("cleared_input_tokens", 0) for e in applied)
    if len(cleared) != cleared_uses:
        event.error = f"the server cleared {cleared_uses} tool uses; the harness found {len(cleared)} to clear"
    context.say(f"anthropic-context-editing: the server cleared {cleared_uses} tool results")
    context.record(event)
    return edited
