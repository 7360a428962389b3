"""Users' own compaction functions (`module:function` in an eval file, or another package's
entry point) as strategies.

A function takes `(messages, context)`, the `CompactionContext` every built-in strategy gets
(its client metered), or the seed's four arguments `(messages, client, output_stream,
context_limit)`. Whatever it puts in place of the messages it folded is its summary, in any
wording, recorded with what its model calls cost, unless it records its own `CompactionEvent`
(`context.record`). Any exception it raises is an error of its case.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import plugins
from ..errors import InputError
from ..messages import Message, render_message
from ..models.client import ModelClient, ModelError, Usage, usage_of
from ..records.schema import CompactionEvent
from .context import CompactionContext, Strategy
from .seed import TranscriptTooLarge

# A user's compaction function: (messages, context) or the seed's four arguments; its result is checked.
UserFunction = Callable[..., Any]


@dataclass(frozen=True, kw_only=True)
class Compactor:
    """A compaction function with the options it declares, as data: what a `module:function` or a
    plugin's entry point may name instead of a bare function. `uses_prompt`: the strategy sweeps the
    eval's summary prompts, receiving each as `context.settings.summary_prompt`; `options`: the
    names of the settings it accepts from the eval."""

    function: UserFunction
    uses_prompt: bool = False
    # The settings it takes from the eval's `strategy_options` (as `context.settings.options`).
    options: frozenset[str] = frozenset()

    def __call__(self, *args: Any) -> Any:  # still callable as the function it declares
        return self.function(*args)


def declared(obj: UserFunction | Compactor) -> Compactor:
    """A user's strategy object as a `Compactor`; a bare function's options are read from the
    attribute earlier versions used (`function.uses_prompt = True`)."""
    if isinstance(obj, Compactor):
        return obj
    return Compactor(function=obj, uses_prompt=bool(getattr(obj, "uses_prompt", False)))


class StrategyError(Exception):
    """A custom strategy raised or returned something that is not a history: the case is an error."""


RECORDED_BY_CALLER = (ModelError, TranscriptTooLarge)  # already errors the runner records as they are


class Metered:
    """The model client a custom strategy gets: every call's usage, latency and cache hits are
    added to the compaction's record, through the run's cache and call counts."""

    def __init__(self, client: ModelClient):
        self.client, self.usage, self.requests = client, Usage(), 0
        self.capped = False  # some call stopped at its max_tokens

    def create(self, **request: Any) -> dict[str, Any]:
        response: dict[str, Any] = self.client.create(**request)
        self.usage += usage_of(response)
        self.requests += 1
        self.capped = self.capped or response.get("stop_reason") == "max_tokens"
        return response

    def __getattr__(self, name: str) -> Any:  # count_tokens, identity, sampling
        return getattr(self.client, name)


def custom_compaction(name: str, function: UserFunction, contextual: bool) -> Strategy:
    """Run a user's compaction function and record what it did: whatever new messages it put in
    place of the folded ones is its summary, whatever wording it uses; its model calls are metered.
    `contextual`: the function takes `(messages, context)`; otherwise the seed's signature
    `(messages, client, output_stream, context_limit)`. Any exception it raises fails the case."""

    def strategy(messages: list[Message], context: CompactionContext) -> list[Message]:
        metered = Metered(context.client)
        recorded_before = len(context.events)
        try:
            result = (
                function(list(messages), dataclasses.replace(context, client=metered))
                if contextual
                else function(list(messages), metered, context.output_stream, context.limit)
            )
        except RECORDED_BY_CALLER:
            raise
        except Exception as exc:
            raise StrategyError(f"strategy {name} raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(result, list) or not all(
            isinstance(m, dict) and "role" in m and "content" in m for m in result
        ):
            raise StrategyError(f"strategy {name} returned {type(result).__name__}, not a list of messages")
        for own in context.events[recorded_before:]:  # its own events, under the name the eval gave it
            own.strategy = name
        if len(context.events) == recorded_before:  # it recorded nothing itself: the harness records it
            derived = _what_changed(name, messages, result, context, metered)
            if derived is not None:
                context.record(derived)
        return result

    return strategy


def _what_changed(
    name: str, messages: list[Message], result: list[Message], context: CompactionContext, metered: Metered
) -> CompactionEvent | None:
    """A compaction's event read from the history before and after it; None: nothing changed."""
    kept = 0  # how many trailing messages survived verbatim
    while kept < min(len(messages), len(result)) and result[-1 - kept] == messages[-1 - kept]:
        kept += 1
    if kept == len(messages) and len(result) == len(messages):
        return None
    new = result[: len(result) - kept]  # what now stands where the folded messages were
    # Text as it stands; of block messages, their rendering, so tool calls an edit kept still count.
    text = "\n".join(t for t in (_text_of(m) for m in new) if t.strip())
    spent = metered.usage
    return CompactionEvent(
        strategy=name,
        folded_messages=len(messages) - kept,
        size_before=context.size(messages),
        size_after=context.size(result),
        unit=context.settings.unit,
        summary=text or None,
        input_tokens=spent.input_tokens,
        output_tokens=spent.output_tokens,
        cache_read_tokens=spent.cache_read_tokens,
        latency_s=spent.latency_s,
        cached=metered.requests > 0 and spent.cached,
        chunks=metered.requests,
        replaced_with=len(new),
        capped=metered.capped if metered.requests else None,
        edited=_edited_in_place(messages, result),
    )


