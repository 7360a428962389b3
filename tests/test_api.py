"""The public Python API (`harness.api`): load, run, compare, baseline and gate from a program, with
the same results as the command line gives."""

from pathlib import Path

import pytest
from fakes import FakeClient
from test_run import oracle

from harness import api
from harness.cli import main
from harness.errors import InputError


@pytest.fixture
def oracle_model(monkeypatch):
    fake = FakeClient(oracle)
    monkeypatch.setattr("harness.execution.executors.open_for", lambda ev, *_, **__: fake)
    return fake


def test_run_compare_baseline_and_gate_from_python(eval_file, tmp_path, oracle_model, capsys):
    results = tmp_path / "results"
    run = api.run(eval_file, results=results, budgets=["100%"])
    assert isinstance(run, api.Run) and run.path is not None and run.path.parent == results / "runs"
    assert set(run.records["strategy"]) == {"summary", "truncate", "none", "no-history"}
    assert set(run.records["budget"].dropna()) == {"100%"}  # the override applied

    # The summary against truncation: paired on the same facts, on every metric both measured.
    comparisons = {c.metric: c for c in api.compare(run, a="truncate", b="summary")}
    assert {"recall", "retention"} <= set(comparisons)
    recall = comparisons["recall"]
    assert recall.n == len(run.records[run.records["strategy"] == "summary"])  # every summary probe paired
    assert (recall.label_a, recall.label_b) == ("A (truncate)", "B (summary: user-lines)")
    assert recall.rate_b >= recall.rate_a  # the oracle summariser keeps the user's lines: truncate cannot win
    with pytest.raises(InputError, match=r"^a: no prompt 'facts-first' with strategy summary .*user-lines"):
        api.compare(run, a="facts-first", b="summary")
    with pytest.raises(InputError, match="no strategy 'mask-observations' in this run"):
        api.compare(run, a="summary", b="mask-observations", strategy="mask-observations")

    # The same figures as the command line's compare.
    assert main(["compare", str(run.path), "--a", "truncate", "--b", "summary"]) == 0
    printed = capsys.readouterr().out
    assert f"{recall.rate_a:.0%}" in printed and f"{recall.rate_b:.0%}" in printed

    # A baseline, then the same eval gated against it: nothing regressed, and too small to pass.
    baseline = api.baseline(run, results=results)
    assert baseline == results / "baselines" / "unit" and (baseline / "manifest.json").is_file()
    verdict = api.gate(api.run(eval_file, results=results, budgets=["100%"]), baseline)
    assert isinstance(verdict, api.Verdict) and verdict.exit_code in (0, 1)  # nothing regressed
    assert not [c for c in verdict.cells + verdict.kinds if c.result.outcome == api.Outcome.FAIL]
    assert api.gate(api.open_run(run.path), baseline, max_drop=0.5).exit_code == verdict.exit_code
    with pytest.raises(api.CannotJudge):
        api.gate(run, tmp_path / "no-baseline")


def test_an_eval_given_loaded_takes_no_overrides(eval_file, tmp_path, oracle_model):
    with pytest.raises(TypeError, match="overrides apply when the eval is given as a path"):
        api.run(api.load_eval(eval_file), results=tmp_path, budgets=["10%"])


def test_the_api_names_what_is_public():
    assert set(api.__all__) <= set(dir(api))
    for name in api.__all__:
        assert getattr(api, name).__doc__, name


@pytest.mark.e2e
def test_the_api_runs_an_eval_on_the_embedded_model(tmp_path):
    """Through the real backend: the shipped smoke eval's first cases on the fast embedded model."""
    smoke = Path(__file__).parents[1] / "evals" / "smoke.yaml"
    run = api.run(smoke, results=tmp_path, model="smollm2-135m", scenario_ids=["trip-planning"], limit=2)
    assert run.manifest.model.startswith("SmolLM2") and len(run.records) and not run.records["error"].any()
    assert {c.metric for c in api.compare(run, a="seed", b="facts-first")} >= {"retention"}
