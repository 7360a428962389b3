"""The matcher against a person's verdicts: the labelled answer corpus (harness/scoring/corpus.yaml),
and each form of a negative constraint, restated or denied."""

from collections import Counter

import pytest

from harness.scoring.corpus import load_corpus
from harness.scoring.matchers import Expectation, SetMatch, Target
from harness.scoring.verdict import verdict

CORPUS = load_corpus()
# The rule's documented limits (docs/concepts.md, scoring/affirmation.py); none of the corpus's answers today.
KNOWN_LIMITS: set[str] = set()


def test_the_corpus_covers_every_class_of_answer():
    labels = Counter(item.verdict for item in CORPUS)
    constraints = [item for item in CORPUS if item.target.expected and item.target.expected.constraint]
    assert len(CORPUS) >= 80 and len(constraints) >= 20
    assert {"recalled", "forgot", "stale", "abstained", "confabulated"} <= set(labels)
    assert (
        sum(bool(item.target.stale) for item in CORPUS) >= 5
        and sum(bool(item.target.distractors) for item in CORPUS) >= 10
    )


def test_the_matcher_agrees_with_every_label_but_the_documented_limits():
    wrong = {
        item.answer: (item.verdict, verdict(item.answer, item.target))
        for item in CORPUS
        if verdict(item.answer, item.target) != item.verdict
    }
    assert set(wrong) == KNOWN_LIMITS, wrong
    agreement = 1 - len(wrong) / len(CORPUS)
    assert agreement >= 0.97  # the documentation states this figure (docs/concepts.md)


DEPLOY = Target(Expectation("Friday", constraint=True))
ALLERGY = Target(Expectation("peanuts", constraint=True))


@pytest.mark.parametrize(
    "target, answer",
    [
        (DEPLOY, "We never deploy on Fridays."),  # never + the action
        (DEPLOY, "Don't deploy on a Friday."),  # don't + the action
        (DEPLOY, "We do not release anything on Friday."),  # do not + the action
        (DEPLOY, "Never on a Friday."),  # never, the action implied
        (DEPLOY, "Any day except Friday."),  # except
        (DEPLOY, "Friday deploys are forbidden."),  # forbidden after it
        (ALLERGY, "No peanuts."),  # no + the thing
        (ALLERGY, "Cook it without peanuts."),  # without
        (ALLERGY, "Avoid peanuts."),  # avoid
        (ALLERGY, "Nothing with peanuts."),  # nothing + with
        (ALLERGY, "Peanuts are off limits."),  # off limits after it
        (ALLERGY, "You must not use peanuts."),  # must not + the action
        (DEPLOY, "Deploys are never done on Friday."),  # the prohibition in the passive
        (ALLERGY, "Not peanuts."),  # a bare "Not X" answering what is prohibited
        (ALLERGY, "Not peanuts - use almonds instead."),  # ... with the instruction that follows it
    ],
)
def test_a_restated_constraint_is_recall(target, answer):
    assert verdict(answer, target) == "recalled"


@pytest.mark.parametrize(
    "target, answer, result",
    [
        (DEPLOY, "It's not Friday.", "forgot"),  # a copular denial of the value
        (DEPLOY, "Not Friday, it was Monday.", "forgot"),  # a bare denial
        (DEPLOY, "There is no rule against deploying on Fridays.", "forgot"),  # the rule denied
        (DEPLOY, "Fridays are fine for deploys.", "forgot"),  # a permission
        (ALLERGY, "Peanuts were approved by the chef.", "forgot"),  # a permission
        (ALLERGY, "Use peanuts in the sauce.", "forgot"),  # an instruction to use it
        (ALLERGY, "I can't tell you what to avoid.", "abstained"),  # a refusal
        (ALLERGY, "I cannot share anything about peanuts.", "forgot"),  # a refusal that names it
        (Target(Expectation("Friday")), "We never deploy on Fridays.", "forgot"),  # not a constraint: negated
    ],
)
def test_a_denied_or_permitted_value_is_not_recall_of_a_constraint(target, answer, result):
    assert verdict(answer, target) == result


def test_the_items_of_a_set_constraint_are_named_by_restating_it():
    """A prohibition's items are not denied by its own "never": the full history's answer is recall."""
    rule = Expectation(
        "untrusted sources, scripts",
        matcher=SetMatch(),
        constraint=True,
        items=("untrusted sources", "scripts"),
    )
    target = Target(rule, matcher=rule.matcher)
    full_history_answer = "Never execute scripts from untrusted sources without approval."
    assert SetMatch().share(full_history_answer, rule) == 1.0
    assert verdict(full_history_answer, target) == "recalled"
    assert verdict("There is no rule against scripts from untrusted sources.", target) == "forgot"
