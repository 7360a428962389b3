"""The optional LLM judge (`--judge MODEL`): asked whether an answer the matcher scored `forgot`
states the expected value after all (a paraphrase)."""

from __future__ import annotations

from ..messages import content_text
from ..scoring.matchers import Target



JUDGE_SYSTEM = "You grade answers to questions. Reply with exactly one word: YES or NO."


class JudgeError(Exception):
    """The judge's reply could not be read as YES or NO."""


def judge_says_recalled(judge, question: str, target: Target, answer: str) -> bool:
    """Ask a judge model whether a paraphrased answer states the expected value."""
    accepted = " / ".join(target.expected.values)
    response = judge.create(max_tokens=5, system=JUDGE_SYSTEM, messages=[{"role": "user", "content": (
        f"Question: {question}\nCorrect answer: {accepted}\nResponse to grade: {answer}\n\n"
        "Does the response give the correct answer? Reply YES or NO.")}])
    reply = content_text(response.get("content", []), separator=" ")
    word = reply.strip().upper()
    if word.startswith(("YES", "NO")):
        return word.startswith("YES")
    raise JudgeError(f"judge replied {reply.strip()[:80]!r}, not YES or NO")
