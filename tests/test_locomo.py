"""The LoCoMo importer, token-F1 scoring, abstention facts, and chunked folding."""

import collections
import json
import re
from pathlib import Path

import pytest
from fakes import FakeClient

from harness.cli import main
from harness.compaction.context import CompactionContext, CompactionSettings
from harness.compaction.seed import SUMMARY_PREFIX, TranscriptTooLarge, compact
from harness.errors import InputError
from harness.inputs.probes import probes
from harness.scoring.matchers import Expectation, Target, TokenF1
from harness.scoring.normalize import token_f1
from harness.scoring.verdict import verdict
from harness.sources.importers.locomo import import_locomo

# shared/ sits beside the checkout, here and in CI.
CONV = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "conv-26.json"
pytestmark = pytest.mark.skipif(not CONV.exists(), reason=f"LoCoMo sample not found at {CONV}")


@pytest.fixture(scope="module")
def raw():
    return json.loads(CONV.read_text())


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("locomo")
    ((_, scenario, notes),), _ = import_locomo(CONV, out)
    return scenario, notes


def _lines(raw):
    sessions = sorted((k for k in raw if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
    return [line for s in sessions for line in raw[s]]


def test_turns_merge_consecutive_lines_and_open_each_session_with_its_date(raw, imported):
    scenario, _ = imported
    lines = _lines(raw)
    # A new turn starts wherever the user's speaker follows the assistant's, or a session starts.
    sessions = sorted((k for k in raw if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
    expected_turns = 0
    for s in sessions:
        speakers = [line["speaker"] for line in raw[s]]
        expected_turns += sum(
            1
            for i, who in enumerate(speakers)
            if i == 0 or (who == raw["speaker_a"] and speakers[i - 1] == raw["speaker_b"])
        )
    assert len(scenario.turns) == expected_turns == 215
    dated = [t for t in scenario.turns if t.user.startswith("[")]
    assert len(dated) == len(sessions) and dated[0].user.startswith(f"[{raw['session_1_date_time']}]")
    assert sum(t.user.count(f"{raw['speaker_a']}: ") for t in scenario.turns) == sum(
        line["speaker"] == raw["speaker_a"] for line in lines
    )


def test_fact_counts_by_category(raw, imported):
    scenario, notes = imported
    with_evidence = [q for q in raw["qa"] if q.get("evidence")]
    expected = collections.Counter(
        "temporal" if q["category"] == 2 else f"locomo-{q['category']}" for q in with_evidence
    )
    kinds = collections.Counter(p.kind for p in probes(scenario))
    left_out_for_leaks = sum("contains its answer" in n for n in notes)
    assert sum(expected.values()) - sum(kinds.values()) == left_out_for_leaks
    assert kinds["temporal"] >= expected["temporal"] - left_out_for_leaks and kinds["locomo-5"] == expected["locomo-5"]
    assert sum("no evidence ids" in n for n in notes) == len(raw["qa"]) - len(with_evidence) == 2


def test_facts_are_planted_on_the_turn_of_their_last_evidence(raw, imported):
    scenario, _ = imported
    position = {line["dia_id"]: i for i, line in enumerate(_lines(raw))}
    by_id = {line["dia_id"]: line for line in _lines(raw)}
    for probe in probes(scenario):
        item = raw["qa"][int(probe.fact_id[1:])]
        ids = [e.strip() for entry in item["evidence"] for e in re.split(r"[;,]", entry)]
        last = by_id[max(ids, key=position.__getitem__)]
        turn = scenario.turns[probe.planted_turn]
        assert last["text"].strip() in turn.user + turn.assistant.text, (probe.fact_id, last["dia_id"])


def test_adversarial_items_expect_abstention(raw, imported):
    scenario, _ = imported
    adversarial = [p for p in probes(scenario) if p.kind == "locomo-5"]
    assert adversarial and all(p.target.expected is None for p in adversarial)
    first = adversarial[0]
    confabulation = first.target.confabulations[0].answer
    assert verdict(f"I think {confabulation}.", first.target) == "confabulated"
    assert verdict("I don't know, that was never mentioned.", first.target) == "recalled"
    assert verdict("She went hiking.", first.target) == "forgot"


def test_literal_and_paraphrased_facts_are_marked(imported):
    scenario, _ = imported
    flags = {p.literal for p in probes(scenario) if p.kind != "locomo-5"}
    assert flags == {True, False}


def test_the_list_of_samples_shape_gives_the_same_scenario(raw, tmp_path):
    conversation = {k: v for k, v in raw.items() if k != "qa"}
    (tmp_path / "all.json").write_text(
        json.dumps([{"sample_id": "conv-26", "conversation": conversation, "qa": raw["qa"]}])
    )
    ((from_list, _, _),), _ = import_locomo(tmp_path / "all.json", tmp_path / "a")
    ((from_object, _, _),), _ = import_locomo(CONV, tmp_path / "b")
    assert from_list.read_text() == from_object.read_text()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda raw: {"nothing": 1}, "not a LoCoMo file"),
        (
            lambda raw: {**raw, "qa": [{**raw["qa"][0], "evidence": ["D99:1"]}]},
            "qa[0] ('When did Caroline go to the LGBTQ support group?'): evidence id 'D99:1' does not exist",
        ),
        (lambda raw: {**raw, "session_3": []}, "session_3 is empty"),
    ],
)
def test_bad_input_is_named_and_nothing_is_written(raw, tmp_path, change, message):
    (tmp_path / "bad.json").write_text(json.dumps(change(raw)))
    with pytest.raises(InputError, match=re.escape(message)):
        import_locomo(tmp_path / "bad.json", tmp_path / "out", strict=True)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_cli_import(tmp_path, capsys):
    assert main(["import", "locomo", str(CONV), "--out", str(tmp_path)]) == 0
    assert "conv-26.yaml: 215 turns" in capsys.readouterr().out
    assert main(["import", "locomo", str(tmp_path / "conv-26.yaml"), "--out", str(tmp_path)]) == 1


def test_token_f1():
    assert token_f1("7 May 2023", "7 May 2023") == 1.0
    # "it was on 2023 05 07 i think": 3 of 8 words are the answer's 3 (dates are normalised first)
    assert token_f1("It was on the 7 May 2023, I think", "7 May 2023") == pytest.approx(2 * 3 / 8 / (3 / 8 + 1))
    assert token_f1("a painting", "the painting") == 1.0  # articles dropped, as the benchmark does
    assert token_f1("nothing alike", "7 May") == 0.0
    target = Target(Expectation("Psychology, counseling certification", matcher=TokenF1(0.5)))
    assert verdict("psychology and counseling", target) == "recalled"
    assert verdict("She likes painting landscapes in the evening", target) == "forgot"


def test_long_transcripts_fold_in_chunks():
    client = FakeClient(lambda request: "S" * 20)
    history = []
    for i in range(12):
        history += [{"role": "user", "content": f"question {i} " + "x" * 200}, {"role": "assistant", "content": "ok"}]
    events = []
    settings = CompactionSettings(summary_max_tokens=10, max_transcript_chars=700)
    result = compact(history, CompactionContext(client=client, limit=100, settings=settings, events=events))
    assert events[0].chunks == len(client.requests) > 1
    transcripts = [r["messages"][0]["content"] for r in client.requests]
    assert all(len(t) <= 700 for t in transcripts)
    assert all(t.startswith(SUMMARY_PREFIX) for t in transcripts[1:])  # each chunk sees the summary so far
    assert result[0]["content"] == f"{SUMMARY_PREFIX}{'S' * 20}]"
    with pytest.raises(TranscriptTooLarge):
        compact(
            history, CompactionContext(client=client, limit=100, settings=CompactionSettings(max_transcript_chars=300))
        )
