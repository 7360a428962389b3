"""The OpenHands SDK's `LLMSummarizingCondenser` as a harness strategy, run as OpenHands ships it.

    strategies: [harness.adapters.openhands:summarizing]   # OpenHands's own summary prompt

Install with `pip install 'compaction-harness[openhands]'` (the SDK needs Python 3.12 or newer).
The condenser runs unchanged; the adapter only translates and triggers. Our history becomes
OpenHands events (`to_openhands`): user and assistant text as `MessageEvent`s, each tool call an
`ActionEvent` (one LLM response per assistant message, so a message's parallel calls stay one
unit) and each tool result an `ObservationEvent`; every event's id is its place in our history, so
what the condenser keeps maps back to our messages exactly (`from_openhands`). The summary is
written by the model under test: the condenser's `LLM` is `HarnessLLM`, whose `generate` sends
OpenHands's summary request through the harness's metered client (cached, counted, recorded).

OpenHands condenses when its agent asks it to (a `CondensationRequest`, which its agent raises when
the model's context window is exceeded) or when the view holds more than `max_size` events. Here the
eval's budget plays the context window: over it, the view carries the request, and the condenser
keeps its first `keep_first` events and the newer half of the rest, summarising the events between.
Its knobs come from the eval's `strategy_options` (`keep_first`, `max_size`, `minimum_progress`).
"""

from __future__ import annotations

import json
import os
from typing import Any

# Importing them otherwise fetches LiteLLM's price list from the network (retrying for seconds),
# prints OpenHands's banner, and sets the root logger to print every HTTP request at INFO.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("LOG_AUTO_CONFIG", "false")

try:
    from litellm.types.utils import ModelResponse
    from openhands.sdk.context.condenser import LLMSummarizingCondenser
    from openhands.sdk.context.view import View
    from openhands.sdk.event import (
        ActionEvent,
        CondensationSummaryEvent,
        LLMConvertibleEvent,
        MessageEvent,
        ObservationEvent,
    )
    from openhands.sdk.event.condenser import Condensation
    from openhands.sdk.llm import LLM, LLMResponse, MessageToolCall, TextContent
    from openhands.sdk.llm import Message as OpenHandsMessage
    from openhands.sdk.tool.client_tool import ClientToolObservation
    from pydantic import PrivateAttr
except ImportError as exc:  # the one line a user needs, instead of a traceback into our imports
    raise ImportError(
        f"The OpenHands SDK is not installed ({exc}): pip install 'compaction-harness[openhands]' (Python 3.12+)"
    ) from None

from ..compaction.context import CompactionContext
from ..compaction.custom import Compactor
from ..messages import Message, append_joined, content_text, history_problem
from ..models.client import ModelClient


