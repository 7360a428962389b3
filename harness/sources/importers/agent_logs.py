"""`harness import FORMAT FILE...` for agent logs: read each file with its format's module, cap
long tool outputs if asked, redact secrets, derive facts, add a user's own (an overlay file), and
write one validated scenario per session. What each file gave, and what was left out, is reported
by `Imported.summary`; a file or session that cannot be imported is refused, named, while the
others are written."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from ...errors import InputError, did_you_mean, plural
from ...inputs.files import MAX_FILE_BYTES, load_yaml
from ...inputs.scenario import Fact, Scenario
from ...plugins import PluginError, Registry
from ...scoring.matchers import mentions
from ..writer import write_imported
from . import claude_code, codex, mini_swe_agent, openai_messages, swe_agent
from .derive import derive, turn_text
from .redact import redact
from .session import CAP_MARK, Session, cap, layout, nothing_to_import, to_scenario

# Each format's reader: a log file's sessions. Another package adds a format by entry point
# (`compaction_harness.importers`: a `(path) -> list[Session]`), imported as ours are.
FORMATS: Registry[Callable[[Path], list[Session]]] = Registry(
    "importers",
    {
        "claude-code": claude_code.read,
        "codex": codex.read,
        "swe-agent": swe_agent.read,
        "mini-swe-agent": mini_swe_agent.read,
        "openai": openai_messages.read,
    },
)


@dataclass
class Options:
    max_tool_output: int | None = None  # characters; None keeps every tool output whole
    redact: bool = True
    overlay: Path | None = None  # facts added by hand (see `OverlayFact`)
    continuation_every: int = 4  # a "what next?" probe every this many tool steps


@dataclass
class Imported:
    source: Path
    path: Path  # the scenario file written
    scenario: Scenario
    notes: list[str]
    redactions: Counter[str]
    capped: int  # tool outputs cut to --max-tool-output
    facts_by_kind: Counter[str] = field(default_factory=Counter[str])

    def summary(self) -> list[str]:
        turns = self.scenario.turns
        calls = [c for t in turns if t.assistant for c in t.assistant.tool_calls]
        chars = sum(len(t.text()) for t in turns)
        exchanges = sum(1 for t in turns if not t.continues)
        recorded = sum(1 for t in turns if t.recorded_summary)
        steps = sum(1 for t in turns if t.assistant and t.assistant.tool_calls)
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.facts_by_kind.items())) or "none"
        secrets = ", ".join(f"{n} {kind}" for kind, n in sorted(self.redactions.items()))
        lines = [
            f"{self.source} -> {self.path}",
            f"  {plural(exchanges, 'exchange')}, {plural(len(turns), 'turn')}, {plural(steps, 'tool step')}, "
            f"{plural(len(calls), 'tool call')}, {chars:,} characters",
            f"  facts: {kinds}",
            f"  recorded compactions: {recorded}" + ("" if recorded else " (the log holds none)"),
            f"  secrets redacted: {sum(self.redactions.values())}" + (f" ({secrets})" if secrets else ""),
        ]
        if self.capped:
            lines.append(f"  tool outputs capped: {self.capped}")
        lines += [f"  note: {note}" for note in self.notes]
        return lines


class OverlayFact(Fact):
    """A fact added by hand to an imported session: a decision the log states in words, say."""

    turn: int = Field(ge=0, description="The scenario turn that plants it (as `harness import` numbers them).")
    session: str | None = Field(default=None, description="The scenario id, when the import writes several.")


def import_logs(
    fmt: str, files: list[Path], out_dir: Path, options: Options
) -> tuple[list[Imported], list[InputError]]:
    """Import every session of `files`: the scenarios written, and what was refused (a file that is
    not a log of the format, a session with nothing to import, one too large, one that does not
    validate), each refusal an error naming its file. Raises the first refusal (the others attached)
    when nothing could be imported; a bad overlay file stops everything, before anything is written."""
    read, refused = [], []
    for path in files:
        try:
            sessions = FORMATS[fmt](path)
        except InputError as exc:
            refused.append(exc)
            continue
        except PluginError as exc:  # the reader itself cannot load: nothing to import with it
            raise InputError(fmt, str(exc)) from None
        except Exception as exc:  # a reader's bug (another package's, or ours) refuses this file, not the rest
            refused.append(InputError(path, f"the {fmt} reader failed: {type(exc).__name__}: {exc}"))
            continue
        for session in sessions:
            if problem := nothing_to_import(session) or _too_large(session, options.max_tool_output):
                refused.append(InputError(f"{path} ({session.id})" if len(sessions) > 1 else path, problem))
                continue
            capped = _cap(session, options.max_tool_output)
            secrets = redact(session) if options.redact else Counter()
            read.append((path, session, capped, secrets))
    ids = Counter(session.id for _, session, _, _ in read)
    for n, (_, session, _, _) in enumerate(read):
        if ids[session.id] > 1:  # two files with one name in different folders
            session.id = f"{session.id}-{n + 1}"
    facts = [derive(session, options.continuation_every) for _, session, _, _ in read]
    if options.overlay:
        _add_overlay(options.overlay, [session for _, session, _, _ in read], facts)
    written, invalid = write_imported(
        [to_scenario(session, by_turn) for (_, session, _, _), by_turn in zip(read, facts)],
        out_dir,
        [str(path) for path, _, _, _ in read],
    )
    refused += invalid
    kept = {w.scenario.id: w for w in written}
    imported = [
        Imported(
            source,
            kept[session.id].path,
            kept[session.id].scenario,
            session.notes + kept[session.id].notes,
            secrets,
            capped,
            Counter(f.kind for turn in kept[session.id].scenario.turns for f in turn.facts),
        )
        for (source, session, capped, secrets) in read
        if session.id in kept
    ]
    if not imported:
        first, *others = refused or [InputError(files[0], "nothing to import")]
        first.others = others
        raise first
    return imported, refused


def _too_large(session: Session, max_tool_output: int | None) -> str | None:
    """Why the session cannot fit a scenario file (and the --max-tool-output that would make it
    fit), or None. Estimated from its text before anything is written, so a huge log is refused in
    seconds; YAML's quoting is allowed for by a margin."""
    room = int(MAX_FILE_BYTES * 0.8)
    outputs = sorted(len(call.result or "") for call in session.calls())
    words = sum(len(value) for slot in session.strings() if isinstance(value := slot.get(), str)) - sum(outputs)
    capped = [
        min(n, max_tool_output) + CAP_MARK if max_tool_output is not None and n > max_tool_output else n
        for n in outputs
    ]
    if words + sum(capped) <= room:
        return None
    size = (
        f"the session is about {words + sum(capped):,} characters, more than a scenario file holds "
        f"({MAX_FILE_BYTES:,} bytes)"
    )
    if words + CAP_MARK * len(outputs) > room:
        return (
            f"{size}: its {plural(len(outputs), 'tool call')} and the agent's words alone are {words:,} characters, "
            "so capping tool outputs cannot make it fit; import a part of the log (split the file)"
        )
    cap_to = _largest_cap(outputs, room - words)
    return f"{size}: import it with `--max-tool-output {cap_to}` (tool outputs cut to {cap_to:,} characters)"


