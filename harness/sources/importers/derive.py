"""Facts derived from an agent's log itself: deterministic, no model, each marked with its kind
(the probe types of Factory's evaluation of production compactors):

- **artifact**: the files created, modified or deleted (from edit and write tools' inputs, patches,
  diffs, and shell commands that write or remove), and the commands run: *set* facts with partial
  credit (`match: set`);
- **recall**: the task as first stated, the first error seen (an exception or an error line of a
  tool's output), and test counts a test run printed (superseded when a later run changes them);
- **continuation**: at points through the session, what the agent actually did next (the file it
  opened or edited, or the command it ran), asked before that step as "what were you about to do?";
- **identifier**: a value the agent read in a tool's output and typed again into a later call (a
  commit hash, a path found by grep, a port, an id, a URL, a version), planted where it was read;
- **constraint**: a user's instruction that is a prohibition ("don't touch the migrations folder");
- **plan**: the agent's plan as its plan tool last wrote it (TodoWrite, update_plan): which items
  are finished and which still to do, changed wherever a status changes.

Decisions stated in words are not found deterministically: add them by hand (`overlay`). A value
that was redacted never becomes a fact, and no fact is planted that would not validate.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any, Protocol

from pydantic import ValidationError

from ...inputs.scenario import Fact
from ...inputs.scenario_file import fact_problem
from ...messages import strings_in
from ...scoring.normalize import distinctive
from ...tool_vocabulary import PATH_KEYS, SHELL_TOOLS
from ..rules import lifts, prohibitions
from ..tool_effects import PLAN_PROBE, applied, command_of, first_line, plan_of, took_effect, written_files
from .redact import MARK
from .session import PLACEHOLDERS, Call, Session, Step, TurnOf, layout, person_said


class Plant(Protocol):
    """Plants a fact at a turn, checked against the text where it is planted (that turn's by
    default); False when it would not validate, so it is left out."""

    def __call__(self, turn: int, fact: dict[str, Any], where: str | None = None) -> bool: ...


_EXCEPTION = re.compile(
    r"^\s*((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Failure|Warning))(?::\s*(.+))?\s*$", re.MULTILINE
)
_ERROR_LINE = re.compile(
    r"^\s*(?:E\s+)?(?:error|fatal|panic|ERROR|FATAL|Error)(?:\[\w+\])?:\s*(.{4,}?)"
    r"(?:\s+\[recovered\])?$",
    re.MULTILINE,
)  # Go marks a panic a test recovered
# A test run's summary line: pytest's, Jest's ("Tests:  3 failed, 41 passed, 44 total") and gotestsum's
# ("DONE 45 tests, 3 failures in 1.2s"); the group holds the failure count.
_TEST_SUMMARY = re.compile(
    r"=+ .*?\b(\d+) failed\b.*? in [\d.]+s|^Tests:\s+(\d+) failed\b.*$"
    r"|^DONE \d+ tests?(?:, \d+ skipped)?, (\d+) failures?\b.*$",
    re.MULTILINE,
)
_PATH_LIKE = re.compile(
    r"[\w.-]*/[\w./-]+\.\w+|[\w-]+\.(?:py|js|ts|tsx|go|rs|java|rb|c|h|cpp|md|json|ya?ml|toml|cfg|"
    r"ini|txt|sh|html|css|sql)\b"
)
CONTINUATION_PROBE = (
    "What were you about to do next? Name the file you were going to open or change, or the command "
    "you were going to run."
)


def derive(session: Session, every: int = 4) -> dict[int, list[dict[str, Any]]]:
    """The session's derived facts by the turn that plants them; a continuation fact every `every` steps."""
    turns = layout(session)
    texts = [turn_text(session, t) for t in turns]
    facts: dict[int, list[dict[str, Any]]] = {}

    def plant(turn: int, fact: dict[str, Any], where: str | None = None) -> bool:
        values = fact.get("items") or [fact["answer"], *fact.get("aliases", [])]
        if any(MARK in v for v in values) or not all(map(distinctive, values)):
            return False  # a redacted value, or one any answer would state
        # Checked as a scenario file's fact is, where it is planted: the scenario it goes into validates.
        try:
            typed = Fact.model_validate(fact)
        except ValidationError:
            return False
        if fact_problem(typed, texts[turn] if where is None else where, "its turn") is not None:
            return False
        facts.setdefault(turn, []).append(fact)
        return True

    _task(session, plant)
    _first_error(turns, texts, plant)
    _tests(turns, texts, plant)
    _artifacts(session, turns, texts, plant)
    _plan(turns, texts, plant, facts)
    _identifiers(turns, texts, plant)
    _continuations(turns, texts, plant, every)
    _constraints(session, turns, plant, facts)
    return facts


