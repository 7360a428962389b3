"""Inspect AI's compaction strategies (`inspect_ai.model.CompactionSummary`, `CompactionEdit`,
`CompactionTrim`) as harness strategies, run as Inspect ships them.

    strategies: [harness.adapters.inspect_ai:summary]              # Inspect's own summary prompt
    strategies: [harness.adapters.inspect_ai:summary_with_prompt]  # sweeps the eval's prompts
    strategies: [harness.adapters.inspect_ai:edit, harness.adapters.inspect_ai:trim]

Install with `pip install 'compaction-harness[inspect]'`. Inspect's own `compact()` runs unchanged;
the adapter only translates and triggers. Our history becomes Inspect's `ChatMessage`s and back
(`to_inspect`, `from_inspect`; consecutive messages of one role are joined, as Inspect itself does
before any provider sees them). Inspect's `Model` is given a `ModelAPI` over the harness's metered
client (`HarnessModelAPI`), so the summary is written by the model under test and every call is
cached, counted and recorded. Inspect triggers at a token `threshold`; here the eval's budget is
the threshold (in the eval's unit). Inspect's other knobs come from the eval's `strategy_options`
(for example `keep_tool_uses` for `edit`, `preserve` for `trim`, `instructions` for `summary`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

try:
    from inspect_ai._util.content import ContentText
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
        CompactionEdit,
        CompactionSummary,
        CompactionTrim,
        GenerateConfig,
        ModelAPI,
        ModelOutput,
        get_model,
        modelapi,
    )
    from inspect_ai.model._compaction.types import CompactionStrategy
    from inspect_ai.tool import ToolCall, ToolCallError
except ImportError as exc:  # the one line a user needs, instead of a traceback into our imports
    raise ImportError(f"Inspect AI is not installed ({exc}): pip install 'compaction-harness[inspect]'") from None

from ..compaction.context import CompactionContext
from ..compaction.custom import Compactor
from ..messages import Message, append_joined, content_text, history_problem
from ..models.client import ModelClient


@modelapi(name="harness")
class HarnessModelAPI(ModelAPI):
    """An Inspect model provider that sends every request through the harness's (metered) client:
    `get_model("harness/<model>", client=..., memoize=False)`."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        *,
        client: ModelClient,
    ):
        config = config or GenerateConfig()
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        self.client, self.default_max_tokens = client, config.max_tokens or 512

    async def generate(
        self, input: list[ChatMessage], tools: Any, tool_choice: Any, config: GenerateConfig
    ) -> ModelOutput:
        system = "\n".join(m.text for m in input if isinstance(m, ChatMessageSystem))
        messages = from_inspect([m for m in input if not isinstance(m, ChatMessageSystem)])
        response = self.client.create(
            max_tokens=config.max_tokens or self.default_max_tokens,
            messages=messages,
            **({"system": system} if system else {}),
        )
        text = content_text(response.get("content", []), separator="")
        capped = response.get("stop_reason") == "max_tokens"
        return ModelOutput.from_content(
            model=self.model_name, content=text, stop_reason="max_tokens" if capped else "stop"
        )


def to_inspect(messages: list[Message]) -> list[ChatMessage]:
    """Our history as Inspect's messages: user text, assistant text and tool calls, and one
    `ChatMessageTool` per tool_result block (a user message's text blocks after them stay user text)."""
    converted: list[ChatMessage] = []
    names: dict[str, str] = {}  # tool_use id -> tool name, which Inspect's tool message carries
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            kind = ChatMessageUser if message["role"] == "user" else ChatMessageAssistant
            converted.append(kind(content=content))
        elif message["role"] == "assistant":
            calls = [
                ToolCall(id=b["id"], function=b["name"], arguments=b.get("input") or {})
                for b in content
                if b["type"] == "tool_use"
            ]
            names.update((call.id, call.function) for call in calls)
            texts: list[Any] = [ContentText(text=b["text"]) for b in content if b["type"] == "text"]
            converted.append(ChatMessageAssistant(content=texts, tool_calls=calls or None))
        else:
            for block in content:
                if block["type"] == "tool_result":
                    converted.append(_tool_message(block, names.get(block["tool_use_id"])))
                elif block["type"] == "text":
                    converted.append(ChatMessageUser(content=[ContentText(text=block["text"])]))
    return converted


def _tool_message(block: dict[str, Any], function: str | None) -> ChatMessageTool:
    result = block.get("content") or ""
    content: Any = result if isinstance(result, str) else [ContentText(text=content_text([b])) for b in result]
    error = ToolCallError(type="unknown", message=content_text(result)) if block.get("is_error") else None
    return ChatMessageTool(content=content, tool_call_id=block["tool_use_id"], function=function, error=error)