def _largest_cap(lengths: list[int], room: int) -> int:
    """The largest cap on tool outputs (lengths sorted) whose capped total, markers included, fits `room`."""
    low, high = 0, lengths[-1] if lengths else 0
    while low < high:
        middle = (low + high + 1) // 2
        if sum(min(n, middle) + (CAP_MARK if n > middle else 0) for n in lengths) <= room:
            low = middle
        else:
            high = middle - 1
    return low


def _cap(session: Session, limit: int | None) -> int:
    """Cut tool outputs longer than `limit` (before facts are derived, so none is planted in a cut part)."""
    if limit is None:
        return 0
    capped = 0
    for call in session.calls():
        if call.result is not None and len(call.result) > limit:
            call.result, capped = cap(call.result, limit), capped + 1
    return capped


def _add_overlay(path: Path, sessions: list[Session], facts: list[dict[int, list[dict[str, Any]]]]) -> None:
    """Facts from an overlay file (`facts:`, a list of facts each with its `turn`, and its `session`
    when several are imported), checked against the sessions with errors at their line."""
    doc = load_yaml(path)
    if not isinstance(doc.data, dict) or set(doc.data) != {"facts"} or not isinstance(doc.data["facts"], list):
        raise doc.error((), "an overlay file holds one key, `facts`: a list of facts, each with its `turn`")
    by_id = {session.id: n for n, session in enumerate(sessions)}
    for i, raw in enumerate(doc.data["facts"]):
        fact: OverlayFact = doc.validate(OverlayFact, ("facts", i))
        if fact.session is None and len(sessions) > 1:
            raise doc.error(
                ("facts", i),
                f"this import writes {len(sessions)} scenarios ({', '.join(by_id)}): say which with `session`",
            )
        if fact.session is not None and fact.session not in by_id:
            raise doc.error(
                ("facts", i, "session"),
                f"no imported session {fact.session!r}{did_you_mean(fact.session, list(by_id))}",
            )
        n = by_id[fact.session] if fact.session is not None else 0
        turns = layout(sessions[n])
        if fact.turn >= len(turns):
            raise doc.error(("facts", i, "turn"), f"the scenario has turns 0 to {len(turns) - 1}")
        taken = {f["id"] for planted in facts[n].values() for f in planted}
        if fact.id in taken:
            raise doc.error(("facts", i, "id"), f"a derived fact already has the id {fact.id!r}")
        text = turn_text(sessions[n], turns[fact.turn])
        if (
            fact.literal
            and fact.probe_at is None
            and fact.answer
            and not fact.items
            and not mentions(text, fact.answer)
        ):
            raise doc.error(("facts", i, "answer"), f"{fact.answer!r} does not occur in turn {fact.turn}")
        facts[n].setdefault(fact.turn, []).append({k: v for k, v in raw.items() if k not in ("turn", "session")})
