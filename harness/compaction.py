"""Compaction, as the seed (agent-010) designs it.

The history holds three shapes of message: user text (a string), assistant content (a list
of text and tool_use blocks) and tool results (a list of tool_result blocks). It may only be
cut at the start of an exchange (a user message whose content is a string), so a tool_use is
never separated from its tool_result. Old exchanges fold into a summary that re-enters the
history as a user turn plus a one-line assistant acknowledgement, so roles keep alternating.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Literal, TextIO

from .client import ModelError, Usage, usage_of

Message = dict[str, Any]

SEED_SUMMARY_PROMPT = (
    "Summarise the conversation below so the assistant can continue it without the original. "
    "Keep every fact, number, name, and decision that later turns might need."
)
SUMMARY_PREFIX = "[Conversation summary: "
ACKNOWLEDGEMENT = "Understood. Continuing from that summary."


@dataclass(frozen=True)
class CompactionSettings:
    summary_prompt: str = SEED_SUMMARY_PROMPT
    keep_recent: int = 1  # exchanges kept verbatim
    summary_max_tokens: int = 512
    unit: Literal["chars", "tokens"] = "chars"  # the budget's yardstick
    # The longest transcript one summary request may carry; longer ones fold in chunks, each
    # summarised together with the summary so far. None: no limit (one request, as the seed).
    max_transcript_chars: int | None = None
    # Where the summary prompt goes: "system" (the seed's: prompt as system, transcript as the user
    # turn) or "transcript-first" (one user turn: the delimited transcript, then the prompt).
    layout: Literal["system", "transcript-first"] = "system"
    prompt_id: str | None = None  # the summary prompt's id, for strategies that report it


class TranscriptTooLarge(Exception):
    """One exchange alone is longer than the transcript limit: it cannot be summarised."""


class StrategyError(Exception):
    """A custom strategy raised or returned something that is not a history: the case is an error."""


RECORDED_BY_CALLER = (ModelError, TranscriptTooLarge)  # already errors the runner records as they are


@dataclass
class CompactionEvent:
    """What one compaction did, for the harness to store beside the records."""

    strategy: str
    folded_messages: int  # messages[:folded_messages] were replaced
    size_before: int
    size_after: int
    unit: str
    summary: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    chunks: int = 0  # model requests this compaction made (summary: more than one when folded in chunks)
    error: str | None = None  # set when the compaction was skipped; the history is unchanged
    replaced_with: int = 0  # new messages put in place of the folded ones (0: dropped outright)


def render_message(message: Message) -> str:
    content = message["content"]
    if isinstance(content, str):
        return f"{message['role']}: {content}"
    parts = []
    for block in content:
        if block["type"] == "tool_result":
            parts.append(f"tool result: {tool_result_text(block)}")
        elif block["type"] == "text":
            parts.append(f"{message['role']}: {block['text']}")
        elif block["type"] == "tool_use":
            parts.append(f"{message['role']} called {block['name']}({block['input']})")
    return "\n".join(parts)


def tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content)


def history_size(messages: list[Message]) -> int:
    return sum(len(render_message(m)) for m in messages)


def exchange_starts(messages: list[Message]) -> list[int]:
    return [i for i, m in enumerate(messages) if m["role"] == "user" and isinstance(m["content"], str)]


def measure(messages: list[Message], client: Any, unit: str) -> int:
    """The history's size in the budget's unit: characters (as the seed) or model tokens."""
    if unit == "tokens":
        return client.count_tokens(messages=messages) if messages else 0
    return history_size(messages)


def split_point(messages: list[Message], size: int, context_limit: int, keep_recent: int) -> int | None:
    """Where to cut, or None when the history fits or everything in it is recent."""
    if size <= context_limit:
        return None
    starts = exchange_starts(messages)
    if len(starts) <= keep_recent:
        return None
    split = starts[-keep_recent] if keep_recent else len(messages)
    return split or None


def transcript_chunks(messages: list[Message], settings: CompactionSettings) -> list[str]:
    """The transcript to summarise, cut at exchange starts into pieces that fit the limit,
    leaving room for the summary so far that precedes every piece after the first."""
    rendered = [render_message(m) for m in messages]
    if settings.max_transcript_chars is None:
        return ["\n".join(rendered)]
    room = settings.max_transcript_chars - 4 * settings.summary_max_tokens - len(SUMMARY_PREFIX) - 2
    starts = exchange_starts(messages)[1:] + [len(messages)]
    chunks, current, begin = [], "", 0
    for end in starts:
        exchange = "\n".join(rendered[begin:end])
        if len(exchange) > room:
            raise TranscriptTooLarge(f"an exchange of {len(exchange):,} characters is longer than the "
                                     f"summary transcript limit allows ({room:,}); raise summary_transcript_chars")
        if current and len(current) + 1 + len(exchange) > room:
            chunks.append(current)
            current = ""
        current = f"{current}\n{exchange}" if current else exchange
        begin = end
    return chunks + ([current] if current else [])


def summary_request(transcript: str, settings: CompactionSettings) -> dict[str, Any]:
    """The system prompt and messages of one summary request, in the settings' layout."""
    if settings.layout == "system":
        return {"system": settings.summary_prompt, "messages": [{"role": "user", "content": transcript}]}
    return {"messages": [{"role": "user", "content": (
        f"<conversation>\n{transcript}\n</conversation>\n\n{settings.summary_prompt}")}]}


