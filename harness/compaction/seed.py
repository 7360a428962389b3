"""Compaction, as the seed (agent-010) designs it: `compact` folds old exchanges into a summary the
model writes; `truncate` drops them with no summary (the floor).

A history may only be cut at the start of an exchange (a user message whose content is a
string), so a tool_use is never separated from its tool_result. Old exchanges fold into a summary
that re-enters the history as a user turn plus a one-line assistant acknowledgement, so roles
keep alternating.
"""

from __future__ import annotations

from typing import Any

from ..messages import Message, cut_points, first_text, render_message
from ..models.client import Usage, usage_of
from ..records.schema import CompactionEvent
from .context import CompactionContext, CompactionSettings

SUMMARY_PREFIX = "[Conversation summary: "
ACKNOWLEDGEMENT = "Understood. Continuing from that summary."
DROPPED = "[Earlier messages were dropped.]"  # opens a history truncated inside a tool loop


class TranscriptTooLarge(Exception):
    """One exchange alone is longer than the transcript limit: it cannot be summarised."""


def split_point(messages: list[Message], size: int, context: CompactionContext) -> int | None:
    """Where to cut, or None when the history fits or everything in it is recent (see `cut`)."""
    settings = context.settings
    if settings.cut == "recorded":
        return len(messages) if settings.recorded_summary is not None and messages else None
    if not context.over_limit(size):
        return None
    starts = cut_points(messages, steps=settings.cut == "steps")
    if len(starts) <= settings.keep_recent:
        return None
    split = starts[-settings.keep_recent] if settings.keep_recent else len(messages)
    return split or None


def cut_at(messages: list[Message], context: CompactionContext) -> tuple[int, int | None]:
    """The history's size in the limit's unit, and where to cut it (`split_point`; None: leave it)."""
    size = context.size(messages)
    return size, split_point(messages, size, context)


def fold(summary: str, messages: list[Message], split: int) -> list[Message]:
    """The history with `messages[:split]` replaced by the summary, as a user turn. A one-line
    assistant acknowledgement follows when the next message is the user's (so roles alternate),
    not when the agent's step or model call comes next (inside a tool loop)."""
    kept = messages[split:]
    user_next = kept[0]["role"] == "user" if kept else messages[-1]["role"] == "assistant"
    return (
        [{"role": "user", "content": f"{SUMMARY_PREFIX}{summary}]"}]
        + ([{"role": "assistant", "content": ACKNOWLEDGEMENT}] if user_next else [])
        + kept
    )


def transcript_chunks(messages: list[Message], settings: CompactionSettings) -> list[str]:
    """The transcript to summarise, cut at exchange starts into pieces that fit the limit,
    leaving room for the summary so far that precedes every piece after the first."""
    rendered = [render_message(m) for m in messages]
    if settings.max_transcript_chars is None:
        return ["\n".join(rendered)]
    room = settings.max_transcript_chars - 4 * settings.summary_max_tokens - len(SUMMARY_PREFIX) - 2
    if room < 200:
        raise TranscriptTooLarge(
            f"summary_transcript_chars ({settings.max_transcript_chars:,}) leaves no room for a "
            f"transcript beside a summary of {settings.summary_max_tokens} tokens; raise it"
        )
    starts = cut_points(messages, steps=True)[1:] + [len(messages)]
    chunks, current, begin = [], "", 0
    for end in starts:
        piece = "\n".join(rendered[begin:end])
        begin = end
        # A step longer than the room (a 100 KB tool output) is read in parts: a transcript is text.
        for part in (piece[at : at + room] for at in range(0, len(piece), room)):
            if current and len(current) + 1 + len(part) > room:
                chunks.append(current)
                current = ""
            current = f"{current}\n{part}" if current else part
    return chunks + ([current] if current else [])


def summary_request(transcript: str, settings: CompactionSettings) -> dict[str, Any]:
    """The system prompt and messages of one summary request, in the settings' layout."""
    if settings.layout == "system":
        return {"system": settings.summary_prompt, "messages": [{"role": "user", "content": transcript}]}
    return {
        "messages": [
            {"role": "user", "content": (f"<conversation>\n{transcript}\n</conversation>\n\n{settings.summary_prompt}")}
        ]
    }


def compact(messages: list[Message], context: CompactionContext) -> list[Message]:
    """The seed's compaction: fold old exchanges into a model-written summary."""
    settings = context.settings
    size_before, split = cut_at(messages, context)
    if split is None:
        return messages
    event = CompactionEvent(
        strategy="summary", folded_messages=split, size_before=size_before, size_after=size_before, unit=settings.unit
    )
    summary, spent = None, Usage()
    for chunk in transcript_chunks(messages[:split], settings):
        transcript = chunk if summary is None else f"{SUMMARY_PREFIX}{summary}]\n{chunk}"
        response = context.client.create(
            max_tokens=settings.summary_max_tokens, **summary_request(transcript, settings)
        )
        spent += usage_of(response)
        event.chunks += 1
        event.capped = response.get("stop_reason") == "max_tokens"  # of the last chunk: the summary kept
        summary = first_text(response.get("content", []))
        if summary is None:
            break
    event.input_tokens, event.output_tokens = spent.input_tokens, spent.output_tokens
    event.cache_read_tokens = spent.cache_read_tokens
    event.latency_s, event.cached = spent.latency_s, spent.cached  # cached: every chunk was
    if summary is None:
        # Nothing to fold into: keep the history rather than lose it, and say so.
        event.folded_messages, event.error = 0, "summary response had no text block"
        context.say("skipped: the summary response had no text")
    else:
        kept = len(messages) - split
        messages = fold(summary, messages, split)
        event.summary, event.size_after = summary, context.size(messages)
        event.replaced_with = len(messages) - kept
        context.say(f"folded {split} messages into a summary")
    context.record(event)
    return messages


def truncate(messages: list[Message], context: CompactionContext) -> list[Message]:
    """The floor: drop old exchanges outright, with no summary."""
    size_before, split = cut_at(messages, context)
    if split is None:
        return messages
    kept = messages[split:]
    if kept and kept[0]["role"] == "assistant":  # cut inside a tool loop: the history must open with the user
        kept = [{"role": "user", "content": DROPPED}] + kept
    context.say(f"dropped {split} messages")
    context.record(
        CompactionEvent(
            strategy="truncate",
            folded_messages=split,
            size_before=size_before,
            size_after=context.size(kept),
            unit=context.settings.unit,
        )
    )
    return kept


def recorded(messages: list[Message], context: CompactionContext) -> list[Message]:
    """An imported log's own compactions, replayed: where the logged agent compacted, its history
    becomes the summary the log holds (no model call), so that summary's retention is measured."""
    summary = context.settings.recorded_summary
    if summary is None or not messages:
        return messages
    folded = fold(summary, messages, len(messages))
    context.say(f"folded {len(messages)} messages into the log's own summary")
    context.record(
        CompactionEvent(
            strategy="recorded",
            folded_messages=len(messages),
            size_before=context.size(messages),
            size_after=context.size(folded),
            unit=context.settings.unit,
            summary=summary,
            replaced_with=len(folded),
        )
    )
    return folded