def from_inspect(messages: list[ChatMessage]) -> list[Message]:
    """Inspect's messages as our history. Consecutive messages of one role become one message (tool
    results and user text together; two user texts joined by a blank line), as Inspect joins them
    before a provider sees them, so roles alternate as the Messages API requires."""
    result: list[Message] = []
    for m in messages:
        role, content = _ours(m)
        append_joined(result, {"role": role, "content": content})
    return result


def _ours(m: ChatMessage) -> tuple[str, str | list[dict[str, Any]]]:
    if isinstance(m, ChatMessageTool):
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id or ""}
        block["content"] = m.content if isinstance(m.content, str) else [{"type": "text", "text": m.text}]
        if m.error is not None:
            block["is_error"] = True
        return "user", [block]
    if isinstance(m, ChatMessageAssistant) and (m.tool_calls or not isinstance(m.content, str)):
        texts = [{"type": "text", "text": c.text} for c in _parts(m) if isinstance(c, ContentText)]
        calls = [{"type": "tool_use", "id": c.id, "name": c.function, "input": c.arguments} for c in m.tool_calls or []]
        return "assistant", texts + calls
    role = "assistant" if isinstance(m, ChatMessageAssistant) else "user"
    if isinstance(m.content, str):
        return role, m.content
    return role, [{"type": "text", "text": c.text} for c in m.content if isinstance(c, ContentText)]


def _parts(m: ChatMessage) -> list[Any]:
    return [ContentText(text=m.content)] if isinstance(m.content, str) else list(m.content)


# The knobs each of Inspect's strategies takes from the eval's `strategy_options` (its threshold is
# the eval's budget, and `memory` needs a memory tool the sessions do not have).
SUMMARY_OPTIONS = frozenset({"instructions", "prompt"})
EDIT_OPTIONS = frozenset({"keep_tool_uses", "keep_tool_inputs", "exclude_tools", "keep_thinking_turns"})
TRIM_OPTIONS = frozenset({"preserve"})


def _run(build: Callable[[dict[str, Any], CompactionContext], CompactionStrategy]) -> Callable[..., list[Message]]:
    """A harness strategy that, once the history is over the eval's limit, runs Inspect's `compact`
    on it with Inspect's `Model` over our client, and carries on with what Inspect kept."""

    def compact(messages: list[Message], context: CompactionContext) -> list[Message]:
        if not context.over_limit(context.size(messages)):
            return messages
        strategy = build(dict(context.settings.options), context)
        model = get_model(
            "harness/model-under-test",  # the client is the model under test
            config=GenerateConfig(max_tokens=context.settings.summary_max_tokens),
            memoize=False,
            client=context.client,
        )
        kept, _ = asyncio.run(strategy.compact(model, to_inspect(messages), []))
        result = from_inspect(kept)
        problem = "it returned no messages" if not result else history_problem(result)
        if problem:  # raised here, it is the case's error (custom_compaction), not a crash later
            raise ValueError(f"Inspect's {type(strategy).__name__} left a history the agent cannot send: {problem}")
        return result

    return compact


def _summary(options: dict[str, Any], context: CompactionContext) -> CompactionStrategy:
    return CompactionSummary(threshold=context.limit or 0, **options)


def _summary_with_prompt(options: dict[str, Any], context: CompactionContext) -> CompactionStrategy:
    # Our prompt in place of Inspect's; `{addendums}` is where Inspect adds its `instructions`.
    prompt = context.settings.summary_prompt.replace("{", "{{").replace("}", "}}")
    return CompactionSummary(threshold=context.limit or 0, prompt=f"{prompt}\n\n{{addendums}}", **options)


def _edit(options: dict[str, Any], context: CompactionContext) -> CompactionStrategy:
    return CompactionEdit(threshold=context.limit or 0, **options)


def _trim(options: dict[str, Any], context: CompactionContext) -> CompactionStrategy:
    return CompactionTrim(threshold=context.limit or 0, **options)


# Inspect's CompactionSummary with its own prompt (it keeps the system prompt and the first user
# turn, and summarises everything after them).
summary = Compactor(function=_run(_summary), options=SUMMARY_OPTIONS)
# The same, with each of the eval's summary prompts in place of Inspect's.
summary_with_prompt = Compactor(
    function=_run(_summary_with_prompt), uses_prompt=True, options=SUMMARY_OPTIONS - {"prompt"}
)
# Inspect's CompactionEdit: older tool results replaced by "(Tool result removed)", no model call.
edit = Compactor(function=_run(_edit), options=EDIT_OPTIONS)
# Inspect's CompactionTrim: keeps the prefix and the last `preserve` share of the conversation.
trim = Compactor(function=_run(_trim), options=TRIM_OPTIONS)

__all__ = ["HarnessModelAPI", "edit", "from_inspect", "summary", "summary_with_prompt", "to_inspect", "trim"]
