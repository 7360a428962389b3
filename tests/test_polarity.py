"""A rule's polarity in a summary: kept, weakened, contradicted or dropped, against a person's
readings of real-looking summaries (harness/scoring/rules.yaml)."""

from collections import Counter

import pytest

from harness.scoring.corpus import load_rule_corpus
from harness.scoring.polarity import Reading, read_rule

RULES = load_rule_corpus()


def test_the_rule_corpus_covers_every_reading_of_both_kinds():
    counts = Counter((item.kind, item.reading) for item in RULES)
    for kind in ("constraint", "decision"):
        for reading in Reading:
            assert counts[kind, reading.value] >= 2, (kind, reading)


@pytest.mark.parametrize("item", RULES, ids=[f"{i.reading}: {i.summary[:60]}" for i in RULES])
def test_each_summary_reads_as_a_person_reads_it(item):
    assert read_rule(item.summary, item.expectation, item.kind, item.said) == item.reading


def test_a_hedge_the_rule_already_had_does_not_weaken_it():
    item = next(i for i in RULES if i.expectation.answer == "grep")
    summary = "Don't use grep unless necessary."
    assert read_rule(summary, item.expectation, "constraint", "Don't use grep unless necessary.") == Reading.KEPT
    assert read_rule(summary, item.expectation, "constraint", item.said) == Reading.WEAKENED


def test_a_contradiction_anywhere_wins_over_a_kept_statement():
    item = next(i for i in RULES if i.expectation.answer == "grep")
    assert read_rule("Don't use grep. Later: grep is fine.", item.expectation, "constraint") == Reading.CONTRADICTED
