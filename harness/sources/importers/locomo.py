"""Import LoCoMo (Maharana et al., ACL 2024) conversations as scenarios.

Mapping: speaker_a speaks as the user and speaker_b as the scripted assistant; consecutive
lines of one speaker merge into one turn; each session's date opens its first turn. Every QA
item becomes a fact planted on the turn holding its last evidence line, probed with its
question and scored by `match: locomo` (the benchmark's own scoring, per category). Category 2
is temporal; category 5 questions cannot be answered from the conversation, so abstaining is
the right outcome and their `adversarial_answer` is scored as a confabulation.

The released data has evidence ids in several spellings (`D1:3`, `D:11:26`, `D30:05`, several
ids in one string); they are normalised where the intent is unambiguous. An item whose evidence
still cannot be found, that lacks a question, answer or integer category, or that would not validate
as a fact, is left out and listed (`strict=True`: it is an error instead). A conversation with a
structure error is refused, named, and the file's other conversations are written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...inputs.scenario import Scenario
from ...scoring.matchers import Expectation, LocomoF1, mentions, states
from ...scoring.verdict import abstains
from ..writer import write_imported

F1_THRESHOLD = 0.5
ADVERSARIAL = 5
SAFE_ID = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,79}"
_DIALOGUE_ID = re.compile(r"D:?(\d+):0*(\d+)")
NO_REPLY = "(no reply)"  # a session can end on the user's line; the scripted reply stays honest


def _samples(path: Path) -> list[tuple[str, dict[str, Any], list[Any]] | InputError]:
    """(scenario id, conversation, qa) for each conversation, from either published shape; a
    conversation that cannot become a scenario comes as the error naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(path, f"cannot read a LoCoMo JSON file: {exc}") from None
    if isinstance(data, dict) and "speaker_a" in data:
        samples = [(path.stem, data, data.get("qa", []))]
    elif isinstance(data, list) and data and all(isinstance(s, dict) and "conversation" in s for s in data):
        samples = [
            (str(s.get("sample_id", f"{path.stem}-{i}")), s["conversation"], s.get("qa", []))
            for i, s in enumerate(data)
        ]
    else:
        raise InputError(
            path,
            "not a LoCoMo file: expected one conversation (speaker_a, speaker_b, session_N, qa) "
            "or a list of samples with sample_id, conversation and qa",
        )
    seen: set[str] = set()
    checked: list[tuple[str, dict[str, Any], list[Any]] | InputError] = []
    for i, (sample, conversation, qa) in enumerate(samples):
        where = f"sample {i}" if isinstance(data, list) else "the conversation"
        problem = _sample_problem(sample, conversation, qa, where, seen)
        checked.append(InputError(path, problem[1], field=problem[0]) if problem else (sample, conversation, qa))
        seen.add(sample)
    return checked


def _sample_problem(sample: str, conversation: Any, qa: Any, where: str, seen: set[str]) -> tuple[str, str] | None:
    """(field, why) a conversation cannot become a scenario, or None."""
    if not re.fullmatch(SAFE_ID, sample):
        return (
            "sample_id",
            f"{where}: sample_id {sample!r} cannot name a scenario file (letters, digits, '.', '_' and '-' only)",
        )
    if sample in seen:
        return "sample_id", f"{where}: sample_id {sample!r} appears twice; each conversation needs its own"
    if not isinstance(conversation, dict):
        return "conversation", f"{sample}: the conversation is not an object"
    for speaker in ("speaker_a", "speaker_b"):
        if not isinstance(conversation.get(speaker), str) or not conversation[speaker].strip():
            return speaker, f"{sample}: the conversation has no {speaker} name"
    if not isinstance(qa, list):
        return "qa", f"{sample}: qa is not a list"
    return None


