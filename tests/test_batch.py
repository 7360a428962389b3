"""Batch execution (Message Batches API, in waves) against a loopback fake batch server: the
records equal direct execution's, failures are retried then recorded as errors, a re-run costs
nothing, and a run killed mid-wave resumes without paying twice."""

import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from functools import partial

import anthropic
import pytest
from batch_server import BatchServer

from harness.execution.evals import load_eval
from harness.execution.executors import run_eval
from harness.models.backends import Backend
from harness.models.batch import BatchEndpoint, CtrlC, Status, wait_for
from harness.models.cache import ResponseCache
from harness.records import load_manifest, read_jsonl

FILES = ("records.jsonl", "compactions.jsonl", "retention.jsonl")


def _strip(rows):
    """Records as compared between runs: latency and cache hits are how, not what, was measured."""
    return [{k: v for k, v in r.items() if k not in ("latency_s", "cached")} for r in rows]


def _run(server, eval_file, out, *, batch=True, endpoint=None, cache=None):
    client = anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0)
    backend = Backend(client, "fake", "batch-server", {}, cache=cache)
    ev = load_eval(eval_file, batch=batch)
    ev.spec.batch_poll_seconds = 0.02
    run_dir = run_eval(ev, backend, out, progress=False, batch=(endpoint or BatchEndpoint(client)) if batch else None)
    return backend, run_dir


def _files(run_dir):
    return {name: _strip(read_jsonl(run_dir / name)) for name in FILES}


def test_batch_records_equal_direct_records_through_retried_failures(eval_file, tmp_path):
    with BatchServer() as server:
        _, direct = _run(server, eval_file, tmp_path / "direct", batch=False)
    failures = {"errored": 0.3, "expired": 0.2, "canceled": 0.1}  # of first submissions
    with BatchServer(failures=failures, batch_delay_s=0.05) as server:
        backend, batched = _run(server, eval_file, tmp_path / "batch")
    assert _files(batched) == _files(direct)
    assert len(read_jsonl(batched / "records.jsonl")) == 12
    assert {r["verdict"] for r in read_jsonl(batched / "records.jsonl")} == {"recalled", "forgot"}
    # Every failed result was submitted again, in a later batch, and then succeeded.
    failed = sum(server.outcomes[kind] for kind in failures)
    assert all(server.outcomes[kind] for kind in failures)
    assert server.outcomes["succeeded"] + failed == len(server.submitted) == backend.calls
    assert server.direct_messages == 0  # everything went through batches
    manifest = load_manifest(batched)
    assert manifest.batches == list(server.batches) and manifest.model_calls == backend.calls
    # The locker cases wait on the model at most four times in a row: the live turn, the summary
    # before the probe (budget 150), then the probes (they leave together); a retry on the
    # longest chain adds a wave.
    assert 4 <= manifest.waves <= 4 + failed
    # Its latency is the wait for a wave, and the report says so.
    from harness.reports.formats import text_report

    assert "mean wait for its batch wave (s)" in text_report(batched)
    assert "mean latency (s)" in text_report(direct)


