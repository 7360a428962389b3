"""The optional LLM judge (`--judge MODEL`): asked whether an answer the matcher scored `forgot`
states the expected value after all (a paraphrase). `calibrate` measures how often a judge accepts
wrong answers and rejects right ones, on the labelled answer corpus (`harness judge-check`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..analysis.stats import Rate, rate
from ..messages import content_text
from ..models.client import ModelClient, ModelError, purpose
from ..scoring.corpus import LabelledAnswer, judge_items
from ..scoring.matchers import Expectation

JUDGE_SYSTEM = "You grade answers to questions. Reply with exactly one word: YES or NO."


class JudgeError(Exception):
    """The judge's reply could not be read as YES or NO."""


def judge_says_recalled(judge: ModelClient, question: str, expected: Expectation, answer: str) -> bool:
    """Ask a judge model whether a paraphrased answer states the expected value."""
    accepted = " / ".join(expected.values)
    with purpose("judge"):
        response = judge.create(
            max_tokens=5,
            system=JUDGE_SYSTEM,
            messages=[
                {
                    "role": "user",
                    "content": (
                        f"Question: {question}\nCorrect answer: {accepted}\nResponse to grade: {answer}\n\n"
                        "Does the response give the correct answer? Reply YES or NO."
                    ),
                }
            ],
        )
    reply = content_text(response.get("content", []), separator=" ")
    word = reply.strip().upper()
    if word.startswith(("YES", "NO")):
        return word.startswith("YES")
    raise JudgeError(f"judge replied {reply.strip()[:80]!r}, not YES or NO")


@dataclass(frozen=True)
class Calibration:
    """A judge measured on labelled answers: the share of wrong answers it accepts and of right
    ones it rejects (answers of one question counted as a cluster), and replies it could not read."""

    judge: str
    accepts_wrong: Rate
    rejects_right: Rate
    unreadable: int

    def lines(self) -> list[str]:
        return [
            f"accepts wrong answers: {self.accepts_wrong.text()}",
            f"rejects right answers: {self.rejects_right.text()}",
            f"replies neither YES nor NO (left out): {self.unreadable}",
        ]

    def record(self) -> dict[str, Any]:
        """For the manifest of a run judged by this judge."""
        return {
            "judge": self.judge,
            "accepts_wrong": self.accepts_wrong.text(),
            "rejects_right": self.rejects_right.text(),
            "unreadable": self.unreadable,
        }


def calibrate(judge: ModelClient) -> Calibration:
    """Ask `judge` about every right and wrong answer of `scoring.corpus.judge_items`."""
    right, wrong = judge_items()
    unreadable = 0

    def replies(items: list[LabelledAnswer]) -> pd.DataFrame:
        nonlocal unreadable
        said = []
        for item in items:
            if item.target.expected is None:  # judge_items grades stated values only
                continue
            try:
                said.append(
                    (judge_says_recalled(judge, item.question, item.target.expected, item.answer), item.question)
                )
            except (JudgeError, ModelError):
                unreadable += 1
        return pd.DataFrame(said, columns=["yes", "question"]).astype({"yes": bool})

    to_wrong, to_right = replies(wrong), replies(right)
    return Calibration(
        judge.identity,
        rate(to_wrong["yes"], to_wrong["question"]),
        rate(~to_right["yes"], to_right["question"]),
        unreadable,
    )
