"""A new user's first hour: each place the tool contradicted itself, blamed the wrong file or left
the user without a next step, one test each (the documentation's own examples are in test_docs.py)."""

import json
import random
import re

import pytest
from test_gate import kept, make_retention_run
from test_report import crafted_run

from harness.cli import main
from harness.records import load_run
from harness.reports.comparisons import best_variant, comparison_table
from harness.reports.formats import text_report


def one_scenario(folder, outcomes, tokens=100):
    return make_retention_run(
        folder, {"seed": {("s0", f"f{i}"): o for i, o in enumerate(outcomes)}}, summary_tokens=tokens
    )


def test_a_gate_row_that_could_not_be_tested_is_no_pass_and_the_header_agrees(tmp_path, capsys):
    base = one_scenario(tmp_path / "base", [[1], [1], [1]])
    worse = one_scenario(tmp_path / "worse", [[1], [0], [0]], tokens=200)
    assert main(["gate", "--run", str(worse), "--baseline", str(base)]) == 100
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| retention: summary: seed @ budget 50%"))
    assert row.rstrip().endswith("| cannot judge: too few scenarios to test (1 scenario, under 5) |")
    assert "### Summary-prompt gate: regression" in out and "| summary size: summary: seed |" in out
    same = one_scenario(tmp_path / "same", [[1], [1], [1]])
    assert main(["gate", "--run", str(same), "--baseline", str(base)]) == 1  # nothing failed, nothing passed
    out = capsys.readouterr().out
    assert "### Summary-prompt gate: cannot judge" in out and "| pass |" not in out.split("| summary size")[0]


def test_retention_is_one_figure_per_variant_on_every_surface(tmp_path, capsys):
    # One fact through three summaries (kept in one), the others through one (all kept): per
    # observation that would be 60%, per fact and case (the gate's unit) 78%.
    rng = random.Random(0)
    retained = {
        "seed": {**kept(rng, 0.5, scenarios=6, per=1, compactions=3), **{(f"s{s}", "g"): [1] for s in range(6)}},
        "terse": {**kept(rng, 0.2, scenarios=6, per=1, compactions=3), **{(f"s{s}", "g"): [0] for s in range(6)}},
    }
    run_dir = make_retention_run(tmp_path / "run", retained, prompts=("seed", "terse"))
    run = load_run(run_dir)
    table_cell = text_report(run_dir).split("Summary retention by prompt and budget")[1].split("\n")[2]
    figure = re.search(r"summary: seed\s+(\d+)%", table_cell)[1]
    assert f"Best on retention: summary: seed ({figure}%)" in best_variant(run)
    assert main(["compare", str(run_dir), "--a", "terse", "--b", "seed"]) == 0
    assert f"B (summary: seed): {figure}%" in capsys.readouterr().out
    assert "for each fact of each case, the share of its summaries that state it" in text_report(run_dir)


def test_paired_comparisons_read_in_the_direction_of_their_number(tmp_path):
    table = comparison_table(load_run(crafted_run(tmp_path / "a", {"bad": 0.1, "good": 0.9})))
    row = table.loc["recall: summary: good minus summary: bad"]
    first, second = (int(re.search(r"(\d+)%", row[side])[1]) for side in ("first", "second"))
    assert row["first"].startswith("summary: good ") and row["second"].startswith("summary: bad ") and first > second
    assert row["first minus second (95% CI)"].startswith("+")


