"""The labelled answer corpus (`corpus.yaml`): answers to fact questions with the verdict a person
gives each, to measure the matcher (the tests) and an LLM judge (`harness judge-check`) against."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import yaml

from .matchers import ExactMatch, Expectation, Matcher, SetMatch, Target, TokenF1


@dataclass(frozen=True)
class LabelledAnswer:
    question: str
    target: Target
    answer: str
    verdict: str  # what a person says: recalled, forgot, stale, abstained or confabulated


def target_of(fact: dict[str, Any], before: list[str]) -> Target:
    """A corpus fact (a scenario fact's fields) as the target its answers are scored against."""
    constraint = bool(fact.get("constraint", False))
    expected = (
        None
        if fact.get("expect") == "abstain"
        else Expectation(
            str(fact["answer"]),
            tuple(map(str, fact.get("aliases", []))),
            fact.get("regex"),
            fact.get("tolerance"),
            constraint=constraint,
        )
    )
    return Target(
        expected,
        tuple(Expectation(str(v)) for v in before),
        tuple(fact.get("distractors", [])),
        tuple(Expectation(str(c)) for c in fact.get("confabulations", [])),
    )


def load_corpus() -> list[LabelledAnswer]:
    data = yaml.safe_load(resources.files("harness.scoring").joinpath("corpus.yaml").read_text(encoding="utf-8"))
    return [
        LabelledAnswer(item["question"], target_of(item["fact"], item.get("before", [])), answer, label)
        for item in data["facts"]
        for label, answer in item["answers"]
    ]


def judge_items() -> tuple[list[LabelledAnswer], list[LabelledAnswer]]:
    """What a judge is measured on: the corpus's right answers, and its wrong ones plus wrong
    *on-topic* answers made from each right answer by putting another value in place of the right
    one (a distractor, an old value, or another fact's value of the same shape): the answers a
    lenient judge accepts. Facts whose right answer is to abstain are left out (the judge grades
    stated values)."""
    corpus = [(item, item.target.expected) for item in load_corpus() if item.target.expected is not None]
    right = [item for item, _ in corpus if item.verdict == "recalled"]
    wrong = [item for item, _ in corpus if item.verdict != "recalled"]
    values = sorted({expected.answer for _, expected in corpus})
    for item, expectation in corpus:
        if item.verdict != "recalled":
            continue
        expected = expectation.answer
        found = re.search(rf"(?<!\w){re.escape(expected)}(?!\w)", item.answer, re.IGNORECASE)
        alike = [v for v in values if _shape(v) == _shape(expected)]
        turn = alike.index(expected) + 1  # other facts' values, from the next one on: varied replacements
        candidates = [
            *item.target.distractors,
            *(old.answer for old in item.target.stale),
            *alike[turn:],
            *alike[:turn],
        ]
        replacement = next((v for v in candidates if v != expected and v.lower() not in item.answer.lower()), None)
        if found and replacement:
            answer = item.answer[: found.start()] + replacement + item.answer[found.end() :]
            wrong.append(LabelledAnswer(item.question, item.target, answer, "forgot"))
    return right, wrong


def _shape(value: str) -> str:
    """What kind of value this is, so a wrong value put in its place reads as an answer."""
    for shape, pattern in (("date", r"\d{4}-\d\d-\d\d"), ("time", r"\d{1,2}:\d\d"), ("number", r"[\d.,]+")):
        if re.fullmatch(pattern, value):
            return shape
    return "words"


@dataclass(frozen=True)
class LabelledRule:
    """A summary's reading of one rule, as a person gives it (`rules.yaml`)."""

    kind: Literal["constraint", "decision"]
    said: str  # the words that stated the rule
    expectation: Expectation
    summary: str
    reading: str  # kept, weakened, contradicted or dropped


def load_rule_corpus() -> list[LabelledRule]:
    data = yaml.safe_load(resources.files("harness.scoring").joinpath("rules.yaml").read_text(encoding="utf-8"))
    out = []
    for rule in data["rules"]:
        fact = rule["fact"]
        matcher: Matcher = TokenF1(fact.get("f1_threshold", 0.5)) if fact.get("match") == "f1" else ExactMatch()
        items = tuple(fact.get("items", []))
        expectation = Expectation(
            str(fact.get("answer", ", ".join(items))),
            tuple(map(str, fact.get("aliases", []))),
            matcher=SetMatch() if items else matcher,
            constraint=rule["kind"] == "constraint",
            items=items,
        )
        out += [
            LabelledRule(rule["kind"], rule["said"], expectation, summary, reading)
            for reading, summary in rule["summaries"]
        ]
    return out
