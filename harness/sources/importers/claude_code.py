"""Claude Code session logs (`~/.claude/projects/<project>/<session>.jsonl`): one JSON object a
line; `user` and `assistant` lines hold Messages API content blocks (`text`, `tool_use`,
`tool_result`, `thinking`, `image`) and link to their parent by `parentUuid`.

The conversation is the path from the session's last line back to its root: a rewound
("redo from here") conversation has two lines with the same parent, and the session continues on
the later one, so the earlier branch is left out. A compaction writes a `system` line of subtype
`compact_boundary` (a new root, linked to the history it replaced by `logicalParentUuid`) and then
a user line marked `isCompactSummary` holding the summary the agent continued from: that summary
is recorded for the turn after it. Left out: sidechains (subagents), `isMeta` lines, other system
lines, `summary` titles, file snapshots, thinking blocks; lines that are not JSON are listed. An
assistant message written as several lines (one a content block) is read as one.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ...errors import InputError, plural
from .logfile import json_lines, log_name
from .session import Builder, Session, slug, text_of, tool_use_call

Line = tuple[int, dict[str, Any]]  # a line's number in the file and its entry


def read(path: Path) -> list[Session]:
    session = Session(
        slug(log_name(path).stem), f"Claude Code session {path.name}, imported with `harness import claude-code`."
    )
    lines = json_lines(path, session.notes, "a Claude Code session")
    if not any(entry.get("type") in ("user", "assistant") for _, entry in lines):
        raise InputError(path, "not a Claude Code session: no user or assistant line")
    session.cwd = next((e["cwd"] for _, e in lines if isinstance(e.get("cwd"), str) and e["cwd"]), None)
    conversation = _main_path(lines, session, path.name)
    builder = Builder(session)
    assistant: list[dict[str, Any]] = []  # content blocks of the assistant message being read
    where = ""

    def flush() -> None:
        if assistant:
            text = "\n".join(b.get("text", "") for b in assistant if b.get("type") == "text")
            calls = [tool_use_call(b, where, session.notes) for b in assistant if b.get("type") == "tool_use"]
            builder.assistant(text, calls, where)
            assistant.clear()

    for number, entry in conversation:
        kind, message = entry.get("type"), entry.get("message") or {}
        content = message.get("content")
        if kind == "system":  # a compact_boundary: its summary is the next line's
            continue
        if kind == "assistant":
            if not assistant:
                where = f"{path.name}:{number}"
            blocks = _blocks(content)
            skipped = Counter(b.get("type") for b in blocks if b.get("type") not in ("text", "tool_use"))
            if skipped - Counter({"thinking": skipped["thinking"], "redacted_thinking": skipped["redacted_thinking"]}):
                session.notes.append(f"{path.name}:{number}: left out assistant blocks {dict(skipped)}")
            assistant.extend(blocks)
            continue
        flush()
        if entry.get("isCompactSummary"):
            builder.compacted(text_of(content), f"{path.name}:{number}")
            continue
        blocks = _blocks(content)
        results = builder.tool_results(blocks, f"{path.name}:{number}")
        text = text_of([b for b in blocks if not (isinstance(b, dict) and b.get("type") == "tool_result")])
        if text.strip() or not results:
            builder.user(text, f"{path.name}:{number}")
    flush()
    return [builder.finish()]


def _blocks(content: Any) -> list[Any]:
    """A message's content as blocks (a plain string is one text block)."""
    return content if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]


def _by_uuid(
    lines: list[tuple[int, dict[str, Any]]], session: Session, name: str
) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    """The lines of each uuid. A uuid used twice is said with both lines: an exact copy (a resumed
    session writes some again) is read once, different lines are both kept."""
    by_uuid: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for number, entry in lines:
        if not isinstance(uuid := entry.get("uuid"), str):
            continue
        same = by_uuid.setdefault(uuid, [])
        if same:
            copy = same[0][1].get("message") == entry.get("message")
            session.notes.append(
                f"{name}:{number}: uuid {uuid} is also line {same[0][0]}'s: "
                + ("a repeated copy, read once" if copy else "both lines kept, in file order")
            )
            if copy:
                continue
        same.append((number, entry))
    return by_uuid


def _main_path(lines: list[Line], session: Session, name: str) -> list[Line]:
    """The lines of the conversation the session ended on, in order (see the module docstring).
    The chain is followed through every line (a meta line may sit between two turns); only the
    conversation's own lines are kept from it. Where the chain breaks (a parent that no line has,
    a cycle), that is said with the line, and the lines before it are read in file order."""
    by_uuid = _by_uuid(lines, session, name)
    position = {id(entry): i for i, (_, entry) in enumerate(lines)}

    def before(node: Line) -> Line | None:
        """Where a broken chain goes on: the conversation's line just before `node` in the file."""
        return next(
            (
                lines[j]
                for j in range(position[id(node[1])] - 1, -1, -1)
                if _conversational(lines[j][1]) and id(lines[j][1]) not in seen
            ),
            None,
        )

    candidates = [line for line in lines if _conversational(line[1])]
    if any(entry.get("parentUuid") or entry.get("logicalParentUuid") for _, entry in candidates):
        path: list[Line] = []
        seen: set[int] = set()
        node: Line | None = candidates[-1]
        while node is not None:
            seen.add(id(node[1]))
            path.append(node)
            parent = node[1].get("parentUuid") or node[1].get("logicalParentUuid")
            if not parent:
                break
            found = by_uuid.get(parent)
            if found is None or any(id(entry) in seen for _, entry in found):
                why = (
                    f"its parentUuid {parent} names no line of the file"
                    if found is None
                    else f"its parentUuid {parent} leads back to line {found[0][0]} (a cycle)"
                )
                node = before(node)
                session.notes.append(
                    f"{name}:{path[-1][0]}: {why}; "
                    + ("the lines before it are read in file order" if node else "the chain ends here")
                )
                continue
            path.extend(reversed(found[1:]))  # lines sharing one uuid: all kept, in file order
            seen.update(id(entry) for _, entry in found[1:])
            node = found[0]
        path.reverse()
    else:  # an old or hand-made log with no links: file order
        path = lines
    _say_left_out(lines, path, session)
    return [line for line in path if _kept(line[1])]


def _conversational(entry: dict[str, Any]) -> bool:
    return entry.get("type") in ("user", "assistant") and not entry.get("isSidechain") and not entry.get("isMeta")


def _kept(entry: dict[str, Any]) -> bool:
    return _conversational(entry) or (entry.get("type") == "system" and entry.get("subtype") == "compact_boundary")


def _say_left_out(
    lines: list[tuple[int, dict[str, Any]]], path: list[tuple[int, dict[str, Any]]], session: Session
) -> None:
    """A note per kind of line the conversation's path leaves out, with how many."""
    on_path = {id(entry) for _, entry in path}
    left: Counter[str] = Counter()
    for _, entry in lines:
        if id(entry) in on_path and _kept(entry):
            continue
        left[
            "sidechain (subagent)"
            if entry.get("isSidechain")
            else "meta"
            if entry.get("isMeta")
            else "rewound (on a branch the session left)"
            if _conversational(entry) or _kept(entry)
            else f"{entry.get('type') or 'untyped'}{' ' + entry['subtype'] if entry.get('subtype') else ''}"
        ] += 1
    for kind, count in sorted(left.items()):
        session.notes.append(f"{kind}: {plural(count, 'line')} left out")
