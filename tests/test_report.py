"""The report compares: paired differences of every two variants (and each against the ceiling),
and a headline naming the best prompt, by how much, and whether that is more than noise."""

import json
import random
from pathlib import Path

from harness.cli import main
from harness.records import load_run
from harness.reports.comparisons import best_variant, comparison_table
from harness.reports.formats import text_report
from harness.reports.tables import recall_by_budget

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
                rows.append(
                    {
                        "case": f"s{s}/{strategy}/{budget}/{prompt}/0",
                        "scenario": f"s{s}",
                        "fact": f"f{f}",
                        "kind": "number",
                        "strategy": strategy,
                        "budget": budget,
                        "prompt": None if prompt == "none" else prompt,
                        "repeat": 0,
                        "expected": "42",
                        "verdict": "recalled" if rng.random() < share else "forgot",
                        "location": "gone",
                        "compactions": 1,
                        "model": MODEL,
                    }
                )
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "manifest.json").write_text(json.dumps({"eval": {"name": "crafted", "gate": {}}, "model": MODEL}))
    return folder


def test_a_real_difference_is_called_and_noise_is_not(tmp_path):
    run = load_run(crafted_run(tmp_path / "a", {"good": 0.9, "bad": 0.1, "same": 0.1, "none": 1.0}))
    table = comparison_table(run)
    assert table.loc["recall: summary: good minus summary: bad", "reading"] == "summary: good higher"
    assert table.loc["recall: summary: same minus summary: bad", "reading"] == "not distinguishable from noise"
    assert table.loc["recall: summary: good minus ceiling (full history)", "reading"] == "ceiling (full history) higher"
    assert float(table.loc["recall: summary: good minus summary: bad", "p"]) < 1e-4
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


def test_runs_are_listed_and_an_unknown_run_names_the_known_ones(tmp_path, capsys):
    runs = tmp_path / "results" / "runs"
    crafted_run(runs / "e-20261201-100000", {"one": 0.9, "two": 0.1})
    assert main(["runs", "--results", str(tmp_path / "results")]) == 0
    listing = capsys.readouterr().out
    assert "e-20261201-100000" in listing and "crafted" in listing and "summary: one recall" in listing
    assert main(["report", "--results", str(tmp_path / "results")]) == 0  # no run named: the same index
    assert "e-20261201-100000" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "typo"), "--results", str(tmp_path / "results")]) == 1
    assert "recent runs in" in (err := capsys.readouterr().err) and "e-20261201-100000" in err


def test_compare_refuses_a_prompt_the_run_does_not_have(tmp_path, capsys):
    run = crafted_run(tmp_path / "a", {"facts-first": 0.5, "seed": 0.5})
    assert main(["compare", str(run), "--a", "seed", "--b", "fact-first"]) == 1
    assert (
        "no prompt 'fact-first' with strategy summary in this run (it has: facts-first, seed)"
        in capsys.readouterr().err
    )


def test_validate_reports_every_error_of_every_file(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "id: s\ndescription: d\nturns:\n  - user: hi\n    facts:\n      - id: a\n        kind: number\n"
        "        answer: '1'\n        tolerance: -1\n  - user: ''\n"
    )
    good = Path(__file__).parent / "data" / "tiny.yaml"
    assert main(["validate", str(bad), str(good), str(tmp_path / "missing.yaml")]) == 1
    captured = capsys.readouterr()
    assert f"{good}: ok" in captured.out
    err = captured.err.splitlines()
    assert sum(str(bad) in line for line in err) == 3  # tolerance, the missing probe, the empty user line
    assert any("missing.yaml: file not found" in line for line in err) and err[-1] == "2 of 3 files have errors"


