"""Variants of one scenario (`harness generate --from FILE --variants N`): each fact's value
(answer, aliases, set items, later values) re-drawn, and every occurrence of it in the conversation
(user lines, the agent's words, tool inputs and outputs, recorded summaries) replaced by the same
re-drawn value; nothing else changes.

A value is re-drawn word by word, one map for the whole scenario, so a path and its file name
change together ('src/kivo/loader.py' and 'loader.py' become 'src/mado/tepira.py' and 'tepira.py'):
a made-up word for each word of three letters or more (each part of a camel-case name), and new
digits for each run of two or more, keeping case, punctuation and length. Words everyone shares stay
(shell commands, common path parts, file extensions, English function words), so 'pytest
tests/test_cart.py' keeps its 'pytest' and 'tests'. Left as they are, and listed: values of
paraphrased facts (`literal: false`
or `match: f1`: a sentence re-drawn word by word is no longer one), values under three characters
(their occurrences cannot be told from other text), and facts with a `regex`.

What variants make independent, and what not: the values a model must remember are new in each
(no answer carries over from another variant, nor from the model's prior knowledge), so a fact
retained in one variant says nothing about its value in another. The structure is shared: the
same turns, tool outputs, lengths and cut points, and the same summary prompt meets the same
layout. Variants of one session measure that session's structure with more values; they do not
stand in for other sessions. Each written variant records its origin (`variant_of`).
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from ...inputs.files import load_yaml
from ...inputs.scenario_file import load_scenario
from ..writer import write_scenarios
from .coding import pronounceable

SHARED_WORDS = frozenset(
    """
python python3 pytest pip npm node yarn git grep rg cat ls cd rm mv cp sed awk echo find make bash sh zsh curl
cargo go run test tests src lib app main index init setup config docs bin build dist open edit create submit
find_file search_dir search_file scroll_down scroll_up goto with the and for from into that this not you your
error exception warning failure failed passed
are was were has have had its our their py js ts tsx jsx go rs rb java json yaml yml toml md txt cfg ini html css
sql csv log lock sh
""".split()
)
# Words of three letters or more (camel case split: 'KeyError' is 'Key' and 'Error'), runs of two digits or more.
_WORD = re.compile(r"[A-Z][a-z]{2,}|[a-z]{3,}|[A-Z]{3,}(?![a-z])|\d{2,}")


def redraw_word(word: str, rng: random.Random) -> str:
    """A made-up word (or digits) of the same length and case as `word`."""
    if word.isdigit():
        first = rng.choice("123456789") if word[0] != "0" else "0"
        return first + "".join(rng.choice("0123456789") for _ in word[1:])
    made = pronounceable(rng, len(word) // 2 + 1)[: len(word)]
    if word.isupper():
        return made.upper()
    return made.capitalize() if word[0].isupper() else made


class Redraw:
    """One variant's word map, shared by every value of the scenario."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.words: dict[str, str] = {}

    def value(self, value: str) -> str:
        def word(match: re.Match[str]) -> str:
            found = match[0]
            if found.lower() in SHARED_WORDS:
                return found
            if found not in self.words:
                taken = set(self.words.values())
                while (new := redraw_word(found, self.rng)) in taken or new.lower() == found.lower():
                    pass
                self.words[found] = new
            return self.words[found]

        return _WORD.sub(word, value)


def redrawable(fact: dict[str, Any]) -> bool:
    return fact.get("literal", True) and fact.get("match", "exact") != "f1" and not fact.get("regex")


def values_of(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The scenario's values to re-draw, and the facts left as they are (see the module docstring)."""
    values: list[Any] = []
    kept: list[str] = []
    for turn in data["turns"]:
        for fact in turn.get("facts", []):
            if not redrawable(fact):
                kept.append(fact["id"])
                continue
            values += [fact.get("answer"), *fact.get("aliases", []), *fact.get("items", [])]
        for change in turn.get("supersedes", []):
            values += [change.get("answer"), *change.get("aliases", [])]
    # A value with no word of its own ('pytest -q', '42') stays: there is nothing in it to re-draw.
    own_words = {
        v
        for v in values
        if isinstance(v, str) and len(v) >= 3 and any(m[0].lower() not in SHARED_WORDS for m in _WORD.finditer(v))
    }
    return sorted(own_words, key=len, reverse=True), kept


def variant(data: dict[str, Any], values: list[str], rng: random.Random, number: int) -> dict[str, Any]:
    redraw = Redraw(rng)
    new = {value: redraw.value(value) for value in values}
    changed = {old: value for old, value in new.items() if value != old}
    if not changed:
        return dict(data, id=f"{data['id']}-v{number}", variant_of=data["id"])
    # One pass over each text, longest value first, so no replacement is replaced again.
    pattern = re.compile(r"(?<![\w])(?:" + "|".join(map(re.escape, changed)) + r")(?![\w])")

    def rewrite(value: Any, key: str | None = None) -> Any:
        if isinstance(value, str):
            return (
                value
                if key in ("probe", "id", "kind", "fact", "match", "description")
                else pattern.sub(lambda m: changed[m[0]], value)
            )
        if isinstance(value, list):
            return [rewrite(item, key) for item in value]
        if isinstance(value, dict):
            return {k: rewrite(v, k) for k, v in value.items()}
        return value

    copy = {k: rewrite(v, k) for k, v in data.items() if k not in ("id", "description", "variant_of")}
    origin = data.get("variant_of", data["id"])
    return {
        "id": f"{data['id']}-v{number}",
        "description": f"{data['description']} (variant {number} of {origin}: fact values re-drawn)",
        "variant_of": origin,
        **copy,
    }


def generate_variants(path: Path, count: int, seed: int, out: Path) -> tuple[list[Path], int, list[str]]:
    """Write `count` variants of the scenario at `path`; returns the files, how many values each
    re-draws, and the facts left as they are."""
    load_scenario(path)  # a scenario with errors is refused with them, before anything is written
    data = load_yaml(path).data
    values, kept = values_of(data)
    scenarios = [variant(data, values, random.Random(f"{seed}-{n}"), n) for n in range(1, count + 1)]
    written = write_scenarios(scenarios, out, path)
    return [p for p, _ in written], len(values), kept
