"""Hostile input beyond YAML files (those are in tests/data/malformed): flags, strategy modules,
output folders, pipes, and run folders or baselines that are corrupt or unfinished. Each gets one
line naming the file (and line) or the flag, before any model call; nothing is half-reported."""

import json
import subprocess
import sys

import pytest
from fakes import FakeClient
from test_run import oracle

from harness.cli import main
from harness.errors import InputError
from harness.execution.evals import load_eval
from harness.execution.executors import run_eval
from harness.records import read_jsonl


@pytest.fixture
def no_model(monkeypatch):
    monkeypatch.setattr("harness.execution.executors.open_model", lambda *a, **k: pytest.fail("a model was opened"))


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["run", "EVAL", "--jobs", "-2"], "--jobs: must be 1 or more, not -2"),
        (["run", "EVAL", "--repeats", "0"], "--repeats: must be 1 or more, not 0"),
        (["run", "EVAL", "--jobs", "many"], "--jobs: 'many' is not a whole number"),
        (["chat", "--budget", "-1"], "--budget: must be 1 or more, not -1"),
        (["compare", "RUN", "--flips", "-1"], "--flips: must be 0 or more"),
    ],
)
def test_bad_numbers_name_their_flag(argv, flag, eval_file, capsys, no_model):
    with pytest.raises(SystemExit) as exit:
        main([str(eval_file) if a == "EVAL" else a for a in argv])
    assert exit.value.code == 2 and flag in capsys.readouterr().err


def test_gate_thresholds_from_flags_are_validated(tmp_path, capsys, no_model):
    from test_gate import facts, make_run

    run = make_run(tmp_path / "run", {k: True for k in facts(2, 2)})
    assert main(["gate", "--run", str(run), "--baseline", str(run), "--alpha", "5"]) == 1
    assert capsys.readouterr().err.strip() == "error: --alpha: Input should be less than 1"


@pytest.mark.parametrize("where", ["file", "unwritable"])
def test_results_must_be_a_writable_folder(where, eval_file, tmp_path, capsys, no_model):
    results = tmp_path / "results.txt" if where == "file" else "/proc/harness-results"
    if where == "file":
        results.write_text("not a folder")
    assert main(["run", str(eval_file), "--results", str(results)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {results}: --results: ") and err.count("\n") == 1


def test_a_strategy_module_that_prints_on_import_keeps_stdout_clean(eval_file, tmp_path, capsys):
    (tmp_path / "noisy_strategy.py").write_text(
        'print("hello from an import")\n\ndef compact(messages, client, output_stream, context_limit):\n'
        "    return messages\n"
    )
    eval_file.write_text(eval_file.read_text().replace("strategies: [", 'strategies: ["noisy_strategy:compact", '))
    ev = load_eval(eval_file)  # found beside the eval file
    captured = capsys.readouterr()
    assert "noisy_strategy:compact" in ev.custom
    assert "hello" not in captured.out and "hello from an import" in captured.err


@pytest.mark.slow
def test_a_closed_pipe_is_not_a_traceback():
    child = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "schema"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    child.stdout.close()  # the reader is gone before the first write, as with `| head` on a long output
    child.wait(timeout=60)
    assert b"Traceback" not in child.stderr.read()


def _finished_run(eval_file, tmp_path):
    return run_eval(load_eval(eval_file), FakeClient(oracle), tmp_path / "results", progress=False)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: (d / "manifest.json").write_text('{"eval": {"name": "x"}, "model": '), "manifest.json:1: not JSON"),
        (
            lambda d: (d / "manifest.json").write_text('{"eval": {}, "model": "m"}'),
            "manifest.json: eval: the eval as run has no name",
        ),
        (lambda d: (d / "manifest.json").write_text("[1, 2]"), "manifest.json: "),
        (lambda d: (d / "manifest.json").unlink(), "not a run folder (no manifest.json)"),
        (lambda d: _insert(d / "records.jsonl", 2, '{"case": "x", "fact": '), "records.jsonl:3: not a JSON record"),
        (lambda d: _insert(d / "retention.jsonl", 0, "[1, 2]"), "retention.jsonl:1: not a record (a JSON object)"),
        (
            lambda d: _insert(d / "records.jsonl", 1, '{"case": "x", "verdict": "maybe"}'),
            "records.jsonl:2: verdict: verdict 'maybe' is none of",
        ),
    ],
)
def test_a_corrupt_run_folder_is_reported_by_file_and_line(damage, message, eval_file, tmp_path, capsys):
    run_dir = _finished_run(eval_file, tmp_path)
    damage(run_dir)
    assert main(["report", str(run_dir)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err


def _insert(path, index, line):
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:index] + [line + "\n"] + lines[index:]))


