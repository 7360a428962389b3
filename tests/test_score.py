"""The deterministic matcher and each verdict."""

import pytest
from fakes import FakeClient

from harness.execution.judge import JudgeError, judge_says_recalled
from harness.scoring.matchers import Expectation, Target, mentions, states
from harness.scoring.normalize import normalize
from harness.scoring.verdict import abstains, verdict


@pytest.mark.parametrize(
    "text, normal",
    [
        ("The Budget is 2,350 EUROS.", "the budget is 2350 euros"),
        ("two thousand three hundred and fifty", "2350"),
        ("Twenty-three people", "23 people"),
        ("March 14th, 2025", "2025 03 14"),
        ("14 March 2025", "2025 03 14"),
        ("2025-03-14", "2025 03 14"),
        ("on the 3rd of October", "on the 10 03"),
        ("QX-4471!", "qx 4471"),
        ("3.5 kg", "3.5 kg"),
        ("Café  Müller", "café müller"),
    ],
)
def test_normalize(text, normal):
    assert normalize(text) == normal


@pytest.mark.parametrize(
    "text, value, tolerance, expected",
    [
        ("It costs 2,350 euros", "2350", None, True),
        ("It costs 2350.00 euros", "2,350", None, True),
        ("It costs 2351 euros", "2350", None, False),
        ("It costs 2351 euros", "2350", 1, True),
        ("about 149.89", "149.90", 0.01, True),
        ("locker 44710", "4471", None, False),  # a number inside a longer one is not a match
        ("We fly on March 14", "March 14", None, True),
        ("We fly on 14 March", "March 14", None, True),
        ("Alicea called", "Alice", None, False),  # whole words only
        ("booking qx 19", "QX-19", None, True),
        ("twelve guests", "12", None, True),
    ],
)
def test_mentions(text, value, tolerance, expected):
    assert mentions(text, value, tolerance) is expected


def test_aliases_and_regex():
    expectation = Expectation("Casa Alfama", aliases=("Alfama",), regex=r"\bcasa\s+alf")
    assert states("We booked the Alfama guesthouse", expectation)
    assert states("casa  alfama!", expectation)
    assert not states("We booked Baixa Grand", expectation)
    assert states("CASA ALFxyz", Expectation("nothing-like-this", regex=r"casa alf"))


@pytest.mark.parametrize(
    "answer",
    [
        "I don't know.",
        "I do not remember that.",
        "That was not mentioned.",
        "I'm not sure I can say.",
        "There is no information about it.",
        "I don’t recall.",
    ],
)
def test_abstention_phrases(answer):
    assert abstains(answer)


BUDGET = Target(Expectation("2800"), stale=(Expectation("2350"),), distractors=("2830",))


@pytest.mark.parametrize(
    "answer, result",
    [
        ("The budget is 2,800 euros.", "recalled"),
        ("It went from 2,350 to 2,800 euros.", "recalled"),  # mentioning the history is still recall
        ("The budget is 2,350 euros.", "stale"),
        ("Either 2800 or 2830, I am not certain.", "forgot"),  # hedging onto a near miss is not recall
        ("2830 euros", "forgot"),
        ("I don't know the budget.", "abstained"),
        ("About 12,000 euros.", "forgot"),
    ],
)
def test_verdicts(answer, result):
    assert verdict(answer, BUDGET) == result


HOTEL = Target(Expectation("Casa Alfama"), distractors=("Baixa Grand",))
REMEDY = Target(Expectation("replacement"))


@pytest.mark.parametrize(
    "target, answer, result",
    [
        (REMEDY, "I'm unable to provide a refund or replacement.", "forgot"),  # a refusal names the word
        (REMEDY, "We can't offer a replacement.", "forgot"),
        (REMEDY, "You asked for a replacement.", "recalled"),
        (REMEDY, "No refund, but a replacement was agreed.", "recalled"),  # the negation is another clause's
        (Target(Expectation("Lisbon")), "Not Lisbon.", "forgot"),
        (Target(Expectation("Lisbon")), "It is not in Paris, it is in Lisbon.", "recalled"),
        (HOTEL, "Casa Alfama, not the Baixa Grand.", "recalled"),  # rejecting the distractor is recall
        (HOTEL, "The Baixa Grand, not Casa Alfama.", "forgot"),
        (HOTEL, "Casa Alfama or the Baixa Grand.", "forgot"),  # hedging onto the distractor is not
        (BUDGET, "Not 2,350 but 2,800 euros.", "recalled"),
        (BUDGET, "It was never 2,800; it is 2,350.", "stale"),
        (Target(Expectation("2025-03-14")), "On March 14, 2025.", "recalled"),  # a date's comma is no clause end
    ],
)
def test_a_refusal_or_negation_is_not_recall(target, answer, result):
    assert verdict(answer, target) == result


def test_judge_reads_yes_no_and_fails_loudly_otherwise():
    target = Target(Expectation("Lisbon"))
    yes = FakeClient(lambda request: "YES")
    assert judge_says_recalled(yes, "Which city?", target.expected, "The Portuguese capital") is True
    assert "Correct answer: Lisbon" in yes.requests[0]["messages"][0]["content"]
    assert judge_says_recalled(FakeClient(lambda r: "no."), "Which city?", target.expected, "Paris") is False
    with pytest.raises(JudgeError):
        judge_says_recalled(FakeClient(lambda r: "Maybe"), "Which city?", target.expected, "Paris")
