"""LoCoMo as released, on small fixtures of our own: the evidence-id spellings of the released
file, items that cannot be planted (left out and listed, or errors with --strict), unsafe or
duplicate sample ids, and the benchmark's own scoring with scores derived by hand."""

import json

import pytest

from harness.cli import main
from harness.errors import InputError
from harness.inputs.probes import probes
from harness.inputs.scenario_file import load_scenario
from harness.scoring.matchers import Expectation, LocomoF1
from harness.sources.importers.locomo import import_locomo

A, B = "Ann", "Bo"


def conversation():
    line = lambda speaker, dia, text: {"speaker": speaker, "dia_id": dia, "text": text}
    return {
        "speaker_a": A,
        "speaker_b": B,
        "session_1_date_time": "1 May 2023",
        "session_1": [line(A, "D1:1", "I adopted a cat named Miso."), line(B, "D1:2", "Lovely, Miso is a great name.")],
        "session_11_date_time": "2 June 2023",
        "session_11": [
            line(A, "D11:25", "I ran the Lisbon marathon."),
            line(B, "D11:26", "Congratulations on Lisbon!"),
        ],
        "session_30_date_time": "3 July 2023",
        "session_30": [line(A, "D30:5", "My sister moved to Oslo."), line(B, "D30:6", "Oslo is beautiful.")],
    }


QA = [
    {"question": "Which marathon did Ann run?", "answer": "Lisbon", "evidence": ["D:11:26"], "category": 4},
    {"question": "Where did Ann's sister move?", "answer": "Oslo", "evidence": ["D30:05"], "category": 4},
    {"question": "What is Ann's cat called?", "answer": "Miso", "evidence": ["D1:1 D11:26"], "category": 4},
    {"question": "Which cities come up?", "answer": "Lisbon, Oslo", "evidence": ["D11:25; D30:5"], "category": 1},
    {"question": "What did Ann bake?", "answer": "Bread", "evidence": ["D10:19"], "category": 4},
    {"question": "Which pet?", "answer": "A cat", "evidence": ["D1:1"], "category": "2"},
    {"answer": "x", "evidence": ["D1:1"], "category": 4},
    {"question": "What is Ann's dog called?", "evidence": ["D1:2"], "category": 5, "adversarial_answer": "Rex"},
]


def write(tmp_path, data, name="locomo.json"):
    (tmp_path / name).write_text(json.dumps(data))
    return tmp_path / name


def test_released_id_spellings_are_normalised_and_unplantable_items_listed(tmp_path):
    path = write(tmp_path, [{"sample_id": "conv-1", "conversation": conversation(), "qa": QA}])
    ((file, scenario, notes),), _ = import_locomo(path, tmp_path / "out")
    planted = {fact.id: t for t, turn in enumerate(scenario.turns) for fact in turn.facts}
    turn_of = lambda text: next(t for t, turn in enumerate(scenario.turns) if text in turn.user + str(turn.assistant))
    assert planted["q000"] == turn_of("Lisbon!")  # D:11:26
    assert planted["q001"] == turn_of("sister")  # D30:05
    assert planted["q002"] == turn_of("Lisbon!")  # two ids in one string: the later one
    assert planted["q003"] == turn_of("sister")
    assert planted["q007"] == turn_of("Miso is")
    assert notes == [
        "qa[4]: left out: evidence id 'D10:19' does not exist in the conversation",
        "qa[5]: left out: category '2' is not a whole number",
        "qa[6]: left out, it has no question",
    ]
    facts = {p.fact_id: p for p in probes(scenario)}
    assert facts["q003"].target.matcher == LocomoF1(1, 0.5) and facts["q007"].target.expected is None


