"""The report compares: paired differences of every two variants (and each against the ceiling),
and a headline naming the best prompt, by how much, and whether that is more than noise."""

import json
import random
from pathlib import Path

from harness.records import load_run
from harness.report import best_variant, comparison_table, text_report

MODEL = "m"


def crafted_run(folder: Path, recall: dict[str, float], scenarios=10, facts=6, seed=0) -> Path:
    """Recall records per prompt (and 'none' for the ceiling): each fact recalled with that prompt's share."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    rows = []
    for prompt, share in recall.items():
        strategy, budget = ("none", None) if prompt == "none" else ("summary", "50%")
        for s in range(scenarios):
            for f in range(facts):
                rows.append({"case": f"s{s}/{strategy}/{budget}/{prompt}/0", "scenario": f"s{s}", "fact": f"f{f}",
                             "kind": "number", "strategy": strategy, "budget": budget,
                             "prompt": None if prompt == "none" else prompt, "repeat": 0, "expected": "42",
                             "verdict": "recalled" if rng.random() < share else "forgot", "location": "gone",
                             "compactions": 1, "model": MODEL})
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "manifest.json").write_text(json.dumps({"eval": {"name": "crafted", "gate": {}}, "model": MODEL}))
    return folder


def test_a_real_difference_is_called_and_noise_is_not(tmp_path):
    run = load_run(crafted_run(tmp_path / "a", {"good": 0.9, "bad": 0.1, "same": 0.1, "none": 1.0}))
    table = comparison_table(run)
    assert table.loc["recall: summary: good vs summary: bad", "reading"] == "summary: good higher"
    assert table.loc["recall: summary: same vs summary: bad", "reading"] == "not distinguishable from noise"
    assert table.loc["recall: summary: good vs ceiling (full history)", "reading"] == "ceiling (full history) higher"
    assert float(table.loc["recall: summary: good vs summary: bad", "p"]) < 1e-4
    headline = best_variant(run)
    assert headline.startswith("Best on recall: summary: good (")
    assert "distinguishable from noise at alpha 0.05" in headline and "not distinguishable" not in headline
    assert "this run detects differences of" in headline


def test_a_near_tie_is_reported_as_noise_with_the_detectable_difference(tmp_path):
    run = load_run(crafted_run(tmp_path / "a", {"one": 0.5, "two": 0.5}, seed=3))
    assert "not distinguishable from noise" in best_variant(run)


def test_too_few_scenarios_say_so(tmp_path):
    run_dir = crafted_run(tmp_path / "a", {"one": 0.9, "two": 0.1}, scenarios=3)
    assert "too few scenarios (under 5) to tell a difference from noise" in text_report(run_dir)