def _calls(turns: list[TurnOf]) -> Iterator[tuple[int, Call]]:
    """(turn, call) for every tool call of the session, in order."""
    for t, where in enumerate(turns):
        for call in where.step.calls if where.step else []:
            yield t, call


def turn_text(session: Session, where: TurnOf) -> str:
    """Everything a turn of the scenario puts in the history (as `Turn.text` reads it)."""
    exchange = session.exchanges[where.exchange]
    step, steps = where.step, exchange.steps
    parts = [exchange.user] if step is None or step is steps[0] else []
    if step is not None:
        parts.append(step.text or "")
        for call in step.calls:
            parts += [*strings_in(call.input), call.result or ""]
    if step is None or step is steps[-1]:
        parts.append(exchange.final or "")
    return "\n".join(parts)


def _task(session: Session, plant: Plant) -> None:
    if not session.exchanges or session.exchanges[0].user in PLACEHOLDERS:
        return  # the log does not say what the task was
    first = session.exchanges[0].user
    issue = re.search(r"ISSUE:\s*\n\s*(.+)", first)  # SWE-agent's prompt names the issue's title
    line = (issue[1] if issue else next((text for text in first.splitlines() if text.strip()), "")).strip()
    sentence = " ".join(re.split(r"(?<=[.!?])\s", line)[0].split()[:15])
    if len(sentence) >= 8:
        plant(
            0,
            {
                "id": "task",
                "kind": "recall",
                "answer": sentence,
                "match": "f1",
                "f1_threshold": 0.4,
                "probe": "What task did I give you at the start of this session?",
            },
        )


def _first_error(turns: list[TurnOf], texts: list[str], plant: Plant) -> None:
    for t, call in _calls(turns):
        output = call.result or ""
        exceptions = _raised(output) or _EXCEPTION.findall(output)
        if exceptions:
            name, message = exceptions[-1]
            answer = f"{name}: {message}".strip(": ")[:100] if message else name
            aliases = (
                [name.rsplit(".", 1)[-1]] if message and name.rsplit(".", 1)[-1] not in ("Error", "Exception") else []
            )
        elif (line := _ERROR_LINE.search(output)) or call.is_error:
            answer, aliases = (line[1] if line else _first_plain_line(output))[:100], []
        else:
            continue
        if answer and plant(
            t,
            {
                "id": "first-error",
                "kind": "recall",
                "answer": answer.strip(),
                "aliases": aliases,
                "probe": "What was the first error you ran into in this session?",
            },
        ):
            return


def _first_plain_line(output: str) -> str:
    """A failed call's message when it names no exception: its first line that is not a traceback's
    header or frame, nor the mark of a cut output."""
    return next(
        (
            line.strip()
            for line in output.splitlines()
            if line.strip()
            and not line.startswith((" ", "\t"))
            and not line.startswith(("Traceback (most recent call last)", "[... "))
        ),
        "",
    )


def _raised(output: str) -> list[tuple[str, str]]:
    """The exception a Python traceback ends with (any name: StopIteration, SystemExit, ...), as
    (name, message): the first line after the traceback's indented frames."""
    at = output.find("Traceback (most recent call last):")
    if at < 0:
        return []
    for line in output[at:].splitlines()[1:]:
        if line.strip() and not line.startswith((" ", "\t")):
            found = re.match(r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::\s*(.+))?\s*$", line)
            return [(found[1], found[2] or "")] if found else []
    return []


def _tests(turns: list[TurnOf], texts: list[str], plant: Plant) -> None:
    """How many tests failed the first time a test run printed failures (an early value, easy to lose)."""
    for t, call in _calls(turns):
        summary = _TEST_SUMMARY.search(call.result or "")
        if summary is None:
            continue
        failed = next(count for count in summary.groups() if count)
        if failed and plant(
            t,
            {
                "id": "first-failures",
                "kind": "recall",
                "answer": failed,
                "probe": "How many tests failed the first time your test run reported failures?",
            },
            where=summary[0],
        ):
            return