def _blocks_of(messages: list[Message], kind: str, key: str) -> dict[str, Any]:
    return {
        block[key]: block
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == kind and key in block
    }


def _edited_in_place(messages: list[Message], result: list[Message]) -> int:
    """How many tool results a strategy changed in place (cleared, masked, shortened) while every
    tool call is still there: an edit like Inspect's CompactionEdit, whose folded facts are measured
    in the history it leaves, not in a summary. 0: it removed calls (a fold) or changed no result."""
    calls_before, calls_after = _blocks_of(messages, "tool_use", "id"), _blocks_of(result, "tool_use", "id")
    if not calls_before or not calls_before.keys() <= calls_after.keys():
        return 0
    before, after = _blocks_of(messages, "tool_result", "tool_use_id"), _blocks_of(result, "tool_result", "tool_use_id")
    return sum(1 for id_, block in before.items() if id_ in after and after[id_].get("content") != block.get("content"))


def _text_of(message: Message) -> str:
    content = message["content"]
    return content if isinstance(content, str) else render_message(message)


def is_contextual(function: UserFunction) -> bool:
    """Whether a compaction function takes `(messages, context)` rather than the seed's four arguments."""
    required = [
        p
        for p in inspect.signature(function).parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return len(required) == 2


SEED_PARAMETERS = ("messages", "client", "output_stream", "context_limit")
CONTEXT_PARAMETERS = ("messages", "context")


def import_strategy(name: str, origin: Path, line: int | None, field: str) -> Compactor:
    """A user's strategy, checked to take compaction arguments before anything runs: a
    `module:function` (from where they run the harness or beside the eval file), or the name of a
    strategy another installed package registers (`harness.plugins`)."""
    try:
        with contextlib.redirect_stdout(sys.stderr):  # whatever its import prints must not mix into our output
            found = _import_function(name, origin) if ":" in name else plugins.load("strategies", name)
    except plugins.PluginError as exc:
        raise InputError(origin, str(exc), line, field) from None
    except (ImportError, AttributeError) as exc:
        raise InputError(origin, f"cannot import strategy {name!r}: {exc}", line, field) from None
    except Exception as exc:  # a syntax error or a failure inside the user's module
        raise InputError(
            origin, f"importing strategy {name!r} failed: {type(exc).__name__}: {exc}", line, field
        ) from None
    if not callable(found):
        raise InputError(origin, f"strategy {name!r} is not a function", line, field)
    compactor = declared(found)
    function = compactor.function
    try:
        inspect.signature(function).bind(*(CONTEXT_PARAMETERS if is_contextual(function) else SEED_PARAMETERS))
    except (TypeError, ValueError) as exc:
        raise InputError(
            origin,
            f"strategy {name!r} is not a compaction function ({exc}): it must take "
            f"({', '.join(CONTEXT_PARAMETERS)}) or ({', '.join(SEED_PARAMETERS)}) and return "
            "the new messages",
            line,
            field,
        ) from None
    return compactor


def _import_function(name: str, origin: Path) -> Any:
    module_name, function_name = name.split(":")
    for folder in (str(Path.cwd()), str(origin.parent.resolve())):
        if folder not in sys.path:
            sys.path.append(folder)
    return getattr(importlib.import_module(module_name), function_name)
