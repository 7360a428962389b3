"""Import LoCoMo (Maharana et al., ACL 2024) conversations as scenarios.

Mapping: speaker_a speaks as the user and speaker_b as the scripted assistant; consecutive
lines of one speaker merge into one turn; each session's date opens its first turn. Every QA
item becomes a fact planted on the turn holding its last evidence line, probed with its
question and scored by token F1 (as the benchmark's own evaluation). Category 2 is temporal;
category 5 questions cannot be answered from the conversation, so abstaining is the right
outcome and their `adversarial_answer` is scored as a confabulation.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from .inputs import InputError
from .scenario import Scenario, load_scenario
from .score import Expectation, TokenF1, mentions, states

F1_THRESHOLD = 0.5
ADVERSARIAL = 5
NO_REPLY = "(no reply)"  # a session can end on the user's line; the scripted reply stays honest


def _samples(path: Path) -> list[tuple[str, dict, list]]:
    """(scenario id, conversation, qa) for each conversation, from either published shape."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(path, f"cannot read a LoCoMo JSON file: {exc}") from None
    if isinstance(data, dict) and "speaker_a" in data:
        return [(path.stem, data, data.get("qa", []))]
    if isinstance(data, list) and data and all(isinstance(s, dict) and "conversation" in s for s in data):
        return [(str(s.get("sample_id", f"{path.stem}-{i}")), s["conversation"], s.get("qa", []))
                for i, s in enumerate(data)]
    raise InputError(path, "not a LoCoMo file: expected one conversation (speaker_a, speaker_b, session_N, qa) "
                           "or a list of samples with sample_id, conversation and qa")


def _sessions(path: Path, sample: str, conversation: dict) -> list[tuple[int, str, list[dict]]]:
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


def _line_text(line: dict) -> str:
    text = str(line.get("text", "")).strip()
    if line.get("blip_caption"):
        text += f" [shares a photo: {line['blip_caption']}]"
    return text


def _turns(path: Path, sample: str, conversation: dict) -> tuple[list[dict], dict[str, int]]:
    """Scripted turns, and the turn that holds each dialogue id."""
    user, assistant = conversation["speaker_a"], conversation["speaker_b"]
    turns: list[dict] = []
    turn_of: dict[str, int] = {}
    for n, date, lines in _sessions(path, sample, conversation):
        opening = True
        for line in lines:
            speaker, text = line.get("speaker"), _line_text(line)
            if speaker not in (user, assistant):
                raise InputError(path, f"{sample}: line {line.get('dia_id')} is spoken by {speaker!r}, "
                                       f"neither {user!r} nor {assistant!r}", field=f"session_{n}")
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
            turn_of[str(line.get("dia_id"))] = len(turns) - 1
    for turn in turns:
        turn["assistant"] = turn["assistant"] or NO_REPLY
    return turns, turn_of


def _evidence(item: dict) -> list[str]:
    # Some published items join two ids in one string ("D8:6; D9:17").
    return [e.strip() for entry in item.get("evidence") or [] for e in re.split(r"[;,]", str(entry)) if e.strip()]


def convert(path: Path, sample: str, conversation: dict, qa: list) -> tuple[dict, list[str]]:
    """One scenario (as YAML-ready data) and notes on the QA items it left out."""
    turns, turn_of = _turns(path, sample, conversation)
    notes = []
    for i, item in enumerate(qa):
        where = f"qa[{i}]"
        evidence = _evidence(item)
        if not evidence:  # nowhere to plant it: the published data has a few such items
            notes.append(f"{where}: left out, it has no evidence ids")
            continue
        missing = [e for e in evidence if e not in turn_of]
        if missing:
            raise InputError(path, f"{sample}: {where} ({item.get('question')!r}): evidence id {missing[0]!r} "
                                   "does not exist in the conversation", field=f"{where}.evidence")
        category = int(item.get("category", 0))
        turn = max(turn_of[e] for e in evidence)
        fact: dict[str, Any] = {"id": f"q{i:03d}", "kind": "temporal" if category == 2 else f"locomo-{category}",
                                "probe": str(item["question"]), "match": "f1", "f1_threshold": F1_THRESHOLD}
        if category == ADVERSARIAL:
            fact.update(expect="abstain", confabulations=[str(item.get("adversarial_answer", ""))] if
                        item.get("adversarial_answer") not in (None, "") else [])
        else:
            answer = str(item.get("answer", "")).strip()
            if not answer:
                raise InputError(path, f"{sample}: {where} has no answer", field=f"{where}.answer")
            if mentions(fact["probe"], answer):
                notes.append(f"{where}: left out, its question contains its answer {answer!r}")
                continue
            text = turns[turn]["user"] + "\n" + turns[turn]["assistant"]
            fact.update(answer=answer, literal=states(text, Expectation(answer, matcher=TokenF1(F1_THRESHOLD)), within=True))
        turns[turn].setdefault("facts", []).append(fact)
    scenario = {
        "id": sample,
        "description": f"LoCoMo conversation {sample} between {conversation['speaker_a']} (user) and "
                       f"{conversation['speaker_b']} (assistant). Maharana et al., ACL 2024; CC BY-NC 4.0.",
        "turns": turns,
    }
    return scenario, notes


def import_locomo(path: str | Path, out_dir: str | Path) -> list[tuple[Path, Scenario, list[str]]]:
    """Write one validated scenario file per conversation; nothing is written for a bad one.
    Returns each file with the scenario it holds and notes on the QA items left out."""
    path, out_dir = Path(path), Path(out_dir)
    converted = [(sample, *convert(path, sample, conversation, qa)) for sample, conversation, qa in _samples(path)]
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for sample, scenario, notes in converted:
        target = out_dir / f"{sample}.yaml"
        partial = target.with_suffix(".yaml.partial")
        partial.write_text(yaml.safe_dump(scenario, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8")
        try:
            loaded = load_scenario(partial)  # the same validation a hand-written scenario gets
        except InputError:
            partial.unlink()
            raise
        os.replace(partial, target)
        written.append((target, loaded, notes))
    return written