def _artifacts(session: Session, turns: list[TurnOf], texts: list[str], plant: Plant) -> None:
    """The files changed and the commands run, as sets that grow: each item planted where it first
    happened (and is named in the history), so a compaction at any cut is scored on those so far."""
    changed: dict[str, int] = {}  # each file, by the turn that first changed it
    first_run: dict[str, int] = {}  # each command line, by the turn that first ran it
    open_file = None  # SWE-agent edits the file it last opened
    for t, call in _calls(turns):
        line = first_line(command_of(call).strip())
        if call.tool == "swe_agent" and line.split()[:1] in (["open"], ["create"]):
            open_file = line.split()[1] if len(line.split()) > 1 else open_file
        written = written_files(call)
        if call.tool == "swe_agent" and line.startswith("edit") and open_file:
            written.append(open_file)
        if took_effect(call):
            for path in written:
                changed.setdefault(path, t)
        if call.tool.lower() in SHELL_TOOLS and line and line.split()[0] not in ("edit", "submit") and len(line) <= 80:
            first_run.setdefault(line, t)
    # A submitted diff is the log's own record of what changed; a file only it names counts from where it is seen.
    for path in session.files_changed:
        changed.setdefault(path, -1)
    seen = {path: next((t for t, text in enumerate(texts) if path in text), None) for path in changed}
    files = {path: max(t, first) for path, t in changed.items() if (first := seen[path]) is not None}
    _plant_growing(
        plant,
        texts,
        "files-changed",
        dict(list(files.items())[:12]),
        "Which files did you create, change or delete in this session?",
    )
    if len(first_run) >= 2:
        _plant_growing(
            plant,
            texts,
            "commands-run",
            dict(list(first_run.items())[-8:]),
            "Which shell commands did you run in this session?",
        )


def _plant_growing(plant: Plant, texts: list[str], fact_id: str, items: dict[str, int], probe: str) -> None:
    """A set fact whose items are planted at their own turns (the fact at the first of them)."""
    if not items:
        return
    first = min(items.values())
    plant(
        first,
        {
            "id": fact_id,
            "kind": "artifact",
            "match": "set",
            "items": list(items),
            "item_turns": list(items.values()),
            "probe": probe,
        },
        where="\n".join(texts[: max(items.values()) + 1]),
    )


def _plan(turns: list[TurnOf], texts: list[str], plant: Plant, facts: dict[int, list[dict[str, Any]]]) -> None:
    """The agent's plan, planted where it first writes it, and changed where an item's status (or
    the list) changes: the probe expects the latest state, and naming a finished item as still to
    do is wrong. A plan with an item the history cannot carry (redacted, too common) is left out."""
    states = [(t, state) for t, call in _calls(turns) if applied(call) and (state := plan_of(call))]
    if not states:
        return
    (first, (items, done)), planted = states[0], False
    planted = plant(
        first, {"id": "plan", "kind": "plan", "match": "plan", "items": items, "done": done, "probe": PLAN_PROBE}
    )
    last = (items, done)
    for t, state in states[1:] if planted else []:
        if state != last and all(distinctive(item) and MARK not in item for item in state[0]):
            facts.setdefault(t, []).append({"fact": "plan", "items": state[0], "done": state[1]})
            last = state


# Identifiers an agent reads in a tool's output and types again in a later call: what summaries lose
# (Hermes Agent's scorecard: indexing exact identifiers moved recall from 23% to 60%). Most specific first.
IDENTIFIERS = [
    ("UUID", re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)),
    ("URL", re.compile(r"\bhttps?://[^\s'\"<>)\]]{4,}")),
    ("commit hash", re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")),
    ("version", re.compile(r"(?<![\w.])v?(?!\d{1,3}(?:\.\d{1,3}){3}\b)\d+\.\d+\.\d+(?:[-+.][\w.]+)?\b")),  # no IP
    ("port", re.compile(r"(?:\blocalhost|\b127\.0\.0\.1|\bport)[: ]\s*(\d{2,5})\b", re.IGNORECASE)),
    ("environment variable", re.compile(r"^\s*(?:export\s+)?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)=", re.MULTILINE)),
    ("id", re.compile(r"\b(?:id|job|pid|issue|pr|build|run|ticket|task)\s*[#:=]?\s*#?(\d{3,})\b", re.IGNORECASE)),
    ("file path", re.compile(r"(?<![\w./-])(?:\.{0,2}/)?[\w.-]+(?:/[\w.-]+)+\.\w{1,6}\b")),
]
MAX_IDENTIFIERS = 8
MAX_PER_KIND = 2  # so paths found by a search do not crowd out the hash, the port or the variable