def test_strict_keeps_an_unplantable_item_an_error(tmp_path):
    path = write(tmp_path, [{"sample_id": "conv-1", "conversation": conversation(), "qa": QA}])
    with pytest.raises(InputError, match=r"conv-1: qa\[4\] \('What did Ann bake\?'\): evidence id 'D10:19' does not"):
        import_locomo(path, tmp_path / "out", strict=True)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "samples, message",
    [
        ([{"sample_id": "../c", "conversation": conversation(), "qa": []}], "sample_id '../c' cannot name a scenario"),
        (
            [{"sample_id": "c", "conversation": {**conversation(), "speaker_b": None}, "qa": []}],
            "c: the conversation has no speaker_b name",
        ),
        (
            [{"sample_id": "c", "conversation": {**conversation(), "session_1": ["Ann: hi"]}, "qa": []}],
            "c: session_1[0] is not a line object",
        ),
        ([{"sample_id": "c", "conversation": conversation(), "qa": {"q": 1}}], "c: qa is not a list"),
    ],
)
def test_unsafe_or_malformed_samples_are_named(samples, message, tmp_path):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("(", r"\(")):
        import_locomo(write(tmp_path, samples), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_summary_counts_facts_by_category_and_items_left_out(tmp_path, capsys):
    path = write(
        tmp_path,
        [
            {"sample_id": "a", "conversation": conversation(), "qa": QA},
            {"sample_id": "b", "conversation": conversation(), "qa": QA[:2]},
        ],
    )
    assert main(["import", "locomo", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "a.yaml: 3 turns, 5 facts (1 locomo-1, 3 locomo-4, 1 locomo-5), 3 items left out" in out
    assert "b.yaml: 3 turns, 2 facts (2 locomo-4), 0 items left out" in out


# LoCoMo's scoring, from its description: commas dropped, lower case, punctuation dropped, a/an/the
# and "and" dropped, Porter stems; token F1; category 1 per comma-separated sub-answer; category 3
# cut at ";"; category 5 is 1 for "no information available" or "not mentioned". By hand:
@pytest.mark.parametrize(
    "category, answer, truth, score",
    [
        # stems: she is run marathon / run marathon -> 2 common; P 2/4, R 1 -> 2/3
        (4, "She is running marathons", "running marathon", 2 / 3),
        # "and" and the comma dropped: {pepper, salt} both sides
        (2, "pepper, salt", "salt and pepper", 1.0),
        # sub-answers Paris (0) and Rome (1) averaged
        (1, "Rome", "Paris, Rome", 0.5),
        # one predicted part "i went to pari rome" (5 tokens) against each: F1 1/3 each
        (1, "I went to Paris and Rome", "Paris, Rome", 1 / 3),
        (3, "likely yes", "Likely yes; she enjoys it", 1.0),  # cut at ";"
        (4, "likely yes", "Likely yes; she enjoys it", 2 * 1 * 0.4 / 1.4),  # not cut: P 1, R 2/5
        (2, "May 7, 2023", "7 May 2023", 1.0),
        (2, "May 7, 2023", "2023-05-07", 0.0),  # no date unification: "20230507" is one token
    ],
)
def test_locomo_scores_derived_by_hand(category, answer, truth, score):
    assert LocomoF1(category).score(answer, Expectation(truth, matcher=LocomoF1(category))) == pytest.approx(score)


@pytest.mark.parametrize(
    "answer, score",
    [
        ("No information available about that.", 1.0),
        ("That was not mentioned.", 1.0),
        ("I don't know.", 0.0),
        ("Rex", 0.0),
    ],
)
def test_locomo_category_5_scores_the_benchmark_phrases(answer, score):
    assert LocomoF1(5).score(answer, None) == score


def test_one_bad_conversation_or_item_never_sinks_the_file(tmp_path, capsys):
    """The released file's shape of trouble: a conversation whose id repeats, one with no speaker, and
    an adversarial question whose tempting answer is itself an abstention ("Not mentioned ..."):
    each is said, and every conversation that can be written is."""
    abstaining = {
        "question": "What did Ann say about the moon?",
        "evidence": ["D1:1"],
        "category": 5,
        "adversarial_answer": "Not mentioned in the conversation",
    }
    samples = [
        {"sample_id": "a", "conversation": conversation(), "qa": QA[:2] + [abstaining]},
        {"sample_id": "a", "conversation": conversation(), "qa": QA[:2]},
        {"sample_id": "b", "conversation": {**conversation(), "speaker_b": ""}, "qa": QA[:2]},
        {"sample_id": "c", "conversation": conversation(), "qa": QA[:2]},
    ]
    assert main(["import", "locomo", str(write(tmp_path, samples)), "--out", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.yaml", "c.yaml"]
    assert "sample 1: sample_id 'a' appears twice" in err and "b: the conversation has no speaker_b name" in err
    assert "a.yaml: 3 turns, 3 facts (2 locomo-4, 1 locomo-5), 1 item left out" in out
    assert "qa[2]: its adversarial_answer 'Not mentioned in the conversation' is itself an abstention" in out
    abstain = next(f for t in load_scenario(tmp_path / "out" / "a.yaml").turns for f in t.facts if f.id == "q002")
    assert abstain.expect == "abstain" and abstain.confabulations == []
