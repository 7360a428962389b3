"""A session read position by position: where it compacted, and every occurrence of a signal with the
position of what it repeats (docs/audit.md defines each):

- **re-read**: a read of a file already read and not changed since (`sources.trail`);
- **repeated failure**: a command or edit that failed before, made again with nothing changed since,
  and failing the same way (the output's last line, numbers aside);
- **constraint broken**: a change to a path, or a run of a tool or program, that the user forbade
  earlier and has not allowed since;
- **plan regressed**: a plan call setting a finished item back to pending or in progress, or the
  change that finished an item made again;
- **user repeats**: a user's line saying they already said it ("as I said", "I already told you"),
  restating an earlier prohibition, or repeating a sentence of theirs (six words or more).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..actions import of_call
from ..records.audit import Compaction, Occurrence, Timeline
from ..sources.importers.redact import redact_text
from ..sources.importers.session import PLACEHOLDERS, Call, Session, person_said
from ..sources.rules import lifts, prohibitions
from ..sources.trail import Trail, breaks, failed, forbids, read_key, touches

_REMINDER = re.compile(
    r"\b(?:I(?:'ve| have)? (?:already|just) (?:told|said|asked|mentioned|explained)|as I (?:said|mentioned|"
    r"told you|asked|explained)|like I said|I told you|I said (?:before|earlier|already)|I repeat|"
    r"for the (?:second|third) time)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?\n]+")
MIN_SENTENCE_WORDS = 6
MAX_WHAT = 160  # characters of a quoted object
MAX_SUMMARY = 4000  # characters of a recorded summary kept to show beside what was lost


def _short(text: str) -> str:
    text = " ".join(text.split())
    return redact_text(text if len(text) <= MAX_WHAT else text[: MAX_WHAT - 3] + "...", Counter())


def _sentences(said: str) -> set[str]:
    found = set()
    for part in _SENTENCE.findall(said):
        words = re.findall(r"\w+", part.lower())
        if len(words) >= MIN_SENTENCE_WORDS:
            found.add(" ".join(words))
    return found


@dataclass
class _Rule:
    position: int
    text: str
    paths: set[str]
    tools: set[str]


@dataclass
class _Reader:
    """Follows one session; `timeline` is what it found."""

    session: Session
    source: str
    format: str
    trail: Trail = field(default_factory=Trail)
    rules: list[_Rule] = field(default_factory=list)  # prohibitions in force
    said: dict[str, int] = field(default_factory=dict)  # a user's sentence or prohibition -> first position
    first_user: int | None = None
    wheres: list[str] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    occurrences: list[Occurrence] = field(default_factory=list)

    def where(self, position: int) -> str:
        return self.wheres[position]

    def note(self, signal: str, position: int, since: int, what: str) -> None:
        if any(o.signal == signal and o.position == position for o in self.occurrences[-5:]):
            return  # one occurrence of a signal a position
        self.occurrences.append(
            Occurrence(signal, position, since, self.where(position), self.where(since), _short(what))
        )

    def compacted(self, summary: str | None, where: str | None) -> None:
        if summary:
            position = len(self.wheres)
            self.compactions.append(
                Compaction(position, where or f"{self.source}: before position {position}", _short_summary(summary))
            )

    def user(self, text: str, where: str | None) -> None:
        said, _ = person_said(text)
        if text in PLACEHOLDERS or not said:
            return
        position = len(self.wheres)
        self.wheres.append(where or f"{self.source}: user line at position {position}")
        # Lifted rules go first: "you may edit config.py now" lifts "never edit config.py".
        self.rules = [rule for rule in self.rules if not lifts(said, rule.text)]
        earlier = [
            self.said[key]
            for key in _sentences(said) | {f"{v.lower()} {o.lower()}" for v, o in prohibitions(said)}
            if key in self.said
        ]
        if _REMINDER.search(said) and self.first_user is not None:
            earlier.append(self.first_user)
        if earlier:
            self.note("user_repeats", position, min(earlier), said)
        for verb, obj in prohibitions(said):
            self.said.setdefault(f"{verb.lower()} {obj.lower()}", position)
            paths, tools = forbids(obj, verb)
            if paths or tools:
                self.rules.append(_Rule(position, obj, paths, tools))
        for sentence in _sentences(said):
            self.said.setdefault(sentence, position)
        if self.first_user is None:
            self.first_user = position

    def step(self, calls: list[Call], where: str | None) -> None:
        position = len(self.wheres)
        self.wheres.append(where or f"{self.source}: step {len(self.steps) + 1}")
        self.steps.append(position)
        for call in calls:
            tool, arguments = call.tool, call.input
            action = of_call(tool, arguments)
            what = action.target or action.key  # the file, the command: what the summary may name
            if (since := self.trail.reread_since(tool, arguments)) is not None:
                self.note("rereads", position, since, (read_key(tool, arguments) or (what,))[0])
            if failed(call) and (since := self.trail.failure_since(call)) is not None:
                self.note("repeats_failure", position, since, what)
            touched = touches(tool, arguments) if self.rules else (set(), set())
            for rule in self.rules:
                if breaks(touched, rule.paths, rule.tools):
                    self.note("breaks_constraint", position, rule.position, rule.text)
            if (since := self.trail.finished_since(tool, arguments)) is not None:
                self.note("redoes_finished", position, since, ", ".join(self.trail.undone(tool, arguments)) or what)
            self.trail.see(call, position)

    def timeline(self) -> Timeline:
        return Timeline(
            self.session.id, self.source, self.format, len(self.wheres), self.steps, self.compactions, self.occurrences
        )


def _short_summary(summary: str) -> str:
    kept = summary if len(summary) <= MAX_SUMMARY else summary[:MAX_SUMMARY] + " [...]"
    return redact_text(kept, Counter())


def timeline(session: Session, source: str, fmt: str) -> Timeline:
    """The session's positions, its recorded compactions and every occurrence of a signal."""
    reader = _Reader(session, source, fmt, Trail(cwd=session.cwd))
    for exchange in session.exchanges:
        reader.compacted(exchange.recorded_summary, exchange.recorded_where)
        reader.user(exchange.user, exchange.where)
        for step in exchange.steps:
            reader.compacted(step.recorded_summary, step.recorded_where)
            reader.step(step.calls, step.where)
    return reader.timeline()