def test_waves_are_the_longest_chain_of_calls_and_a_rerun_makes_none(eval_file, tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with BatchServer(batch_delay_s=0.05) as server:
        backend, first = _run(server, eval_file, tmp_path / "first", cache=cache)
        batches = len(server.batches)
        assert load_manifest(first).waves == 4 and batches == 4
        # Identical requests of one wave (the no-history probes of every budget...) leave once.
        assert len(server.submitted) == len(set(server.submitted)) == backend.calls
        again, second = _run(server, eval_file, tmp_path / "second", cache=cache)
    assert again.calls == 0 and len(server.batches) == batches and load_manifest(second).waves == 0
    assert load_manifest(second).model_calls == 0
    assert _files(second) == _files(first)


def test_a_request_that_keeps_failing_is_recorded_as_an_error_not_forgetting(eval_file, tmp_path):
    with BatchServer() as server:
        _, reference = _run(server, eval_file, tmp_path / "clean", batch=False)
    with BatchServer(failures={"errored": 0.3}, failures_always=True, batch_delay_s=0.02) as server:
        _, run_dir = _run(server, eval_file, tmp_path / "failing")
    # Each failing request was submitted three times (the limit), never more.
    assert max(server.submissions.values()) == 3
    records, clean = read_jsonl(run_dir / "records.jsonl"), read_jsonl(reference / "records.jsonl")
    errors = [r for r in records if r["verdict"] == "error"]
    assert errors and all("errored after 3 submission(s): api_error" in r["error"] for r in errors)
    assert len(records) == len(clean)
    for record, expected in zip(records, clean):
        assert record["verdict"] in (expected["verdict"], "error")  # never a failure scored as forgetting


def test_an_invalid_result_is_an_error_and_is_never_cached(eval_file, tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with BatchServer(failures={"invalid": 0.3}, failures_always=True, batch_delay_s=0.02) as server:
        _, run_dir = _run(server, eval_file, tmp_path / "invalid", cache=cache)
        invalid = server.outcomes["invalid"]
        # Each invalid result was paid for once and is an error; a re-run submits exactly those again.
        _, _ = _run(server, eval_file, tmp_path / "again", cache=cache)
    errors = [r for r in read_jsonl(run_dir / "records.jsonl") if r["verdict"] == "error"]
    assert invalid and errors and all("the batch result is not a Messages reply" in r["error"] for r in errors)
    assert max(server.submissions.values()) == 2 and server.outcomes["invalid"] == 2 * invalid


def test_a_wave_mixing_cached_and_uncached_requests_gives_the_direct_records(eval_file, tmp_path):
    with BatchServer() as server:
        _, reference = _run(server, eval_file, tmp_path / "reference", batch=False)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with BatchServer(batch_delay_s=0.02) as server:
        eval_file.write_text(eval_file.read_text() + "limit: 2\n")
        _run(server, eval_file, tmp_path / "first-two", cache=cache)  # fills the cache for two cases
        first = len(server.submitted)
        eval_file.write_text(eval_file.read_text().replace("limit: 2\n", ""))
        backend, run_dir = _run(server, eval_file, tmp_path / "all", cache=cache)
    assert 0 < backend.calls == len(server.submitted) - first  # only what the cache lacked was submitted
    assert not set(server.submitted[first:]) & set(server.submitted[:first])
    assert _files(run_dir) == _files(reference)


def test_waves_over_the_request_limit_are_split_and_a_rejected_batch_is_reported(eval_file, tmp_path, capsys):
    with BatchServer() as server:
        _, reference = _run(server, eval_file, tmp_path / "reference", batch=False)
    with BatchServer(max_batch_requests=2, batch_delay_s=0.02) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        _, split = _run(server, eval_file, tmp_path / "split", endpoint=BatchEndpoint(client, max_requests=2))
        assert len(server.batches) > load_manifest(split).waves  # some waves took several batches
        _, rejected = _run(server, eval_file, tmp_path / "rejected")
    assert _files(split) == _files(reference)
    # The provider refused the larger batches: their requests are errors that carry its reason.
    errors = [r for r in read_jsonl(rejected / "records.jsonl") if r["verdict"] == "error"]
    assert errors and all(
        "HTTP 400: invalid_request_error: requests: at most 2 requests per batch" in r["error"] for r in errors
    )
    assert "the provider rejected a batch of" in capsys.readouterr().err


def test_a_batch_is_split_by_size_without_reordering():
    endpoint = BatchEndpoint(None, max_requests=3, max_bytes=200)
    entries = [{"custom_id": f"r{i}", "params": {"text": "x" * (90 if i % 2 else 10)}} for i in range(7)]
    parts = endpoint.split(entries)
    assert [e for part in parts for e in part] == entries
    assert all(len(part) <= 3 and sum(len(json.dumps(e)) + 1 for e in part) <= 200 for part in parts)
    assert BatchEndpoint(None, max_bytes=10).split(entries[:2]) == [entries[:1], entries[1:2]]  # one oversized each


def _command(server, eval_file, results, *extra):
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
        "--batch",
        *extra,
    ]


def _fast_polls(eval_file):
    eval_file.write_text(eval_file.read_text() + "batch_poll_seconds: 0.05\n")


def _wait_for_batch_in_flight(runs, wave, process):
    """Until the run's journal holds `wave` batches, the last of them not collected."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        journal = next(runs.iterdir()) / "batches.jsonl" if runs.exists() and any(runs.iterdir()) else None
        rows = read_jsonl(journal) if journal and journal.exists() else []
        submitted = [r for r in rows if "custom_ids" in r]
        if len(submitted) >= wave and not any(
            r.get("collected") and r["batch"] == submitted[-1]["batch"] for r in rows
        ):
            return
        time.sleep(0.01)
    raise AssertionError("the run never had a batch in flight")


@pytest.mark.slow
@pytest.mark.parametrize("wave", [1, 3])
def test_sigkill_mid_wave_then_resume_collects_the_batch_in_flight_without_resubmitting(eval_file, tmp_path, wave):
    _fast_polls(eval_file)
    with BatchServer(batch_delay_s=1.0) as server:
        subprocess.run(_command(server, eval_file, tmp_path / "whole"), check=True, capture_output=True)
        (whole,) = (tmp_path / "whole" / "runs").iterdir()
        before = len(server.submitted)
        runs = tmp_path / "killed" / "runs"
        process = subprocess.Popen(
            _command(server, eval_file, tmp_path / "killed"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _wait_for_batch_in_flight(runs, wave, process)
        process.send_signal(signal.SIGKILL)
        process.wait()
        (killed,) = runs.iterdir()
        in_flight = read_jsonl(killed / "batches.jsonl")[-1]["batch"]
        direct = [
            c for c in _command(server, eval_file, tmp_path / "killed", "--resume", str(killed)) if c != "--batch"
        ]
        refused = subprocess.run(direct, capture_output=True, text=True)  # it would pay for the batch again
        assert refused.returncode == 1 and f"batches in flight ({in_flight}); resume it with --batch" in refused.stderr
        resumed = subprocess.run(
            _command(server, eval_file, tmp_path / "killed", "--resume", str(killed)), capture_output=True, text=True
        )
        assert resumed.returncode == 0, resumed.stderr
    # No request was paid for twice: the resumed run took the waves before from the response
    # cache and collected the batch in flight.
    assert Counter(server.submitted[before:]).most_common(1)[0][1] == 1
    assert len(server.submitted) - before == len(server.submitted[:before])
    assert in_flight in load_manifest(killed).batches
    assert _files(killed) == _files(whole)


@pytest.mark.slow
def test_ctrl_c_leaves_the_batches_running_and_says_how_to_resume(eval_file, tmp_path):
    _fast_polls(eval_file)
    with BatchServer(batch_delay_s=300.0) as server:
        runs = tmp_path / "runs"
        # As from a terminal: a job started in the background (`make test &`) inherits SIGINT ignored.
        process = subprocess.Popen(
            _command(server, eval_file, tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        _wait_for_batch_in_flight(runs, 1, process)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        # It did not wait for the batch (minutes from ending), nor cancel it: the batch runs on.
        assert process.returncode == 130 and server._batch("msgbatch_000001")["processing_status"] == "in_progress"
    (run_dir,) = runs.iterdir()
    assert "msgbatch_000001" in err and f"--batch --resume {run_dir}" in err and "Traceback" not in err


class _PressedInAFinaliser:
    """Ctrl-C arriving while a finaliser runs (as the SDK's response streams' `__del__` does):
    Python prints "Exception ignored" and drops the KeyboardInterrupt."""

    def __del__(self):
        signal.raise_signal(signal.SIGINT)


class _BatchThatNeverEnds:
    def __init__(self):
        self.polls = 0

    def status(self, batch_id):
        self.polls += 1
        if self.polls == 1:
            _PressedInAFinaliser()  # dropped at once: its __del__ runs here
        if self.polls > 5:
            raise AssertionError("Ctrl-C was lost: still polling")
        return Status(ended=False, counts={"processing": 1})


def _poll(ctrl_c=None):
    wait_for(_BatchThatNeverEnds(), ["msgbatch_1"], 1, "wave 1", (0.0, 0.0), None, False, ctrl_c)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped interrupt
def test_ctrl_c_dropped_inside_a_finaliser_still_stops_the_wait():
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C interrupts, even run in the background
    try:
        with pytest.raises(AssertionError, match="Ctrl-C was lost"):  # what Python alone does
            _poll()
        with CtrlC() as ctrl_c, pytest.raises(KeyboardInterrupt):  # at the next poll, the second
            _poll(ctrl_c)
        assert ctrl_c.pressed.is_set() and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with CtrlC() as ignoring:  # where Ctrl-C is ignored, it stays ignored
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert not ignoring.pressed.is_set()
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.slow
def test_batch_on_a_server_without_a_batch_endpoint_fails_at_its_first_refusal(eval_file, tmp_path):
    with BatchServer(batches=False) as server:
        result = subprocess.run(_command(server, eval_file, tmp_path), capture_output=True, text=True)
    # At once: the preflight message and the refused batch, no retry and no wait (a clock would
    # measure the machine's load, not this).
    assert result.returncode == 1 and server.http_requests == 2 and server.direct_messages == 1
    assert result.stderr.count("\n") == 1 and "--batch" in result.stderr and "HTTP 404" in result.stderr
    assert "has no Message Batches API" in result.stderr and not (tmp_path / "runs").exists()


def test_the_plan_predicts_requests_waves_and_tokens_of_a_run_on_a_model_that_answers_at_length(eval_file, tmp_path):
    from harness.execution.rehearsal import estimate, longest_reply

    def at_length(params):  # the model the plan assumes: every reply as long as max_tokens allows
        return {**longest_reply(params), "id": "msg_1", "model": params["model"]}

    with BatchServer(respond=at_length, batch_delay_s=0.02) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        backend = Backend(client, "fake", "batch-server", {})
        ev = load_eval(eval_file)
        plan = estimate(ev, backend.identity, backend.sampling, ResponseCache(tmp_path / "plan.sqlite"), backend)
        cache = ResponseCache(tmp_path / "cache.sqlite")
        _, run_dir = _run(server, eval_file, tmp_path / "run", cache=cache)
        sent = [entry["params"] for batch in server.batches.values() for entry in batch["requests"]]
        after = estimate(ev, backend.identity, backend.sampling, cache, backend)
    assert plan.cases == 6 and plan.batch.requests == len(sent) and plan.waves == load_manifest(run_dir).waves
    assert plan.batch.output_tokens == sum(p["max_tokens"] for p in sent)
    assert plan.batch.input_tokens == sum(len(json.dumps(p["messages"])) // 4 for p in sent)  # the server's count
    assert plan.counted_by == "the endpoint's count_tokens"
    assert (after.direct.requests, after.batch.requests, after.waves) == (0, 0, 0)  # all cached now
    assert after.cached == plan.direct.requests + plan.cached


@pytest.mark.slow
def test_the_plan_command_prices_direct_and_batch_execution(eval_file, tmp_path):
    from harness.execution.rehearsal import Estimate, Work, costs
    from harness.inputs.evalfile import Prices

    million = Estimate(1, 0, Work(10, 2_000_000, 1_000_000), Work(8, 1_000_000, 500_000), 3, 3, "characters")
    assert costs(million, Prices(input=3, output=15)) == {"direct": 21.0, "batch": 5.25}  # 6 + 15; (3 + 7.5) / 2
    assert costs(million, Prices(input=3, output=15, batch_input=2, batch_output=10)) == {"direct": 21.0, "batch": 7.0}
    eval_file.write_text(eval_file.read_text() + "prices: {input: 3, output: 15}\n")
    with BatchServer() as server:

        def plan(*flags):
            return subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "harness.cli",
                    "plan",
                    str(eval_file),
                    "--model",
                    "fake",
                    "--base-url",
                    server.url,
                    "--results",
                    str(tmp_path),
                    *flags,
                ],
                capture_output=True,
                text=True,
            )

        priced, overridden, chars = plan(), plan("--input-price", "1", "--limit", "2"), plan("--chars")
        bad = plan("--output-price", "-1")
    assert priced.returncode == 0 and server.direct_messages == 0 and not server.batches  # nothing was sent
    lines = priced.stdout.splitlines()
    assert "6 cases" in lines[0] and "count_tokens" in lines[1] and "cost (at most)" in lines[2]
    direct, batch = (line.split() for line in lines[3:5])
    assert direct[0] == "direct" and batch[0] == "batch" and float(batch[-1]) < float(direct[-1])
    assert "'input': 3.0, 'output': 15.0" in priced.stdout
    assert "2 cases" in overridden.stdout and "'input': 1.0, 'output': 15.0" in overridden.stdout
    assert "characters (4 per token)" in chars.stdout
    assert bad.returncode == 2 and "a price per million tokens is a number of 0 or more" in bad.stderr


def test_a_negative_price_in_an_eval_file_names_its_line(eval_file):
    from harness.errors import InputError

    eval_file.write_text(eval_file.read_text() + "prices:\n  input: -3\n  output: 15\n")
    with pytest.raises(InputError) as error:
        load_eval(eval_file)
    assert "unit.yaml:8: prices.input" in str(error.value)
    # A price given on the command line beside it does not move the blame off the file's line.
    with pytest.raises(InputError) as error:
        load_eval(eval_file, prices={"output": 2.0})
    assert "unit.yaml:8: prices.input" in str(error.value)


@pytest.mark.slow
def test_the_eval_setting_runs_in_batch_mode_without_the_flag(eval_file, tmp_path):
    eval_file.write_text(eval_file.read_text() + "batch: true\nbatch_poll_seconds: 0.02\n")
    with BatchServer(batch_delay_s=0.02) as server:
        command = [c for c in _command(server, eval_file, tmp_path) if c != "--batch"]
        result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert load_manifest(run_dir).waves == 4 and server.direct_messages == 1  # the preflight check only


def test_a_journaled_batch_the_provider_no_longer_has_is_submitted_again(tmp_path, capsys):
    from harness.execution.waves import Waves
    from harness.records import RunFolder

    folder = RunFolder(tmp_path)
    folder.submitted("msgbatch_gone", ["a", "b"])
    with BatchServer() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        waves = Waves(BatchEndpoint(client), folder, poll_s=(0.01, 0.01), progress=False)
        waves.adopt()
    assert waves.report.adopted == 0 and folder.in_flight() == []  # collected as far as it goes: never again
    assert "batch msgbatch_gone cannot be collected (HTTP 404: not_found_error" in capsys.readouterr().err


def test_the_plan_knows_a_repeated_sample_is_cached_under_its_own_seed(eval_file, tmp_path):
    from harness.execution.rehearsal import estimate

    eval_file.write_text(eval_file.read_text() + "temperature: 0.7\nrepeats: 2\n")
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with BatchServer(batch_delay_s=0.02) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
        backend = Backend(client, "fake", "batch-server", {"temperature": 0.7, "seed": 0}, cache=cache)
        ev = load_eval(eval_file, batch=True)
        ev.spec.batch_poll_seconds = 0.02
        run_eval(ev, backend, tmp_path, progress=False, batch=BatchEndpoint(client))
        seeds = {entry["params"]["seed"] for batch in server.batches.values() for entry in batch["requests"]}
        plan = estimate(ev, backend.identity, backend.sampling, cache, backend)
    assert seeds == {0, 1} and plan.cases == 12  # two samples of each case, each with its own seed
    assert plan.direct.requests == plan.batch.requests == 0 and plan.cached > 0


GREEDY = '''
from harness.messages import exchange_starts, render_message

CALLS = []


def summarise(messages, context):
    """Folds all but the last exchange, swallowing every exception on the way, as careless user
    code does (a control-flow exception from the executor would be lost here)."""
    if context.size(messages) <= context.limit or len(exchange_starts(messages)) < 2:
        return messages
    CALLS.append(len(messages))
    split = exchange_starts(messages)[-1]
    try:
        reply = context.client.create(
            max_tokens=80, messages=[{"role": "user", "content": "\\n".join(map(render_message, messages[:split]))}]
        )
        summary = reply["content"][0]["text"]
    except BaseException:
        summary = "(no summary)"
    return [{"role": "user", "content": summary}, {"role": "assistant", "content": "OK."}] + messages[split:]
'''


def test_a_users_strategy_runs_once_per_compaction_and_never_sees_the_executor(eval_file, tmp_path, monkeypatch):
    (tmp_path / "greedy.py").write_text(GREEDY)
    monkeypatch.syspath_prepend(str(tmp_path))
    import greedy

    eval_file.write_text(eval_file.read_text().replace("strategies: [summary,", "strategies: [greedy:summarise,"))
    with BatchServer() as server:
        _, direct = _run(server, eval_file, tmp_path / "direct", batch=False)
    direct_calls = list(greedy.CALLS)
    greedy.CALLS.clear()
    with BatchServer(batch_delay_s=0.02) as server:
        _, batched = _run(server, eval_file, tmp_path / "batch")
    # Called as often as in a direct run (each compaction once, never replayed), and what it was
    # given, and so what it summarised, is the same.
    compactions = [c for c in read_jsonl(batched / "compactions.jsonl") if c["strategy"] == "greedy:summarise"]
    assert sorted(greedy.CALLS) == sorted(direct_calls) and len(greedy.CALLS) == len(compactions) > 0
    assert all("(no summary)" not in c["summary"] for c in compactions)
    assert _files(batched) == _files(direct)


def test_cases_beyond_those_in_flight_start_as_others_finish_each_played_once():
    from harness.execution.rehearsal import StandIn, _Unrecorded
    from harness.execution.waves import Waves

    waves = Waves(StandIn(), _Unrecorded(), in_flight=2, poll_s=(0.0, 0.0), progress=False)
    played, in_flight, most, lock = Counter(), 0, 0, threading.Lock()

    def play(case):
        nonlocal in_flight, most
        with lock:
            played[case] += 1
            in_flight += 1
            most = max(most, in_flight)
        try:
            return _two_waves(case)
        finally:
            with lock:
                in_flight -= 1

    def _two_waves(case):
        asked = {"max_tokens": 2, "messages": [{"role": "user", "content": case}]}
        first = waves.ask(f"{case}-1", asked)
        # The probes of a case leave in one wave, each from a thread of its own.
        probes = waves.gather([partial(waves.ask, f"{case}-probe-{n}", {**asked, "max_tokens": n}) for n in (3, 4)])
        return case, first["stop_reason"], [p["content"][0]["text"] for p in probes]

    written = []
    report = waves.run(list("abcde"), play, lambda case, result: written.append(result))
    assert [case for case, *_ in written] == list("abcde") and set(played.values()) == {1} and most == 2
    assert all(stop == "max_tokens" and [len(t) for t in texts] == [12, 16] for _, stop, texts in written)
    # Two waves a case (its request, then its probes together), two cases at a time: 3 cohorts.
    assert report.waves == 6 and report.submitted == 15