def compact(messages: list[Message], client: Any, output_stream: TextIO, context_limit: int,
            settings: CompactionSettings = CompactionSettings(),
            events: list[CompactionEvent] | None = None) -> list[Message]:
    """The seed's compaction: fold old exchanges into a model-written summary."""
    size_before = measure(messages, client, settings.unit)
    split = split_point(messages, size_before, context_limit, settings.keep_recent)
    if split is None:
        return messages
    event = CompactionEvent("summary", split, size_before, size_before, settings.unit)
    summary, spent = None, Usage()
    for chunk in transcript_chunks(messages[:split], settings):
        transcript = chunk if summary is None else f"{SUMMARY_PREFIX}{summary}]\n{chunk}"
        response = client.create(max_tokens=settings.summary_max_tokens, **summary_request(transcript, settings))
        spent += usage_of(response)
        event.chunks += 1
        summary = next((b["text"] for b in response.get("content", []) if b["type"] == "text"), None)
        if summary is None:
            break
    event.input_tokens, event.output_tokens = spent.input_tokens, spent.output_tokens
    event.latency_s, event.cached = spent.latency_s, spent.cached  # cached: every chunk was
    if summary is None:
        # Nothing to fold into: keep the history rather than lose it, and say so.
        event.folded_messages, event.error = 0, "summary response had no text block"
        output_stream.write("[compact] skipped: the summary response had no text\n")
    else:
        messages = [
            {"role": "user", "content": f"{SUMMARY_PREFIX}{summary}]"},
            {"role": "assistant", "content": ACKNOWLEDGEMENT},
        ] + messages[split:]
        event.summary, event.size_after = summary, measure(messages, client, settings.unit)
        event.replaced_with = 2
        output_stream.write(f"[compact] folded {split} messages into a summary\n")
    if events is not None:
        events.append(event)
    return messages


def truncate(messages: list[Message], client: Any, output_stream: TextIO, context_limit: int,
             settings: CompactionSettings = CompactionSettings(),
             events: list[CompactionEvent] | None = None) -> list[Message]:
    """The floor: drop old exchanges outright, with no summary."""
    size_before = measure(messages, client, settings.unit)
    split = split_point(messages, size_before, context_limit, settings.keep_recent)
    if split is None:
        return messages
    kept = messages[split:]
    output_stream.write(f"[compact] dropped {split} messages\n")
    if events is not None:
        events.append(CompactionEvent("truncate", split, size_before,
                                      measure(kept, client, settings.unit), settings.unit))
    return kept


# (messages, client, output_stream, context_limit, settings, events) -> messages
Strategy = Callable[[list[Message], Any, TextIO, int, CompactionSettings, list[CompactionEvent]], list[Message]]


class Metered:
    """The model client a custom strategy gets: every call's usage, latency and cache hits are
    added to the compaction's record, through the run's cache and call counts."""

    def __init__(self, client: Any):
        self.client, self.usage, self.requests = client, Usage(), 0

    def create(self, **request: Any) -> dict[str, Any]:
        response = self.client.create(**request)
        self.usage += usage_of(response)
        self.requests += 1
        return response

    def __getattr__(self, name: str) -> Any:  # count_tokens, identity, sampling
        return getattr(self.client, name)