class HarnessLLM(LLM):
    """OpenHands's `LLM` with its requests sent through the harness's (metered) client."""

    _client: Any = PrivateAttr()

    def bind(self, client: ModelClient) -> HarnessLLM:
        self._client = client
        return self

    def generate(self, messages: list[OpenHandsMessage], *args: Any, **kwargs: Any) -> LLMResponse:
        system = "\n".join(_text(m) for m in messages if m.role == "system")
        turns = [
            {"role": "assistant" if m.role == "assistant" else "user", "content": _text(m)}
            for m in messages
            if m.role != "system"
        ]
        response = self._client.create(
            max_tokens=self.max_output_tokens or 512, messages=turns, **({"system": system} if system else {})
        )
        text = content_text(response.get("content", []), separator="")
        raw = ModelResponse(
            id=response.get("id") or "harness",
            model=self.model,
            choices=[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        )
        return LLMResponse(
            message=OpenHandsMessage(role="assistant", content=[TextContent(text=text)] if text else []),
            metrics=self.metrics.get_snapshot(),
            raw_response=raw,
        )


def _text(message: OpenHandsMessage) -> str:
    return "".join(c.text for c in message.content if isinstance(c, TextContent))


def to_openhands(messages: list[Message]) -> list[LLMConvertibleEvent]:
    """Our history as OpenHands events; event `i` or `i.k` comes from our message `i`."""
    events: list[LLMConvertibleEvent] = []
    actions: dict[str, tuple[str, str]] = {}  # tool_use id -> (action event id, tool name)
    for index, message in enumerate(messages):
        content, role = message["content"], message["role"]
        if isinstance(content, str):
            events.append(_said(f"{index}", role, content))
        elif role == "assistant":
            calls = [b for b in content if b["type"] == "tool_use"]
            thought = [TextContent(text=b["text"]) for b in content if b["type"] == "text"]
            if not calls:
                events.append(_said(f"{index}", role, content_text(content)))
            for k, call in enumerate(calls):
                actions[call["id"]] = (f"{index}.{k}", call["name"])
                events.append(
                    ActionEvent(
                        id=f"{index}.{k}",
                        thought=thought if k == 0 else [],  # the message's words go with its first call
                        tool_name=call["name"],
                        tool_call_id=call["id"],
                        tool_call=MessageToolCall(
                            id=call["id"],
                            name=call["name"],
                            arguments=json.dumps(call.get("input") or {}),
                            origin="completion",
                        ),
                        llm_response_id=f"response-{index}",
                    )
                )
        else:
            for k, block in enumerate(content):
                if block["type"] == "tool_result":
                    action_id, name = actions.get(block["tool_use_id"], ("", "unknown"))
                    text = content_text(block.get("content") or "")
                    observation = ClientToolObservation.from_text(text=text, is_error=bool(block.get("is_error")))
                    events.append(
                        ObservationEvent(
                            id=f"{index}.{k}",
                            tool_name=name,
                            tool_call_id=block["tool_use_id"],
                            observation=observation,
                            action_id=action_id,
                        )
                    )
                elif block["type"] == "text":
                    events.append(_said(f"{index}.{k}", "user", block["text"]))
    return events


def _said(event_id: str, role: str, text: str) -> MessageEvent:
    return MessageEvent(
        id=event_id,
        source="user" if role == "user" else "agent",
        llm_message=OpenHandsMessage(role="user" if role == "user" else "assistant", content=[TextContent(text=text)]),
    )


def from_openhands(events: list[LLMConvertibleEvent], originals: list[Message]) -> list[Message]:
    """Back to our messages: a message whose events were all kept is our original; one the
    condenser split keeps the blocks of its kept events; a summary is user text. Consecutive
    messages of one role are joined, as OpenHands's own request would be."""
    expected: dict[int, int] = {}
    for event in to_openhands(originals):
        position = int(event.id.split(".")[0])
        expected[position] = expected.get(position, 0) + 1
    kept: dict[int, int] = {}
    for event in events:
        if not isinstance(event, CondensationSummaryEvent):
            position = int(event.id.split(".")[0])
            kept[position] = kept.get(position, 0) + 1
    result: list[Message] = []
    for event in events:
        if isinstance(event, CondensationSummaryEvent):
            append_joined(result, {"role": "user", "content": event.summary})
            continue
        position = int(event.id.split(".")[0])
        original = originals[position]
        if kept[position] == expected[position]:
            if not result or result[-1] is not original:
                append_joined(result, original)
        else:
            append_joined(result, {"role": original["role"], "content": _blocks_of(event, original)})
    return result


def _blocks_of(event: LLMConvertibleEvent, original: Message) -> list[dict[str, Any]]:
    content = original["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(event, ActionEvent):
        texts = [b for b in content if b["type"] == "text"] if event.thought else []
        return texts + [b for b in content if b["type"] == "tool_use" and b["id"] == event.tool_call_id]
    if isinstance(event, ObservationEvent):
        return [b for b in content if b["type"] == "tool_result" and b["tool_use_id"] == event.tool_call_id]
    k = int(event.id.partition(".")[2] or 0)
    return [content[k]]


OPTIONS = frozenset({"keep_first", "max_size", "minimum_progress"})


def _summarizing(messages: list[Message], context: CompactionContext) -> list[Message]:
    """Over the eval's limit, OpenHands's condenser handles a condensation request on our history
    (its own `max_size` trigger applies too); what it keeps and its summary become our history."""
    llm = HarnessLLM(
        model="harness/model-under-test", usage_id="condenser", max_output_tokens=context.settings.summary_max_tokens
    ).bind(context.client)
    condenser = LLMSummarizingCondenser(llm=llm, **dict(context.settings.options))
    events = to_openhands(messages)
    view = View(events=events, unhandled_condensation_request=context.over_limit(context.size(messages)))
    outcome = condenser.condense(view)
    if not isinstance(outcome, Condensation):
        return messages
    if not outcome.summary:
        raise ValueError("OpenHands's LLMSummarizingCondenser returned no summary")
    result = from_openhands(outcome.apply(events), messages)
    problem = history_problem(result)
    if problem:  # raised here, it is the case's error (custom_compaction), not a crash later
        raise ValueError(f"OpenHands's LLMSummarizingCondenser left a history the agent cannot send: {problem}")
    return result


# OpenHands's LLMSummarizingCondenser with its own prompt and defaults (keep_first 2, max_size 240).
summarizing = Compactor(function=_summarizing, options=OPTIONS)

__all__ = ["HarnessLLM", "from_openhands", "summarizing", "to_openhands"]