def test_an_unfinished_run_is_never_reported_as_complete(eval_file, tmp_path, capsys):
    run_dir = _finished_run(eval_file, tmp_path)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (run_dir / "manifest.json").write_text(json.dumps({**manifest, "finished": None}))
    # The last case's lines are written but the case was not marked finished: a killed run.
    cases = (run_dir / "cases.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "cases.jsonl").write_text("".join(cases[:-1]))
    with (run_dir / "records.jsonl").open("a") as file:
        file.write('{"case": "locker/no-history/-/-/0", "verd')  # and a line cut short
    assert main(["report", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("UNFINISHED RUN")
    assert "control: no history" not in out.split("Recall by summary prompt and budget")[1].split("\n\n")[0]
    assert main(["gate", "--run", str(run_dir), "--baseline", str(run_dir)]) == 1
    assert "run is unfinished" in capsys.readouterr().err


def test_a_report_that_cannot_be_written_keeps_the_printed_tables(eval_file, tmp_path, capsys):
    run_dir = _finished_run(eval_file, tmp_path)
    (run_dir / "report").write_text("a file where the report folder would go")
    assert main(["report", str(run_dir)]) == 1
    out, err = capsys.readouterr()
    assert "Recall by summary prompt and budget" in out  # what was computed is not lost
    assert err.startswith(f"error: {run_dir / 'report'}: cannot write the report files here") and err.count("\n") == 1
    assert main(["report", str(run_dir), "--out", "/proc/harness-report"]) == 1
    assert "error: /proc/harness-report: cannot write the report files here" in capsys.readouterr().err


def test_a_run_with_no_finished_case_is_not_reported(eval_file, tmp_path, capsys):
    run_dir = _finished_run(eval_file, tmp_path)
    (run_dir / "cases.jsonl").write_text("")
    assert main(["report", str(run_dir)]) == 1
    out, err = capsys.readouterr()
    assert not out and "no finished case to report" in err and err.count("\n") == 1


def test_import_into_a_file_names_the_flag(tmp_path, capsys):
    (tmp_path / "out.yaml").write_text("taken")
    conv = tmp_path / "conv.json"
    conv.write_text(
        json.dumps(
            {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I moved to Tartu."}],
                "qa": [],
            }
        )
    )
    assert main(["import", "locomo", str(conv), "--out", str(tmp_path / "out.yaml")]) == 1
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'out.yaml'}: --out: not a folder"


def test_a_locomo_file_whose_every_item_is_left_out_writes_nothing(tmp_path, capsys):
    conv = tmp_path / "conv.json"
    conv.write_text(
        json.dumps(
            {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I moved to Tartu."}],
                "qa": [{"question": "Where?", "answer": "Tartu", "evidence": ["D9:9"], "category": 1}],
            }
        )
    )
    assert main(["import", "locomo", str(conv), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "every QA item was left out (1; the first: qa[0]" in err and err.count("\n") == 1
    assert not list((tmp_path / "out").glob("*.yaml"))


def test_compare_of_runs_with_nothing_in_common_is_an_error(eval_file, tmp_path, capsys):
    first = _finished_run(eval_file, tmp_path / "a")
    other = tmp_path / "other.yaml"
    other.write_text(eval_file.read_text().replace('budgets: [150, "100%"]', "budgets: [120]"))
    second = run_eval(load_eval(other), FakeClient(oracle), tmp_path / "b", progress=False)
    assert main(["compare", str(first), str(second)]) == 1
    err = capsys.readouterr().err
    assert "nothing pairs up" in err and err.count("\n") == 1


def test_a_run_killed_while_writing_its_first_manifest_resumes_from_the_start(eval_file, tmp_path):
    """Killed between its folder and its manifest (a half-written manifest.tmp beside the lock):
    nothing ran, so resuming runs everything there; anything else without a manifest is refused."""
    whole = _finished_run(eval_file, tmp_path / "whole")
    folder = tmp_path / "killed"
    folder.mkdir()
    (folder / "run.lock").write_text("")
    (folder / "manifest.tmp").write_text('{"eval": {"na')
    resumed = run_eval(load_eval(eval_file), FakeClient(oracle), tmp_path, progress=False, resume=folder)
    assert resumed == folder and (folder / "manifest.json").exists()
    assert len(read_jsonl(folder / "records.jsonl")) == len(read_jsonl(whole / "records.jsonl"))
    (folder / "manifest.json").unlink()
    with pytest.raises(InputError, match="not a run folder"):
        run_eval(load_eval(eval_file), FakeClient(oracle), tmp_path, progress=False, resume=folder)