@dataclass(frozen=True)
class StrategyContext:
    """What a custom strategy of the form `(messages, context) -> messages` receives."""

    client: Metered  # `create(**messages_request)` and `count_tokens(messages=...)`, metered
    settings: CompactionSettings  # unit, keep_recent, summary limits, layout, summary_prompt and prompt_id
    context_limit: int  # the budget, in `settings.unit`
    output_stream: TextIO

    def size(self, messages: list[Message]) -> int:
        """A history's size in the budget's unit (characters, or tokens counted by the model)."""
        return measure(messages, self.client, self.settings.unit)


def _text(message: Message) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "\n".join(
        b.get("text", "") if b.get("type") == "text" else tool_result_text(b) if b.get("type") == "tool_result" else ""
        for b in content)


def custom_compaction(name: str, function: Callable, contextual: bool) -> Strategy:
    """Run a user's compaction function and record what it did: whatever new messages it put in
    place of the folded ones is its summary, whatever wording it uses; its model calls are metered.
    `contextual`: the function takes `(messages, context)`; otherwise the seed's signature
    `(messages, client, output_stream, context_limit)`. Any exception it raises fails the case."""
    def strategy(messages, client, output_stream, context_limit, settings, events):
        metered = Metered(client)
        try:
            result = (function(list(messages), StrategyContext(metered, settings, context_limit, output_stream))
                      if contextual else function(list(messages), metered, output_stream, context_limit))
        except RECORDED_BY_CALLER:
            raise
        except Exception as exc:
            raise StrategyError(f"strategy {name} raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(result, list) or not all(isinstance(m, dict) and "role" in m and "content" in m
                                                   for m in result):
            raise StrategyError(f"strategy {name} returned {type(result).__name__}, not a list of messages")
        kept = 0  # how many trailing messages survived verbatim
        while kept < min(len(messages), len(result)) and result[-1 - kept] == messages[-1 - kept]:
            kept += 1
        if kept < len(messages) or len(result) != len(messages):
            new = result[:len(result) - kept]  # what now stands where the folded messages were
            text = "\n".join(t for t in map(_text, new) if t.strip())
            spent = metered.usage
            events.append(CompactionEvent(
                name, len(messages) - kept, measure(messages, client, settings.unit),
                measure(result, client, settings.unit), settings.unit, summary=text or None,
                input_tokens=spent.input_tokens, output_tokens=spent.output_tokens, latency_s=spent.latency_s,
                cached=metered.requests > 0 and spent.cached, chunks=metered.requests, replaced_with=len(new)))
        return result
    return strategy


@dataclass(frozen=True)
class StrategySpec:
    """A compaction strategy and what it depends on: the runner plans cases by it, reports label
    rows by it. Custom `module:function` strategies get one from `custom_strategy`."""

    name: str
    compact: Strategy | None  # None: the history is never compacted
    uses_budget: bool
    uses_prompt: bool
    uses_history: bool = True  # False: probes are asked with no conversation at all
    label: str | None = None  # the report's row; None: "<name>: <prompt>" with a prompt, else the name
    control: bool = False  # a reference point (ceiling, no history), not a compaction under test

    def variant(self, prompt: str | None) -> str:
        if self.label:
            return self.label
        # Only prompt-taking strategies (ours, or a custom one that sweeps prompts) have a prompt.
        return f"{self.name}: {prompt}" if prompt else self.name


STRATEGIES = {spec.name: spec for spec in (
    StrategySpec("summary", compact, uses_budget=True, uses_prompt=True),
    StrategySpec("truncate", truncate, uses_budget=True, uses_prompt=False),
    StrategySpec("none", None, uses_budget=False, uses_prompt=False, label="ceiling (full history)", control=True),
    StrategySpec("no-history", None, uses_budget=False, uses_prompt=False, uses_history=False,
                 label="control: no history", control=True),
)}


def is_contextual(function: Callable) -> bool:
    """Whether a compaction function takes `(messages, context)` rather than the seed's four arguments."""
    required = [p for p in inspect.signature(function).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(required) == 2


def custom_strategy(name: str, function: Callable) -> StrategySpec:
    """A user's `module:function`: compacts at every budget; it sweeps the eval's summary prompts
    (receiving each as `context.settings.summary_prompt`) when it declares `uses_prompt = True`."""
    return StrategySpec(name, custom_compaction(name, function, is_contextual(function)), uses_budget=True,
                        uses_prompt=bool(getattr(function, "uses_prompt", False)))


def strategy_spec(name: str) -> StrategySpec:
    """The registered strategy, or a custom one known only by name (for labelling records)."""
    return STRATEGIES.get(name) or StrategySpec(name, None, uses_budget=True, uses_prompt=False)