def _sessions(path: Path, sample: str, conversation: dict[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    numbers = sorted(int(m[1]) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key)))
    if not numbers:
        raise InputError(path, f"{sample}: the conversation has no session_N lists")
    sessions = []
    for n in numbers:
        lines = conversation[f"session_{n}"]
        if not isinstance(lines, list) or not lines:
            raise InputError(path, f"{sample}: session_{n} is empty", field=f"session_{n}")
        sessions.append((n, str(conversation.get(f"session_{n}_date_time", "")), lines))
    return sessions


def _line_text(line: dict[str, Any]) -> str:
    text = str(line.get("text", "")).strip()
    if line.get("blip_caption"):
        text += f" [shares a photo: {line['blip_caption']}]"
    return text


def _turns(path: Path, sample: str, conversation: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Scripted turns, and the turn that holds each dialogue id."""
    user, assistant = conversation["speaker_a"], conversation["speaker_b"]
    turns: list[dict[str, Any]] = []
    turn_of: dict[str, int] = {}
    for n, date, lines in _sessions(path, sample, conversation):
        opening = True
        for index, line in enumerate(lines):
            if not isinstance(line, dict):
                raise InputError(
                    path,
                    f"{sample}: session_{n}[{index}] is not a line object (speaker, text, dia_id)",
                    field=f"session_{n}",
                )
            speaker, text = line.get("speaker"), _line_text(line)
            if speaker not in (user, assistant):
                raise InputError(
                    path,
                    f"{sample}: line {line.get('dia_id')} is spoken by {speaker!r}, neither {user!r} nor {assistant!r}",
                    field=f"session_{n}",
                )
            said = f"{speaker}: {text}"
            current = turns[-1] if turns and not opening else None
            if speaker == user:
                if current is not None and current["assistant"] is None:
                    current["user"] += "\n" + said  # the same speaker again: one turn
                else:
                    turns.append({"user": (f"[{date}]\n" if opening else "") + said, "assistant": None})
            elif current is not None and current["assistant"] is not None:
                current["assistant"] += "\n" + said
            elif current is not None:
                current["assistant"] = said
            else:  # the session opens with the assistant's speaker: the date alone opens the turn
                turns.append({"user": f"[{date}]", "assistant": said})
            opening = False
            turn_of[_normal_id(str(line.get("dia_id")))] = len(turns) - 1
    for turn in turns:
        turn["assistant"] = turn["assistant"] or NO_REPLY
    return turns, turn_of


def _normal_id(dialogue_id: str) -> str:
    """`D1:3` as the conversation spells it, from the released spellings `D:1:3` and `D1:03`."""
    match = _DIALOGUE_ID.fullmatch(dialogue_id.strip())
    return f"D{int(match[1])}:{int(match[2])}" if match else dialogue_id.strip()


def _evidence(item: dict[str, Any]) -> list[str]:
    # Released items join several ids in one string ("D8:6; D9:17", "D8:6 D9:17").
    entries = item.get("evidence") or []
    return [
        _normal_id(e)
        for entry in (entries if isinstance(entries, list) else [entries])
        for e in re.split(r"[;,\s]+", str(entry))
        if e.strip()
    ]


def _problem(item: Any, evidence: list[str], turn_of: dict[str, int]) -> tuple[str, str] | None:
    """(field, why) an item cannot become a fact, or None."""
    if not isinstance(item, dict):
        return "", "is not an object"
    if not isinstance(item.get("question"), str) or not item["question"].strip():
        return "question", "has no question"
    if not isinstance(item.get("category"), int) or isinstance(item["category"], bool):
        return "category", f"category {item.get('category')!r} is not a whole number"
    if not evidence:  # nowhere to plant it: the released data has a few such items
        return "evidence", "has no evidence ids"
    missing = [e for e in evidence if e not in turn_of]
    if missing:
        return "evidence", f"evidence id {missing[0]!r} does not exist in the conversation"
    if item["category"] != ADVERSARIAL and not str(item.get("answer", "")).strip():
        return "answer", "has no answer"
    return None


def convert(
    path: Path, sample: str, conversation: dict[str, Any], qa: list[Any], strict: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """One scenario (as YAML-ready data) and notes on the QA items it left out."""
    turns, turn_of = _turns(path, sample, conversation)
    notes = []
    for i, item in enumerate(qa):
        where = f"qa[{i}]"
        evidence = _evidence(item) if isinstance(item, dict) else []
        if problem := _problem(item, evidence, turn_of):
            field, why = problem
            question = f" ({item['question']!r})" if isinstance(item, dict) and item.get("question") else ""
            if strict:
                raise InputError(path, f"{sample}: {where}{question}: {why}", field=f"{where}.{field}".rstrip("."))
            notes.append(
                f"{where}: left out, it {why}" if why.startswith(("has", "is")) else f"{where}: left out: {why}"
            )
            continue
        category = item["category"]
        turn = max(turn_of[e] for e in evidence)
        fact: dict[str, Any] = {
            "id": f"q{i:03d}",
            "kind": "temporal" if category == 2 else f"locomo-{category}",
            "probe": str(item["question"]),
            "match": "locomo",
            "category": category,
            "f1_threshold": F1_THRESHOLD,
        }
        if category == ADVERSARIAL:
            tempting = str(item.get("adversarial_answer") or "").strip()
            if tempting and abstains(tempting):  # "Not mentioned ...": abstaining would be scored as it
                notes.append(
                    f"{where}: its adversarial_answer {tempting!r} is itself an abstention: kept as a question "
                    "to abstain on, without that answer as a confabulation"
                )
                tempting = ""
            fact.update(expect="abstain", confabulations=[tempting] if tempting else [])
        else:
            answer = str(item.get("answer", "")).strip()
            if mentions(fact["probe"], answer):
                notes.append(f"{where}: left out, its question contains its answer {answer!r}")
                continue
            text = turns[turn]["user"] + "\n" + turns[turn]["assistant"]
            matcher = LocomoF1(category, F1_THRESHOLD)
            fact.update(answer=answer, literal=states(text, Expectation(answer, matcher=matcher), within=True))
        turns[turn].setdefault("facts", []).append(fact)
    scenario = {
        "id": sample,
        "description": f"LoCoMo conversation {sample} between {conversation['speaker_a']} (user) and "
        f"{conversation['speaker_b']} (assistant). Maharana et al., ACL 2024; CC BY-NC 4.0.",
        "turns": turns,
    }
    return scenario, notes


def import_locomo(
    path: str | Path, out_dir: str | Path, strict: bool = False
) -> tuple[list[tuple[Path, Scenario, list[str]]], list[InputError]]:
    """Write one validated scenario file per conversation: each file with the scenario it holds and
    notes on the QA items left out, and the conversations refused (a structure error, nothing left to
    probe, a scenario that does not validate), named, while the others are written. Raises the first
    refusal (the others attached) when no conversation could be written."""
    path = Path(path)
    converted, refused = [], []
    for checked in _samples(path):
        if isinstance(checked, InputError):
            refused.append(checked)
            continue
        try:
            scenario, notes = convert(path, *checked, strict)
        except InputError as exc:
            refused.append(exc)
            continue
        if not any(turn.get("facts") for turn in scenario["turns"]):
            refused.append(
                InputError(
                    path,
                    f"{checked[0]}: every QA item was left out ({len(notes)}"
                    + (f"; the first: {notes[0]}" if notes else "")
                    + "): nothing to probe",
                )
            )
            continue
        converted.append((scenario, notes))
    written, invalid = write_imported(
        [scenario for scenario, _ in converted], out_dir, [f"{path}: {scenario['id']}" for scenario, _ in converted]
    )
    by_id = {w.scenario.id: w for w in written}
    result = [
        (by_id[s["id"]].path, by_id[s["id"]].scenario, notes + by_id[s["id"]].notes)
        for s, notes in converted
        if s["id"] in by_id
    ]
    refused += invalid
    if not result:
        first, *others = refused
        first.others = others
        raise first
    return result, refused