def _identifiers(turns: list[TurnOf], texts: list[str], plant: Plant) -> None:
    """Values first seen in a tool's output and later typed by the agent into a tool call's input
    (a hash from `git log` used in `git show`, a path found by `grep` then opened, a port, a job id),
    planted where they were seen; the probe names where, never the value. One only read is no fact."""
    seen: dict[str, tuple[int, str, Any]] = {}  # value -> (turn, kind, the call whose output held it)
    planted, kinds = 0, Counter[str]()
    for n, (t, call) in enumerate(_calls(turns)):
        typed = "\n".join(strings_in(call.input))
        for value, (at, kind, source) in list(seen.items()):
            if at < t and value in typed:
                del seen[value]
                if kinds[kind] == MAX_PER_KIND:
                    continue
                where = first_line(command_of(source).strip())[:60] or f"the {source.tool} tool"
                probe = (
                    f"Which {kind} did the output of `{where}` give you, that you then used in a later tool call?"
                    if command_of(source)
                    else f"Which {kind} did {where} give you, that you then used again?"
                )
                if plant(
                    at,
                    {
                        "id": f"reused-{kind.replace(' ', '-').lower()}-{n}",
                        "kind": "identifier",
                        "answer": value,
                        "probe": probe,
                    },
                ):
                    planted, kinds[kind] = planted + 1, kinds[kind] + 1
                if planted == MAX_IDENTIFIERS:
                    return
        before = "\n".join(texts[:t]) + typed
        for kind, pattern in IDENTIFIERS:
            for match in pattern.finditer(call.result or ""):
                value = match[match.lastindex or 0]
                if value not in seen and value not in before and len(seen) < 200:
                    seen[value] = (t, kind, call)


def _next_action(step: Step) -> tuple[str, str] | None:
    """What a step did first, as a probe answer: (the file it touched, "exact") or (the command, "f1")."""
    call = step.calls[0]
    for key in PATH_KEYS:
        if isinstance(call.input.get(key), str):
            return call.input[key], "exact"
    line = first_line(command_of(call).strip())
    if not line:
        return None
    path = _PATH_LIKE.search(line)
    if path and call.tool.lower() in SHELL_TOOLS:
        return path[0], "exact"
    return (line[:60], "f1") if len(line.split()) >= 2 else None


def _continuations(turns: list[TurnOf], texts: list[str], plant: Plant, every: int) -> None:
    steps = [(t, where.step) for t, where in enumerate(turns) if where.step is not None and where.step.calls and t > 0]
    for n, (t, step) in enumerate(steps[every - 1 :: every]):
        action = _next_action(step)
        if action is None:
            continue
        answer, match = action
        name = answer.rsplit("/", 1)[-1]
        fact = {
            "id": f"next-{n + 1}",
            "kind": "continuation",
            "answer": answer,
            "probe": CONTINUATION_PROBE,
            "probe_at": t,
            "literal": True,
            "match": match,
        }
        if match == "exact" and name != answer and "." in name:
            fact["aliases"] = [name]
        if match == "f1":
            fact["f1_threshold"] = 0.5
        plant(t - 1, fact, where=texts[t])


def _constraints(session: Session, turns: list[TurnOf], plant: Plant, facts: dict[int, list[dict[str, Any]]]) -> None:
    """Prohibitions a person typed. A later line that lifts one (naming its object with a permission)
    and forbids something else with the same verb changes that constraint: the later one stands and
    the earlier is stale."""
    seen: set[str] = set()
    in_force: dict[str, tuple[str, str]] = {}  # verb -> (fact id, object) of the prohibition that stands
    for t, where in enumerate(turns):
        exchange = session.exchanges[where.exchange]
        if where.step is not None and where.step is not exchange.steps[0]:
            continue  # a user's words are in the first turn of their exchange
        said, found_in = person_said(exchange.user)  # a person's words only, not a harness's template
        for verb, obj in prohibitions(said):
            if obj.lower() in seen:
                continue
            seen.add(obj.lower())
            earlier = in_force.get(verb.lower())
            if earlier and lifts(said, earlier[1]) and distinctive(obj) and MARK not in obj:
                facts.setdefault(t, []).append({"fact": earlier[0], "answer": obj})
                in_force[verb.lower()] = (earlier[0], obj)
                continue
            fact_id = f"constraint-{len(seen)}"
            if plant(
                t,
                {
                    "id": fact_id,
                    "kind": "constraint",
                    "constraint": True,
                    "answer": obj,
                    "probe": f"What did I tell you never to {verb.lower()}?",
                    "source": f"a prohibition in {found_in}, turn {t}",
                },
            ):
                in_force[verb.lower()] = (fact_id, obj)
