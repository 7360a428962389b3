"""Reliability against a loopback server that injects faults: retried calls succeed, calls that
still fail are recorded as `error`, never as forgetting."""

import anthropic
import pytest
from fault_server import FAULTS, FaultServer

from harness.execution.evals import load_eval
from harness.execution.executors import run_eval
from harness.models.backends import Backend
from harness.records import load_records, read_jsonl
from harness.reports.tables import recall_by_budget


def run_against(server: FaultServer, eval_file, out, retries: int):
    client = anthropic.Anthropic(base_url=server.url, api_key="test-key", timeout=1.0, max_retries=retries)
    backend = Backend(client, "fake", "fault-server", {})
    run_dir = run_eval(load_eval(eval_file), backend, out, progress=False)
    return backend, run_dir, {(r["case"], r["fact"]): r for r in read_jsonl(run_dir / "records.jsonl")}


def test_faults_are_retried_or_recorded_as_errors(eval_file, tmp_path):
    with FaultServer(0.0) as server:
        _, _, reference = run_against(server, eval_file, tmp_path / "clean", retries=0)
    assert {r["verdict"] for r in reference.values()} == {"recalled", "forgot"}

    with FaultServer(0.2, seed=7) as server:
        backend, run_dir, faulty = run_against(server, eval_file, tmp_path / "faulty", retries=6)
    assert server.requests > backend.calls  # the SDK retried
    assert sum(server.faults.values()) >= 5 and set(server.faults) == set(FAULTS)
    assert faulty.keys() == reference.keys()
    for key, record in faulty.items():
        assert record["verdict"] in (reference[key]["verdict"], "error")
    assert sum(r["verdict"] == "error" for r in faulty.values()) <= 2  # retries absorb almost everything

    with FaultServer(0.5, seed=11) as server:
        _, run_dir, unretried = run_against(server, eval_file, tmp_path / "unretried", retries=0)
    errors = [r for r in unretried.values() if r["verdict"] == "error"]
    assert errors and all(r["error"] for r in errors)
    for key, record in unretried.items():
        assert record["verdict"] in (reference[key]["verdict"], "error")  # never a fault scored as forgetting
    table = recall_by_budget(load_records(run_dir))
    assert table["errors"].sum() == len(errors)  # the table shows the error count


def _strip(records):
    return sorted(
        ({k: v for k, v in r.items() if k not in ("latency_s", "cached")} for r in records),
        key=lambda r: (r["case"], r["fact"]),
    )


@pytest.mark.slow
@pytest.mark.parametrize("jobs, cases_done, extra_wait", [(1, 0, 0.0), (1, 2, 0.1), (1, 4, 0.05), (4, 0, 0.15)])
def test_sigkill_at_any_point_then_resume_gives_the_uninterrupted_records(
    eval_file, tmp_path, jobs, cases_done, extra_wait
):
    import signal
    import subprocess
    import sys
    import time

    def command(results, *extra):
        return [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            str(eval_file),
            "--model",
            "fake",
            "--base-url",
            server.url,
            "--results",
            str(results),
            "--quiet",
            "--no-cache",
            "--jobs",
            str(jobs),
            *extra,
        ]

    with FaultServer(0.0, latency_s=0.15) as server:
        subprocess.run(command(tmp_path / "whole"), check=True, capture_output=True)
        (whole,) = (tmp_path / "whole" / "runs").iterdir()
        process = subprocess.Popen(command(tmp_path / "killed"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs, deadline = tmp_path / "killed" / "runs", time.monotonic() + 60
        # Kill once `cases_done` cases are written, plus a moment: mid-case, mid-write, or mid-request.
        while (
            time.monotonic() < deadline
            and process.poll() is None
            and not (
                runs.exists()
                and any(runs.iterdir())
                and len(read_jsonl(next(runs.iterdir()) / "cases.jsonl")) >= cases_done
            )
        ):
            time.sleep(0.01)
        time.sleep(extra_wait)
        process.send_signal(signal.SIGKILL)
        process.wait()
        (killed,) = runs.iterdir()
        finished = len(read_jsonl(killed / "cases.jsonl"))
        subprocess.run(command(tmp_path / "killed", "--resume", str(killed)), check=True, capture_output=True)
    assert finished < 6  # it really was cut short
    assert _strip(read_jsonl(killed / "records.jsonl")) == _strip(read_jsonl(whole / "records.jsonl"))
    compactions = lambda d: sorted((c["case"], c["before_turn"]) for c in read_jsonl(d / "compactions.jsonl"))
    assert compactions(killed) == compactions(whole)
