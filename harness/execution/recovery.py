"""The recovery arm (`<strategy>+recovery`): after compaction the agent may search what it folded.

Before it answers a probe or takes its next step, the agent is offered one more tool,
`search_history`: a full-text search (SQLite FTS5, ranked by BM25) over the messages of the
history as played that its compacted history no longer holds verbatim, whatever the strategy
(folded into a summary, dropped, or cleared in place). It may call it up to `max_searches` times;
a call past that is answered with an error and searches nothing. Calls the model writes as text
are read as calls, as for every tool (`models.tool_text`).

What the searches did is read back from the agent's own history (`searches_in`), not kept in the
tool, so the record is what the model saw.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..inputs.evalfile import RecoverySettings
from ..messages import Message, content_text, render_message
from .agent import Agent, Tool, ToolRegistry

SEARCH_TOOL = "search_history"
SYSTEM_NOTE = (
    " Earlier parts of this conversation were compacted out of your context; the search_history "
    "tool searches their full text. Use it when the answer may be in what is no longer shown."
)
NO_RESULTS = "No match in the earlier conversation."


def folded(full: list[Message], kept: list[Message]) -> list[Message]:
    """The messages of the history as played that the compacted history does not hold verbatim."""
    return [m for m in full if m not in kept]


class Archive:
    """The folded messages, one row each, in an in-memory FTS5 index."""

    def __init__(self, messages: list[Message]):
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.execute("CREATE VIRTUAL TABLE folded USING fts5(body)")
        self.db.executemany("INSERT INTO folded (body) VALUES (?)", [(render_message(m),) for m in messages])

    def search(self, query: str, results: int, snippet_tokens: int) -> list[str]:
        """The best `results` passages for the query's words (any of them; BM25 ranks those with
        more, and rarer, first), each cut to about `snippet_tokens` words around its matches."""
        words = re.findall(r"\w+", query)
        if not words:
            return []
        match = " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
        rows = self.db.execute(
            "SELECT snippet(folded, 0, '', '', ' ... ', ?) FROM folded WHERE folded MATCH ? ORDER BY rank LIMIT ?",
            (min(snippet_tokens, 64), match, results),
        )
        return [row[0] for row in rows]


def search_tool(archive: Archive, settings: RecoverySettings) -> Tool:
    """The `search_history` tool over `archive`, refusing calls past `settings.max_searches`. (A
    case replayed for a batch wave plays from the start, with a new tool: the count starts again.)"""
    made = 0

    def run(query: str = "", **_: Any) -> str:
        nonlocal made
        made += 1
        if made > settings.max_searches:
            raise RuntimeError(f"no searches left ({settings.max_searches} made): answer with what you have")
        found = archive.search(str(query), settings.results, settings.snippet_tokens)
        return "\n---\n".join(found) if found else NO_RESULTS

    return Tool(
        name=SEARCH_TOOL,
        description="Full-text search over the earlier part of this conversation that was compacted "
        "away: tool outputs, files read, commands run, what the user said. Returns the best matching passages.",
        input_schema={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Words to look for (exact names work best)."}},
            "required": ["query"],
        },
        run=run,
    )


def offer(agent: Agent, full: list[Message], settings: RecoverySettings) -> None:
    """Give `agent` (a fork about to answer) the search over what its history folded of `full`."""
    archive = Archive(folded(full, agent.messages))
    agent.tools = ToolRegistry([*agent.tools.tools.values(), search_tool(archive, settings)])
    agent.system += SYSTEM_NOTE


@dataclass(frozen=True, kw_only=True)
class Searches:
    """What an agent's searches did: each query served and the text it returned (a call refused
    past the cap is not a search)."""

    queries: list[str]
    results: list[str]

    def found(self, states: Callable[[str], bool]) -> bool:
        """Whether any result states what `states` looks for."""
        return any(states(text) for text in self.results if text != NO_RESULTS)


def searches_in(messages: list[Message]) -> Searches:
    """The searches in a stretch of history: each search_history call's query and what it returned."""
    outcomes = {
        block["tool_use_id"]: block
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    }
    served = [(call, outcomes.get(call["id"], {})) for call in _calls(messages)]
    answered = [(call, result) for call, result in served if not result.get("is_error")]
    return Searches(
        queries=[str((call.get("input") or {}).get("query", "")) for call, _ in answered],
        results=[content_text(result.get("content") or "") for _, result in answered],
    )


def _calls(messages: list[Message]) -> list[dict[str, Any]]:
    return [
        block
        for m in messages
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_use" and block.get("name") == SEARCH_TOOL
    ]