def test_validate_knows_an_eval_with_a_typo_and_reports_the_one_error(tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("id: s\ndescription: d\nturns:\n  - user: My code is 4471.\n    assistant: Noted.\n")
    (tmp_path / "p.txt").write_text("Summarise.")
    evalfile = tmp_path / "e.yaml"
    evalfile.write_text("name: e\nscenarios: [s.yaml]\nbudget: [100]\nprompts: [p.txt]\n")
    assert main(["validate", str(evalfile)]) == 1
    err = capsys.readouterr().err
    assert err == f"error: {evalfile}:3: budget: unknown key (did you mean `budgets`?)\n"


def test_a_missing_prompt_file_is_blamed_on_the_flag(tmp_path, capsys, eval_file):
    assert main(["run", str(eval_file), "--prompt", str(tmp_path / "nope.txt")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --prompt: summary prompt file") and str(eval_file) not in err


def test_a_one_budget_plot_puts_every_variant_at_that_budgets_tick(tmp_path):
    from harness.reports.plots import plot_recall_by_budget

    figure = plot_recall_by_budget(load_run(crafted_run(tmp_path / "a", {"one": 0.5, "two": 0.7, "none": 1.0})))
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["50%"]
    tick = ax.get_xticks()[0]
    points = [x for line in ax.lines for x in line.get_xdata() if line.get_marker() == "o"]
    assert len(points) == 2 and all(abs(x - tick) < 0.15 for x in points)
    low, high = ax.get_xlim()
    assert low <= tick - 0.4 and high >= tick + 0.4  # the tick is in the middle, not at an edge


def test_the_gate_output_lists_what_it_leaves_out_and_ends_with_the_next_command(tmp_path, capsys):
    rng = random.Random(2)
    seed = kept(rng, 0.9, scenarios=30, per=8)
    base = make_retention_run(tmp_path / "base", {"seed": seed})
    nothing = make_retention_run(tmp_path / "nothing", {"seed": {k: [0] * len(v) for k, v in seed.items()}})
    assert main(["gate", "--run", str(nothing), "--baseline", str(base)]) == 100
    out = capsys.readouterr().out
    lost = int(re.search(r"kept less than the baseline \(retention, (\d+)\)", out)[1])
    assert lost > 30 and f"- ... and {lost - 30} more (all in gate-junit.xml)" in out
    assert "falls under 0%" not in out
    last = out.split("junit:")[0].strip().split("\n\n")[-1]  # the markdown's last paragraph
    assert last.startswith(f"Next: `harness report {nothing}`")


def test_unknown_keys_and_flags_get_a_suggestion(tmp_path, capsys):
    bad = tmp_path / "s.yaml"
    bad.write_text(
        "id: s\ndescription: d\nturns:\n  - user: My code is 4471.\n    assistant: Noted.\n    facts:\n"
        "      - id: c\n        kind: number\n        anwser: '4471'\n        probe: What is my code?\n"
    )
    assert main(["validate", str(bad)]) == 1
    assert "anwser: unknown key (did you mean `answer`?)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["validate", str(bad), "--resluts", "r"])
    assert "(did you mean `--results`?)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["valdiate", str(bad)])
    assert "(did you mean `validate`?)" in capsys.readouterr().err


def test_compare_on_a_folder_that_is_not_a_run_lists_the_runs(tmp_path, capsys):
    results = tmp_path / "results"
    crafted_run(results / "runs" / "e-20261201-100000", {"one": 0.9, "two": 0.1})
    assert main(["compare", str(tmp_path / "typo"), "--a", "one", "--b", "two", "--results", str(results)]) == 1
    err = capsys.readouterr().err
    assert "not a run folder" in err and "recent runs in" in err and "e-20261201-100000" in err


def test_one_of_anything_is_singular(tmp_path, capsys):
    run_dir = crafted_run(tmp_path / "a", {"one": 1.0, "two": 0.0}, scenarios=1, facts=1)
    report = text_report(run_dir)
    assert main(["compare", str(run_dir), "--a", "one", "--b", "two"]) == 0
    shown = report + capsys.readouterr().out
    assert not re.search(r"\b1 (scenarios|clusters|facts|pairs|probes|turns|prompts|cases)\b", shown), shown
    assert "1 scenario;" in shown and "1 pair in 1 cluster" in shown
    (tmp_path / "one.yaml").write_text(json.dumps({"id": "x", "description": "d", "turns": [{"user": "hi"}]}))
    assert main(["validate", str(tmp_path / "one.yaml")]) == 0
    assert "(1 turn, 0 facts)" in capsys.readouterr().out
