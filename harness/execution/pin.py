"""The pinning arm (`<strategy>+pin`): after compaction, the user's rules are put back verbatim.

Whatever the strategy folds, the sentences of the user's own lines that state a rule ("don't edit
billing/schema.py", "use httpie, not curl") or lift one ("you may edit it now") are copied, word
for word and in order, into a block at the head of the compacted history (after the summary). The
rule grammar is `sources.rules`, the one derivation and the audit use, so the arm is what an agent
could deploy: it knows nothing of the scenario's facts. A later compaction that folds the block pins its rules
again; a summary's own sentences are the model's words and are never pinned.

What the block costs is the event's `pinned_size`, in the eval's unit, beside what the strategy
saved (`size_before` - `size_after`).
"""

from __future__ import annotations

import re

from ..compaction.context import CompactionContext, Strategy
from ..compaction.seed import ACKNOWLEDGEMENT, SUMMARY_PREFIX
from ..messages import Message
from ..sources.rules import lifts, prohibitions

PIN_PREFIX = "[The user's rules, in their own words, from the part of this conversation compacted above:\n"
PIN_END = "\n(end of the user's rules)]"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def pinned(strategy: Strategy) -> Strategy:
    """`strategy`, with the user's rules from what it folded put back verbatim after it runs."""

    def compact(messages: list[Message], context: CompactionContext, /) -> list[Message]:
        seen = len(context.events)
        after = strategy(messages, context)
        kept = {id(message) for message in after}
        rules = user_rules([m for m in messages if id(m) not in kept])
        folded = [e for e in context.events[seen:] if e.folded_messages and e.error is None]
        if not rules or not folded:
            return after
        block = PIN_PREFIX + "\n".join(f"- {rule}" for rule in rules) + PIN_END
        with_pin = _with_block(after, block)
        event = folded[-1]
        event.pinned, event.size_after = block, context.size(with_pin)
        event.pinned_size = event.size_after - context.size(after)
        return with_pin

    return compact


def user_rules(messages: list[Message]) -> list[str]:
    """The sentences of the user's own lines in `messages` that state a rule or lift one, verbatim
    and in order (an earlier pin's rules included, a summary's sentences never)."""
    rules: list[str] = []
    objects: list[str] = []  # what the rules so far forbid: a later sentence may lift one
    for message in messages:
        if message["role"] != "user":
            continue
        for text in _texts(message):
            earlier, text = _split_pin(text)
            rules += earlier
            objects += [obj for rule in earlier for _, obj in prohibitions(rule)]
            if text.startswith(SUMMARY_PREFIX):
                continue
            for sentence in (s.strip() for s in _SENTENCE_END.split(text)):
                forbidden = prohibitions(sentence)
                if sentence and (forbidden or any(lifts(sentence, obj) for obj in objects)):
                    rules.append(sentence)
                    objects += [obj for _, obj in forbidden]
    return list(dict.fromkeys(rules))


def _texts(message: Message) -> list[str]:
    """The user's words in a message: its text, or its text blocks (never a tool's result)."""
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [block["text"] for block in content if block.get("type") == "text"]


def _split_pin(text: str) -> tuple[list[str], str]:
    """An earlier pin's rules, and the rest of the text."""
    start = text.find(PIN_PREFIX)
    if start < 0:
        return [], text
    end = text.find(PIN_END, start)
    end = len(text) if end < 0 else end
    listed = text[start + len(PIN_PREFIX) : end].split("\n")
    rest = (text[:start] + text[end + len(PIN_END) :]).strip()
    return [line.removeprefix("- ") for line in listed if line.strip()], rest


def _with_block(messages: list[Message], block: str) -> list[Message]:
    """The history with the block at its head: after the summary that opens it, else as a user
    turn of its own (acknowledged, when a user line follows, so roles keep alternating)."""
    opens = messages[0]["content"] if messages else None
    if isinstance(opens, str) and opens.startswith(SUMMARY_PREFIX):
        return [{**messages[0], "content": f"{opens}\n\n{block}"}, *messages[1:]]
    opening: list[Message] = [{"role": "user", "content": block}]
    if messages and messages[0]["role"] == "user":
        opening.append({"role": "assistant", "content": ACKNOWLEDGEMENT})
    return opening + messages
