"""Compare and gate: paired statistics, exit codes, JUnit and markdown outputs."""

import json
import random
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
from browser import CHROMIUM, inspect_page

from harness.analysis.compare import pair
from harness.analysis.stats import wilson
from harness.cli import main
from harness.records import load_records
from harness.reports.formats import html_report, markdown_report, write_report

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf:98362432"


def make_run(folder: Path, hits: dict, prompt: str = "seed", model: str = MODEL, errors: int = 0) -> Path:
    """A run folder with one summary record per (scenario, fact, budget); `hits` says which recall."""
    folder.mkdir(parents=True)
    records = []
    for i, ((scenario, fact, budget), hit) in enumerate(sorted(hits.items())):
        verdict = "error" if i < errors else ("recalled" if hit else "forgot")
        records.append(
            {
                "case": f"{scenario}/summary/{budget}/{prompt}/0",
                "scenario": scenario,
                "fact": fact,
                "kind": "number",
                "budget": budget,
                "strategy": "summary",
                "prompt": prompt,
                "repeat": 0,
                "verdict": verdict,
                "answer": f"<script>alert({i})</script>",
                "expected": "42",
                "location": "gone",
                "compactions": 1,
                "model": model,
            }
        )
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "manifest.json").write_text(json.dumps({"eval": {"name": "crafted", "gate": {}}, "model": model}))
    return folder


def facts(n_scenarios=8, per=5, budgets=("40%", "70%")):
    return [(f"s{s}", f"f{f}", b) for s in range(n_scenarios) for f in range(per) for b in budgets]


def test_wilson_interval():
    assert wilson(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    low, high = wilson(5, 10)
    assert (low, high) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))


def test_pairing_leaves_out_errors_and_lists_flips(tmp_path):
    keys = facts(2, 3, ("40%",))
    a = load_records(make_run(tmp_path / "a", {k: True for k in keys}))
    b = load_records(make_run(tmp_path / "b", {k: k[1] != "f0" for k in keys}, errors=1))
    comparison = pair(a, b, "A", "B")
    assert comparison.n == len(keys) - 1
    assert sorted(comparison.lost["fact"]) == ["f0"] and comparison.gained.empty


def gate(tmp_path, baseline_hits, candidate_hits, *extra, **run_kwargs):
    base = make_run(tmp_path / "base", baseline_hits)
    cand = make_run(tmp_path / "cand", candidate_hits, **run_kwargs)
    return main(["gate", "--run", str(cand), "--baseline", str(base), *extra]), cand


def test_a_clearly_worse_candidate_exits_100(tmp_path, capsys):
    keys = facts()
    code, cand = gate(tmp_path, {k: True for k in keys}, {k: k[1] == "f0" for k in keys})
    assert code == 100
    out = capsys.readouterr().out
    assert "### Summary-prompt gate: regression" in out and "FAIL: recall dropped 80.0%" in out
    suite = ET.parse(cand / "gate" / "gate-junit.xml").getroot()
    assert suite.get("tests") == "3" and suite.get("failures") == "3"
    assert [c.get("name") for c in suite] == ["budget 40%", "budget 70%", "all budgets"]


def test_a_candidate_differing_only_by_noise_exits_0(tmp_path, capsys):
    keys = facts()
    rng = random.Random(1)
    baseline = {k: rng.random() < 0.6 for k in keys}
    candidate = dict(baseline)
    # Three facts flip each way: noise, not a regression.
    for k in rng.sample([k for k in keys if baseline[k]], 3) + rng.sample([k for k in keys if not baseline[k]], 3):
        candidate[k] = not baseline[k]
    # 8 scenarios can detect only drops of about a quarter: the gate says so instead of passing...
    code, _ = gate(tmp_path / "small", baseline, candidate)
    assert code == 1
    assert "this eval can detect only drops of" in capsys.readouterr().out
    # ...and passes the same noise when it is asked about drops of that size.
    code, _ = gate(tmp_path / "judged", baseline, candidate, "--max-drop", "0.3")
    assert code == 0
    assert "gate: pass" in capsys.readouterr().out