def collateral_run(folder: Path, verbatim_recall: dict[str, float], scenarios=8, facts=5, seed=1) -> Path:
    """Each prompt's cases compacted their older part; facts still verbatim are recalled with the
    prompt's share, and always in the ceiling. Facts folded into the summary are never recalled."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    rows, compactions = [], []
    for prompt, share in {**verbatim_recall, "none": 1.0}.items():
        strategy, budget = ("none", None) if prompt == "none" else ("summary", "50%")
        for s in range(scenarios):
            case = f"s{s}/{strategy}/{budget}/{prompt}/0"
            if strategy == "summary":
                compactions.append(
                    {
                        "case": case,
                        "scenario": f"s{s}",
                        "strategy": "summary",
                        "prompt": prompt,
                        "budget": budget,
                        "folded_messages": 4,
                        "summary": "s",
                        "size_before": 100,
                        "size_after": 40,
                        "output_tokens": 20,
                    }
                )
            for f in range(facts * 2):
                verbatim = f < facts or strategy == "none"
                recalled = rng.random() < share if verbatim else False
                rows.append(
                    {
                        "case": case,
                        "scenario": f"s{s}",
                        "fact": f"f{f}",
                        "kind": "number",
                        "strategy": strategy,
                        "budget": budget,
                        "prompt": None if prompt == "none" else prompt,
                        "repeat": 0,
                        "expected": "42",
                        "verdict": "recalled" if recalled else "forgot",
                        "location": "verbatim" if verbatim else "gone",
                        "compactions": 0 if verbatim else 1,
                        "model": MODEL,
                    }
                )
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "compactions.jsonl").write_text("".join(json.dumps(c) + "\n" for c in compactions))
    (folder / "manifest.json").write_text(json.dumps({"eval": {"name": "crafted", "gate": {}}, "model": MODEL}))
    return folder


def test_collateral_loss_compares_verbatim_facts_with_the_ceiling_over_scenarios(tmp_path):
    from harness.reports.comparisons import collateral_loss

    table = collateral_loss(load_run(collateral_run(tmp_path / "run", {"crowding": 0.3, "harmless": 1.0})))
    crowding, harmless = table.loc["summary: crowding"], table.loc["summary: harmless"]
    # Only the facts still verbatim count (5 of 10 per scenario), paired with the same facts' ceiling.
    assert crowding["pairs (scenarios)"] == "40 (8)" and crowding["same facts, ceiling"] == "100%"
    assert crowding["difference (95% CI)"].startswith("-") and float(crowding["p"]) < 0.01
    assert crowding["reading"] == "ceiling (full history) higher"
    assert harmless["verbatim facts"] == "100%" and harmless["reading"] == "not distinguishable from noise"
    assert "Collateral loss" in text_report(tmp_path / "run")


def test_the_kind_table_and_the_losses_name_rules_the_summaries_weakened_or_reversed(tmp_path):
    folder = crafted_run(tmp_path / "run", {"seed": 1.0}, scenarios=2, facts=1)
    readings = ["kept", "weakened", "contradicted", "weakened"]
    retention = [
        {
            "case": f"s{i}/summary/50%/seed/0",
            "scenario": f"s{i}",
            "strategy": "summary",
            "budget": "50%",
            "prompt": "seed",
            "repeat": 0,
            "model": MODEL,
            "fact": f"rule-{j}",
            "kind": "constraint",
            "compaction": 0,
            "retained": readings[2 * i + j] == "kept",
            "reading": readings[2 * i + j],
        }
        for i in range(2)
        for j in range(2)
    ]
    (folder / "retention.jsonl").write_text("".join(json.dumps(r) + "\n" for r in retention))
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    for record, reading in zip(records, ["contradicted", "weakened"]):
        record.update(verdict="forgot", in_summary=False, summary_reading=reading)
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    text = text_report(folder)
    assert "25% (1/4" in text and "2 weakened, 1 contradicted" in text
    assert "of lost: summary weakened the rule" in text and "of lost: summary contradicted the rule" in text


def test_a_strategy_that_never_compacted_reads_not_compacted_not_a_score(tmp_path):
    folder = crafted_run(tmp_path / "run", {"seed": 0.5, "terse": 0.9}, scenarios=5, facts=2)
    compactions = [
        {
            "case": f"s{s}/summary/50%/seed/0",
            "scenario": f"s{s}",
            "strategy": "summary",
            "budget": "50%",
            "prompt": "seed",
            "repeat": 0,
            "model": MODEL,
            "before_turn": 2,
            "first_verbatim_turn": 1,
            "folded_messages": 3,
            "size_before": 100,
            "size_after": 40,
            "summary": "s",
        }
        for s in range(5)
    ]
    (folder / "compactions.jsonl").write_text("".join(json.dumps(c) + "\n" for c in compactions))
    table = recall_by_budget(load_run(folder).records, load_run(folder).compactions)
    assert table.loc["summary: terse", "budget 50%"] == "not compacted (10 probes)"
    assert "%" in table.loc["summary: seed", "budget 50%"]  # compacted: a rate
