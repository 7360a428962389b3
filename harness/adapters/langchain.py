"""LangChain's `SummarizationMiddleware` (langchain 1.x) as a harness strategy.

    strategies: [harness.adapters.langchain:summarization]        # LangChain's own summary prompt
    strategies: [harness.adapters.langchain:summarization_with_prompt]  # sweeps the eval's prompts

Install with `pip install 'compaction-harness[langchain]'`. The middleware runs unchanged; the adapter only
translates: our messages become LangChain messages (ids are their positions, so the messages
LangChain keeps map back to ours exactly), its chat model is `HarnessChatModel` over the metered
client (so every summary call is cached, counted and recorded), it triggers at the eval's budget
in the eval's unit, and keeps the eval's `keep_recent` exchanges (steps, under `cut: steps`).
"""

from __future__ import annotations

from typing import Any

try:
    from langchain.agents.middleware.summarization import DEFAULT_SUMMARY_PROMPT, SummarizationMiddleware
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langgraph.runtime import Runtime
except ImportError as exc:  # the one line a user needs, instead of a traceback into our imports
    raise ImportError(f"LangChain is not installed ({exc}): pip install 'compaction-harness[langchain]'") from None

from ..compaction.context import CompactionContext
from ..compaction.custom import Compactor
from ..messages import Message, content_text, cut_points


class HarnessChatModel(BaseChatModel):
    """A LangChain chat model that sends its requests through the harness's (metered) client."""

    client: Any
    max_tokens: int = 512

    @property
    def _llm_type(self) -> str:
        return "harness"

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        system = "\n".join(m.text for m in messages if isinstance(m, SystemMessage))
        turns = [
            {"role": "assistant" if isinstance(m, AIMessage) else "user", "content": m.text}
            for m in messages
            if not isinstance(m, SystemMessage)
        ]
        response = self.client.create(
            max_tokens=self.max_tokens, messages=turns, **({"system": system} if system else {})
        )
        text = content_text(response.get("content", []), separator="")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def _to_langchain(messages: list[Message]) -> list[AnyMessage]:
    """Each of our messages as LangChain's, with its position as id (tool results: one per block)."""
    converted: list[AnyMessage] = []
    for index, message in enumerate(messages):
        content, mid = message["content"], str(index)
        if isinstance(content, str):
            converted.append((HumanMessage if message["role"] == "user" else AIMessage)(content=content, id=mid))
        elif message["role"] == "assistant":
            text = content_text(content)
            calls = [
                {"name": b["name"], "args": b.get("input") or {}, "id": b["id"]}
                for b in content
                if b["type"] == "tool_use"
            ]
            converted.append(AIMessage(content=text, tool_calls=calls, id=mid))
        else:
            results = [b for b in content if b["type"] == "tool_result"]
            converted += [
                ToolMessage(
                    content=content_text(b.get("content") or ""), tool_call_id=b["tool_use_id"], id=f"{mid}.{i}"
                )
                for i, b in enumerate(results)
            ] or [HumanMessage(content=str(content), id=mid)]
    return converted


def _compact(messages: list[Message], context: CompactionContext, summary_prompt: str) -> list[Message]:
    # The eval's `keep_recent` counts exchanges, or under `cut: steps` the steps of a tool loop, as
    # LangChain's own middleware cuts inside a tool loop (keeping each tool call with its result): a
    # coding agent's session of one request and many steps is compacted too.
    points = cut_points(messages, steps=context.settings.cut == "steps")
    keep = context.settings.keep_recent
    if keep and len(points) <= keep:
        return messages  # everything is recent: nothing may be folded
    kept_messages = len(messages) - points[-keep] if keep else 0
    if context.limit is None:
        raise ValueError("LangChain's SummarizationMiddleware triggers at a budget: give the eval one")
    middleware = SummarizationMiddleware(
        HarnessChatModel(client=context.client, max_tokens=context.settings.summary_max_tokens),
        trigger=("tokens", context.limit),
        keep=("messages", max(kept_messages, 1)),
        # The middleware's "tokens" are whatever the counter counts: here the eval's own unit.
        token_counter=lambda lc_messages: context.size(
            _ours([m for m in lc_messages if isinstance(m, BaseMessage)], messages)
        ),
        summary_prompt=summary_prompt,
        trim_tokens_to_summarize=None,
    )
    update = middleware.before_model({"messages": _to_langchain(messages)}, Runtime())
    if update is None:
        return messages
    return _ours([m for m in update["messages"] if m.type != "remove"], messages)


def _ours(lc_messages: list[BaseMessage], originals: list[Message]) -> list[Message]:
    """Back to our messages: a kept message is our original; a new one (the summary) is user text."""
    result: list[Message] = []
    for m in lc_messages:
        index = m.id.split(".")[0] if m.id else ""
        original = originals[int(index)] if index.isdigit() and int(index) < len(originals) else None
        if original is None:
            result.append({"role": "user", "content": m.text})
        elif not result or result[-1] is not original:  # tool results of one message come back once
            result.append(original)
    return result


def summarization(messages: list[Message], context: CompactionContext) -> list[Message]:
    """LangChain's SummarizationMiddleware with its own summary prompt."""
    return _compact(messages, context, DEFAULT_SUMMARY_PROMPT)


def _with_prompt(messages: list[Message], context: CompactionContext) -> list[Message]:
    prompt = context.settings.summary_prompt.replace("{", "{{").replace("}", "}}")
    return _compact(messages, context, f"{prompt}\n\n<messages>\n{{messages}}\n</messages>")


# LangChain's SummarizationMiddleware with each of the eval's summary prompts in turn.
summarization_with_prompt = Compactor(function=_with_prompt, uses_prompt=True)