def test_a_small_drop_that_is_significant_but_under_the_margin_passes(tmp_path):
    keys = facts(40)
    lost_in = {f"s{i}" for i in range(8)}
    candidate = {k: not (k[1] == "f0" and k[0] in lost_in) for k in keys}  # 16 of 400 lost: 4%
    code, cand = gate(tmp_path, {k: True for k in keys}, candidate, "--max-drop", "0.1")
    assert code == 0
    assert "-4% (-7% to -1%) | 0.00" in (cand / "gate" / "gate.md").read_text()  # significant, yet under 10%


def test_the_floor_fails_even_without_a_drop(tmp_path):
    keys = facts()
    code, _ = gate(tmp_path, {k: k[1] == "f0" for k in keys}, {k: k[1] == "f0" for k in keys}, "--floor", "0.5")
    assert code == 100


def test_missing_baseline_exits_1_with_a_clear_message(tmp_path, capsys):
    cand = make_run(tmp_path / "cand", {k: True for k in facts()})
    assert main(["gate", "--run", str(cand), "--baseline", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gate: cannot judge: no baseline at") and "harness baseline RUN_DIR" in err


def test_baseline_of_another_model_or_too_many_errors_exit_1(tmp_path, capsys):
    keys = facts()
    code, _ = gate(tmp_path / "m", {k: True for k in keys}, {k: True for k in keys}, model="claude-x")
    assert code == 1 and "recorded on" in capsys.readouterr().err
    code, _ = gate(tmp_path / "e", {k: True for k in keys}, {k: True for k in keys}, errors=40)
    assert code == 1 and "failed with errors" in capsys.readouterr().err


def test_baseline_command_records_what_the_gate_reads(tmp_path, capsys):
    run = make_run(tmp_path / "run", {k: True for k in facts(40)})
    assert main(["baseline", str(run), "--results", str(tmp_path / "results")]) == 0
    recorded = tmp_path / "results" / "baselines" / "crafted"
    assert sorted(p.name for p in recorded.iterdir()) == ["manifest.json", "records.jsonl"]
    assert main(["gate", "--run", str(run), "--results", str(tmp_path / "results")]) == 0


def test_compare_command_within_one_run(tmp_path, capsys):
    run = make_run(tmp_path / "a", {k: True for k in facts(2, 2, ("40%",))})
    other = make_run(tmp_path / "b", {k: False for k in facts(2, 2, ("40%",))}, prompt="terse")
    assert main(["compare", str(run), str(other)]) == 0
    out = capsys.readouterr().out
    assert "recall: A (summary: seed): 100%   B (summary: terse): 0%" in out
    assert "-100.0% on 4 pairs in 2 clusters: too few clusters (under 5) for an interval or a test" in out
    assert main(["compare", str(run)]) == 1  # within one run, prompts must be named


def test_reports_escape_model_text(tmp_path):
    run = make_run(tmp_path / "run", {k: k[1] == "f0" for k in facts(2, 2)})
    (run / "compactions.jsonl").write_text("")
    page = html_report(run)
    assert "<script>alert" not in page and "\\u003cscript>alert" in page  # escaped in the explorer data
    assert "| summary: seed |" in markdown_report(run)
    paths = write_report(run)
    assert {p.name for p in paths.values()} == {"report.md", "records.csv", "report.html"}
    assert len(pd.read_csv(paths["csv"])) == 8


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed: run scripts/install-chromium.sh")
def test_html_report_renders_its_plots_in_headless_chromium(tmp_path):
    run = make_run(tmp_path / "run", {k: k[1] in ("f0", "f1") for k in facts(3, 3)})
    (run / "compactions.jsonl").write_text(
        json.dumps(
            {
                "strategy": "summary",
                "prompt": "seed",
                "summary": "s",
                "size_before": 100,
                "size_after": 40,
                "output_tokens": 20,
                "latency_s": 1.0,
            }
        )
        + "\n"
    )
    found = inspect_page(write_report(run)["html"], tmp_path)
    assert len(found["images"]) == 5 and set(found["images"]) == {"ok"}


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed: run scripts/install-chromium.sh")
def test_model_text_stays_text_inside_the_explorer(tmp_path):
    run = make_run(tmp_path / "run", {k: False for k in facts(2, 2)})  # answers are "<script>alert(i)</script>"
    found = inspect_page(write_report(run)["html"], tmp_path, fact="f0")
    assert "<script>alert(" in found["opened"]  # shown as the model wrote it...
    assert found["scripts"] == 3  # ...and never run: the explorer's data, its code and the probe


def make_retention_run(
    folder: Path,
    retained: dict,
    prompts=("seed",),
    control=None,
    summary_tokens=100,
    model: str = MODEL,
    kind_of=lambda fact: "number",
) -> Path:
    """A run without probes: per prompt, `retained[prompt]` maps (scenario, fact) to the 0/1 outcomes of
    that fact's successive compactions; every compaction's summary is `summary_tokens[prompt]` long;
    `kind_of(fact)` is the fact's kind."""
    folder.mkdir(parents=True)
    rows, compactions = [], []
    for prompt, facts_of in retained.items():
        for (scenario, fact), outcomes in sorted(facts_of.items()):
            case = f"{scenario}/summary/50%/{prompt}/0"
            for i, kept in enumerate(outcomes):
                rows.append(
                    {
                        "case": case,
                        "scenario": scenario,
                        "strategy": "summary",
                        "budget": "50%",
                        "prompt": prompt,
                        "repeat": 0,
                        "fact": fact,
                        "kind": kind_of(fact),
                        "compaction": i,
                        "expected": "42",
                        "retained": bool(kept),
                        "error": None,
                        "model": model,
                    }
                )
        tokens = summary_tokens[prompt] if isinstance(summary_tokens, dict) else summary_tokens
        compactions += [
            {
                "case": f"s/summary/50%/{prompt}/0",
                "strategy": "summary",
                "prompt": prompt,
                "summary": "x",
                "size_before": 1000,
                "size_after": 400,
                "output_tokens": tokens,
                "latency_s": 1.0,
            }
        ] * 3
    (folder / "retention.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "compactions.jsonl").write_text("".join(json.dumps(c) + "\n" for c in compactions))
    about = {
        "eval": {"name": "crafted", "gate": {}},
        "model": model,
        "control_prompt": control,
        "prompts": [{"id": p} for p in retained],
    }
    (folder / "manifest.json").write_text(json.dumps(about))
    return folder


def kept(rng, share, scenarios=30, per=8, compactions=3):
    """Each fact's outcomes over its compactions; facts of one scenario share a scenario-level rate."""
    result = {}
    for s in range(scenarios):
        level = min(1.0, max(0.0, share + rng.uniform(-0.15, 0.15)))
        for f in range(per):
            result[(f"s{s}", f"f{f}")] = [int(rng.random() < level) for _ in range(compactions)]
    return result


def test_retention_gate_fails_a_prompt_that_keeps_nothing_and_passes_the_same_prompt(tmp_path, capsys):
    rng = random.Random(3)
    seed = kept(rng, 0.6)
    base = make_retention_run(tmp_path / "base", {"seed": seed, "ok": kept(rng, 0.05)}, control="ok")
    nothing = make_retention_run(tmp_path / "nothing", {"seed": {k: [0] * len(v) for k, v in seed.items()}})
    assert main(["gate", "--run", str(nothing), "--baseline", str(base), "--max-drop", "0.1"]) == 100
    out = capsys.readouterr().out
    p = float(out.split("retention dropped")[1].split("p = ")[1].split(" ")[0])
    assert p < 1e-6
    # The unchanged prompt, with noise in one fact of ten: pass.
    noisy = {k: ([1 - v[0]] + v[1:] if rng.random() < 0.1 else v) for k, v in seed.items()}
    same = make_retention_run(tmp_path / "same", {"seed": noisy})
    assert main(["gate", "--run", str(same), "--baseline", str(base), "--max-drop", "0.1"]) == 0


def by_prefix(fact: str) -> str:
    return fact.split("-")[0]


def test_a_prompt_that_drops_one_kind_fails_on_that_kind_though_the_overall_drop_is_small(tmp_path, capsys):
    rng = random.Random(6)
    seed = {}
    for s in range(30):
        seed.update({(f"s{s}", f"other-{f}"): [int(rng.random() < 0.6)] for f in range(40)})
        seed.update({(f"s{s}", f"files-{f}"): [1] for f in range(2)})
        seed[(f"s{s}", "plan-0")] = [0]  # the baseline never keeps it: nothing a candidate could lose
    base = make_retention_run(tmp_path / "base", {"seed": seed}, kind_of=by_prefix)
    no_files = {k: [0] if k[1].startswith("files") else v for k, v in seed.items()}
    dropped = make_retention_run(tmp_path / "dropped", {"seed": no_files}, kind_of=by_prefix)
    assert main(["gate", "--run", str(dropped), "--baseline", str(base)]) == 100
    out = capsys.readouterr().out
    overall = next(line for line in out.splitlines() if line.startswith("| retention: summary: seed @ all budgets"))
    assert overall.endswith("| pass |")  # 60 of 1,290 facts: a 4.7% drop, under max_drop
    assert "| retention of files: summary: seed @ all budgets | 100% | 0% |" in out
    assert "FAIL: files retention dropped 100.0% (more than 25.0%)" in out and "(0.05 over 3 kinds)" in out
    assert (
        "| retention of plan: summary: seed @ all budgets | 0% | 0% |" in out
        and "unguarded: the baseline keeps 0%" in out
    )
    same = make_retention_run(tmp_path / "same", {"seed": seed}, kind_of=by_prefix)
    assert main(["gate", "--run", str(same), "--baseline", str(base)]) == 0  # an unguarded kind blocks no pass


def test_each_kind_is_tested_at_alpha_over_the_number_of_kinds(tmp_path, capsys):
    """A kind loses its fact in 5 of 12 scenarios (-42%, p = 0.017): a failure when two kinds share
    alpha (0.025), not when four do (0.0125)."""

    def runs(kinds: int) -> tuple[Path, Path]:
        seed = {(f"s{s}", f"{k}-0"): [1] for s in range(12) for k in "abcd"[:kinds]}
        lost = {key: [0] if key[1] == "a-0" and int(key[0][1:]) < 5 else v for key, v in seed.items()}
        folder = tmp_path / str(kinds)
        return (
            make_retention_run(folder / "base", {"seed": seed}, kind_of=by_prefix),
            make_retention_run(folder / "lost", {"seed": lost}, kind_of=by_prefix),
        )

    base, lost = runs(2)
    main(["gate", "--run", str(lost), "--baseline", str(base), "--max-drop", "0.5"])
    assert "FAIL: a retention dropped 41.7% (more than 25.0%), significant: p = 0.017" in capsys.readouterr().out
    base, lost = runs(4)
    main(["gate", "--run", str(lost), "--baseline", str(base), "--max-drop", "0.5"])
    out = capsys.readouterr().out
    guard = next(line for line in out.splitlines() if line.startswith("| retention of a: summary: seed"))
    assert "-42%" in guard and "FAIL" not in guard


def test_summaries_that_grow_fail_on_size_even_when_they_keep_everything(tmp_path, capsys):
    rng = random.Random(4)
    seed = kept(rng, 0.6)
    base = make_retention_run(tmp_path / "base", {"seed": seed}, summary_tokens=100)
    verbatim = make_retention_run(
        tmp_path / "verbatim", {"seed": {k: [1] * len(v) for k, v in seed.items()}}, summary_tokens=160
    )
    assert main(["gate", "--run", str(verbatim), "--baseline", str(base)]) == 100
    out = capsys.readouterr().out
    assert "**Summary size: summary: seed FAILS**: median summary 160 tokens against the baseline's 100 (+60%" in out
    assert main(["gate", "--run", str(verbatim), "--baseline", str(base), "--max-summary-growth", "0.7"]) == 0


def test_a_model_that_ignores_its_summary_prompt_cannot_be_gated(tmp_path, capsys):
    rng = random.Random(5)
    seed, control = kept(rng, 0.3), kept(rng, 0.3)
    base = make_retention_run(tmp_path / "base", {"seed": seed, "ok": control}, control="ok")
    same = make_retention_run(tmp_path / "same", {"seed": seed})
    assert main(["gate", "--run", str(same), "--baseline", str(base)]) == 1
    assert "the summary prompt barely matters" in capsys.readouterr().out


def test_the_gate_checks_the_baseline_and_prompt_before_any_model_call(tmp_path, capsys, monkeypatch, eval_file):
    import harness.execution.executors

    monkeypatch.setattr(harness.execution.executors, "open_model", lambda *a, **k: pytest.fail("a model was opened"))
    results = tmp_path / "results"
    assert main(["gate", str(eval_file), "--results", str(results)]) == 1
    assert "no baseline at" in capsys.readouterr().err
    make_run(results / "baselines" / load_records_name(eval_file), {k: True for k in facts(40)})
    assert main(["gate", str(eval_file), "--results", str(results), "--against", "nope"]) == 1
    assert "the baseline has no prompt 'nope' (it has seed)" in capsys.readouterr().err


def load_records_name(eval_file: Path) -> str:
    from harness.execution.evals import load_eval

    return load_eval(eval_file).spec.name


def test_a_baseline_with_other_sampling_or_layout_cannot_judge(tmp_path, capsys):
    keys = facts(40)
    base = make_run(tmp_path / "base", {k: True for k in keys})
    cand = make_run(tmp_path / "cand", {k: True for k in keys})
    about = json.loads((cand / "manifest.json").read_text())
    (cand / "manifest.json").write_text(json.dumps({**about, "sampling": {"repeat_penalty": 1.3}}))
    assert main(["gate", "--run", str(cand), "--baseline", str(base)]) == 1
    assert "recorded with sampling None" in capsys.readouterr().err


@pytest.mark.slow
def test_analysis_never_imports_the_runner_the_agent_or_the_sdk():
    # (it reads the strategy registry in harness.compaction, which imports nothing of the agent's)
    code = (
        "import sys, harness.analysis.gate, harness.reports.formats, harness.analysis.compare, harness.records; "
        "print(sorted(m for m in sys.modules if m in ('anthropic', 'harness.execution.runner', "
        "'harness.execution.agent', 'xllamacpp')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_summaries_that_run_into_the_token_cap_more_often_fail(tmp_path, capsys):
    rng = random.Random(6)
    seed = kept(rng, 0.6)

    def with_caps(folder, share):
        run = make_retention_run(folder, {"seed": seed})
        rows = [json.loads(line) for line in (run / "compactions.jsonl").read_text().splitlines()]
        for i, row in enumerate(rows):
            row["capped"] = i < round(share * len(rows))
        (run / "compactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return run

    base, copying, same = (
        with_caps(tmp_path / "base", 0.0),
        with_caps(tmp_path / "copy", 2 / 3),
        with_caps(tmp_path / "same", 0.0),
    )
    assert main(["gate", "--run", str(copying), "--baseline", str(base)]) == 100
    out = capsys.readouterr().out
    assert (
        "**Summary cap: summary: seed FAILS**: 67% of the summaries stop at the token cap against the baseline's 0%"
        in out
    )
    assert "| summary size: summary: seed | median 100 tokens | median 100 tokens | pass |" in out
    assert main(["gate", "--run", str(copying), "--baseline", str(base), "--max-cap-increase", "0.7"]) == 0
    assert main(["gate", "--run", str(same), "--baseline", str(base)]) == 0
    # A baseline recorded before stop reasons were: the cap cannot be checked, and the row says so.
    old = make_retention_run(tmp_path / "old", {"seed": seed})
    assert main(["gate", "--run", str(copying), "--baseline", str(old)]) == 1
    assert "cannot judge: the baseline does not record its summaries' stop reason" in capsys.readouterr().out


def test_a_candidate_named_like_the_control_is_compared_with_the_eval_prompt_never_the_control(tmp_path, capsys):
    """A prompt file called keeps-nothing.txt is a candidate like any other: compared with the baseline's
    summary prompt (and the output says so), never with the baseline's keeps-nothing control."""
    keys = facts(40, 5, ("70%",))
    seed = make_run(tmp_path / "seed", {k: k[1] != "f0" for k in keys})
    control = make_run(tmp_path / "control", {k: k[1] == "f0" and k[0] < "s2" for k in keys}, prompt="keeps-nothing")
    base = tmp_path / "base"
    base.mkdir()
    (base / "records.jsonl").write_text((seed / "records.jsonl").read_text() + (control / "records.jsonl").read_text())
    (base / "manifest.json").write_text(
        json.dumps(
            {
                "eval": {"name": "crafted", "gate": {}},
                "model": MODEL,
                "control_prompt": "keeps-nothing",
                "prompts": [{"id": "seed"}, {"id": "keeps-nothing"}],
            }
        )
    )
    candidate = make_run(tmp_path / "cand", {k: k[1] == "f0" and k[0] < "s2" for k in keys}, prompt="keeps-nothing")
    assert main(["gate", "--run", str(candidate), "--baseline", str(base)]) == 100
    out = capsys.readouterr().out
    assert (
        "Candidate `summary: keeps-nothing` is compared with baseline `summary: seed` (the baseline's first prompt: "
        "'keeps-nothing' is the baseline's keeps-nothing control's id, and a candidate is never compared with "
        "the control)" in out
    )
    assert main(["gate", "--run", str(candidate), "--baseline", str(base), "--against", "keeps-nothing"]) == 1
    assert (
        "is the baseline's keeps-nothing control: a candidate is compared with a summary prompt (seed)"
        in capsys.readouterr().err
    )


def test_one_budget_and_all_budgets_give_one_verdict_for_the_same_evidence(tmp_path, capsys):
    """With one budget, the budget's row and the all-budgets row hold the same pairs: both pass, or
    both cannot judge (here: too little power for a 5% drop)."""
    keys = facts(12, 5, ("70%",))
    rng = random.Random(3)
    baseline = {k: rng.random() < 0.5 for k in keys}
    code, cand = gate(tmp_path, baseline, dict(baseline))
    assert code == 1
    suite = ET.parse(cand / "gate" / "gate-junit.xml").getroot()
    cells = {c.get("name"): c for c in suite if c.get("classname").startswith("recall")}
    assert set(cells) == {"budget 70%", "all budgets"}
    assert [c.find("skipped").get("message") for c in cells.values()] == 2 * [
        cells["all budgets"].find("skipped").get("message")
    ]


def test_a_verdict_is_a_value_every_output_renders():
    """One rule decides each result; the exit code, the markdown's title and the JUnit counts all
    come from the outcome, never from parsing the text back."""
    from harness.analysis.gate import EXIT_CODES, Outcome, Result, SummaryCheck, Verdict, decide
    from harness.reports.gate import junit_xml

    assert decide([], None) == Result(Outcome.PASS) and str(decide([], None)) == "pass"
    assert decide(["a", "b"], "ignored") == Result(Outcome.FAIL, ("a", "b"))
    assert str(decide(["a", "b"], None)) == "FAIL: a; b"
    assert decide([], "few") == Result(Outcome.CANNOT_JUDGE, ("few",)) and str(decide([], "few")) == "cannot judge: few"
    assert decide([], "few", guard=True).outcome == Outcome.UNGUARDED

    passing = SummaryCheck("summary size: seed", "median 100 tokens", "median 101 tokens")
    unchecked = SummaryCheck("summary cap: seed", "not recorded", "0% of 3", unchecked="no stop reasons")
    failing = SummaryCheck("summary size: terse", "median 100 tokens", "median 300 tokens", failure="grew")
    cases = [([passing], [], Outcome.PASS), ([passing, unchecked], [], Outcome.CANNOT_JUDGE)]
    cases += [
        ([passing], ["the model ignores its prompt"], Outcome.CANNOT_JUDGE),
        ([unchecked, failing], [], Outcome.FAIL),
    ]
    for checks, cannot, outcome in cases:
        verdict = Verdict([], checks, cannot)
        assert verdict.outcome == outcome and verdict.exit_code == EXIT_CODES[outcome]
    xml = junit_xml(Verdict([], [passing, unchecked, failing]))
    assert 'tests="3"' in xml and 'failures="1"' in xml and 'skipped="1"' in xml and 'message="grew"' in xml


def test_a_candidates_requests_identical_to_the_baselines_are_answered_by_its_recorded_responses(
    tmp_path, capsys, monkeypatch, eval_file
):
    """A baseline keeps the responses of its run; a gate's candidate sends the model only the
    requests that differ (another prompt, another runtime, or --no-cache), and says how many it
    did not send."""
    from fakes import FakeAnthropic

    import harness.execution.executors
    from harness.models.backends import Backend

    def echo(request):  # a summary quotes the transcript (and the prompt); an answer names every number
        return json.dumps(request["messages"])[-400:]

    endpoints: list[FakeAnthropic] = []

    def opened(*_args, **_kwargs):
        endpoints.append(FakeAnthropic(echo))
        return Backend(endpoints[-1], "m", "fake", {"temperature": 0.0, "seed": 0})

    def sent() -> int:  # requests that reached the model, the endpoint check's one-token request aside
        return sum(r.get("max_tokens") != 1 for r in endpoints[-1].fake.requests)

    monkeypatch.setattr(harness.execution.executors, "open_model", opened)
    results = tmp_path / "results"
    assert main(["run", str(eval_file), "--results", str(results), "--quiet"]) == 0
    made = sent()
    assert made > 10
    run_dir = next((results / "runs").iterdir())
    capsys.readouterr()
    assert main(["baseline", str(run_dir), "--results", str(results)]) == 0
    assert f"(with the responses to {made} of its run's {made} requests)" in capsys.readouterr().out
    shutil.rmtree(results / "cache")  # a fresh clone in CI has the baseline and no cache

    def gate_run(*flags: str) -> tuple[int, dict, str]:
        code = main(["gate", str(eval_file), "--results", str(results), "--quiet", *flags])
        newest = max((results / "runs").iterdir(), key=lambda p: p.stat().st_mtime_ns)
        return code, json.loads((newest / "manifest.json").read_text()), capsys.readouterr().err

    code, about, err = gate_run()
    assert sent() == 0 and about["model_calls"] == 0 and about["answered_by_baseline"] == made
    assert f"the baseline's {made} recorded responses answer the requests identical to its own" in err
    gate_md = (max((results / "runs").iterdir(), key=lambda p: p.stat().st_mtime_ns) / "gate" / "gate.md").read_text()
    assert f"{made} requests of the candidate's run, identical to the baseline's" in gate_md
    shutil.rmtree(results / "cache", ignore_errors=True)

    code, about, _ = gate_run("--no-cache")  # no cache at all: a request asked twice is sent twice
    assert sent() >= made and about["model_calls"] == sent() and about.get("answered_by_baseline") is None

    recorded_with = json.loads((results / "baselines" / "unit" / "manifest.json").read_text())
    (results / "baselines" / "unit" / "manifest.json").write_text(
        json.dumps({**recorded_with, "versions": {**recorded_with["versions"], "xllamacpp": "0.0.1"}})
    )
    shutil.rmtree(results / "cache", ignore_errors=True)
    code, about, err = gate_run()
    assert "the model runtime changed (xllamacpp 0.0.1 then" in err
    assert sent() == made and about.get("answered_by_baseline") is None
    (results / "baselines" / "unit" / "manifest.json").write_text(json.dumps(recorded_with))

    shutil.rmtree(results / "cache", ignore_errors=True)
    (eval_file.parent / "user-lines.txt").write_text("Keep the user's lines, every one.")  # another prompt
    code, about, _ = gate_run()
    assert 0 < about["model_calls"] == sent() and about["answered_by_baseline"] == made - sent()
