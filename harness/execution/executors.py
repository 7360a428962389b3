"""Executors: running every case of an eval not yet finished, one at a time, `jobs` at once, or all
together in batch waves (`waves`), writing each finished case to the run folder in plan order;
`--resume` redoes unfinished cases."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from tqdm import tqdm

from ..errors import InputError, plural
from ..models.backends import Backend, default_jobs, open_model
from ..models.batch import BatchEndpoint
from ..models.cache import ResponseCache
from ..models.client import ModelClient
from ..records import Manifest, RunFolder, load_manifest
from .cases import Case, plan_cases
from .evals import Eval
from .provenance import manifest, now
from .runner import CaseRecords, CaseRunner
from .waves import Batched, Waves

WriteCase = Callable[[Case, CaseRecords], None]  # writes a finished case to the run folder
Item = TypeVar("Item")
Result = TypeVar("Result")


def open_for(ev: Eval, base_url: str | None = None, slots: int = 1) -> Backend:
    """The model as a run of `ev` opens it (`base_url`: a flag's, else the eval's): its identity and
    sampling are what the response cache is keyed by."""
    return open_model(
        ev.spec.model,
        base_url=base_url or ev.spec.base_url,
        temperature=ev.spec.temperature,
        slots=slots,
        sampling=ev.spec.sampling,
    )


def execute(
    ev: Eval,
    results_dir: Path,
    *,
    base_url: str | None = None,
    jobs: int | None = None,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    cache: bool = True,
    resume: Path | None = None,
    progress: bool = False,
    recorded: Mapping[str, dict[str, Any]] | None = None,
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> Path:
    """Open the eval's model (and the judge's), prove the endpoints, and run: what `harness run`
    does after reading the eval. The response cache lives under `results_dir`; `recorded` (a
    baseline's responses, `records.folder.baseline_responses`) answers the identical requests it
    lacks; `say` gets the judge's calibration, measured before it gives any verdict."""
    from .judge import calibrate

    jobs = jobs or default_jobs(ev.spec.model, base_url or ev.spec.base_url)
    client = open_for(ev, base_url, slots=jobs)
    client.check()  # a dead or wrong endpoint stops here, not after a run of errors
    batch = BatchEndpoint(client.client) if ev.spec.batch else None
    if batch:
        batch.check()
    judge = open_model(judge_model, base_url=judge_base_url) if judge_model else None
    if judge:
        judge.check()
    if cache:
        client.cache = ResponseCache.under(results_dir)
        if judge:
            judge.cache = client.cache
    calibration = None
    if judge:  # how far its verdicts can be trusted
        calibration = calibrate(judge)
        say(f"judge {judge.identity} on the labelled answers: " + "; ".join(calibration.lines()))
    return run_eval(
        ev,
        client,
        results_dir,
        resume=resume,
        judge=judge,
        progress=progress,
        jobs=jobs,
        batch=batch,
        judge_calibration=calibration.record() if calibration else None,
        recorded=recorded,
    )


def run_eval(
    ev: Eval,
    client: Backend,
    results_dir: Path,
    *,
    resume: Path | None = None,
    judge: Backend | None = None,
    progress: bool = True,
    jobs: int = 1,
    batch: BatchEndpoint | None = None,
    judge_calibration: dict[str, Any] | None = None,
    recorded: Mapping[str, dict[str, Any]] | None = None,
) -> Path:
    """Run every case not yet finished, `jobs` at a time, or (`batch`) all together in waves on
    the Message Batches API; return the run folder. Each case's own calls stay in order. With a
    response cache, the keys the run answers are written to its folder (`request_keys.txt`, what
    `harness baseline` keeps the responses of) and `recorded` answers what the cache lacks."""
    if resume and not resume.is_dir():
        raise InputError(resume, "not a run folder (no such folder)")
    folder = RunFolder(resume) if resume else RunFolder.new(Path(results_dir) / "runs", ev.spec.name)
    with folder.locked():
        about = _opened(
            folder, manifest(ev, client, judge), ev, resume is not None, batch is not None, judge_calibration
        )
        done = folder.finished_cases()
        if client.cache:
            client.cache = client.cache.for_run(folder.request_keys, recorded)
            if judge:
                judge.cache = client.cache
        if progress:
            print(f"run folder: {folder.path}", file=sys.stderr)
        todo = [case for case in plan_cases(ev) if case.id not in done]
        calls_before, calls_at_start = about.model_calls or 0, client.calls  # model_calls adds up over resumes
        recorded_before = about.answered_by_baseline or 0

        def count(about: Manifest) -> None:
            about.model_calls = calls_before + client.calls - calls_at_start
            if client.cache and client.cache.answered_by_recorded:
                about.answered_by_baseline = recorded_before + client.cache.answered_by_recorded

        def write(case: Case, results: CaseRecords) -> None:
            folder.write_case(case.id, *results)
            count(about)
            about.write(folder.path)

        if batch:
            _run_in_waves(ev, client, judge, todo, write, folder, about, batch, progress)
        else:
            _run_direct(ev, CaseRunner(ev, client, judge), todo, write, jobs, progress)
        about.finished = now()
        count(about)
        about.write(folder.path)
    return folder.path


def _opened(
    folder: RunFolder,
    about: Manifest,
    ev: Eval,
    resumed: bool,
    batch: bool,
    judge_calibration: dict[str, Any] | None,
) -> Manifest:
    """The run's manifest, written at once (a resumed run's, checked against this one), and its
    scenarios; a run with batches in flight is resumed only in batch mode."""
    about = _resumed(folder, about) if resumed else about
    about.started = about.started or now()
    about.judge_calibration = judge_calibration or about.judge_calibration
    about.write(folder.path)  # resumable at once
    folder.write_scenarios({s.id: [turn.text() for turn in s.turns] for s in ev.scenarios})
    if not batch and (in_flight := folder.in_flight()):  # sending them again would pay twice
        raise InputError(
            folder.path,
            f"this run has batches in flight ({', '.join(b for b, _ in in_flight)}); "
            "resume it with --batch to collect them",
        )
    return about


def _run_direct(ev: Eval, runner: CaseRunner, todo: list[Case], write: WriteCase, jobs: int, progress: bool) -> None:
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        # Written in plan order, so two runs of one eval give files that diff line by line.
        results = ordered_map(pool, runner.run, todo, 4 * jobs)
        for case, result in tqdm(
            zip(todo, results),
            total=len(todo),
            desc=ev.spec.name,
            unit="case",
            disable=not progress,
            dynamic_ncols=True,
        ):
            write(case, result)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # an interrupt must not wait for the queue


def ordered_map(
    pool: ThreadPoolExecutor, function: Callable[[Item], Result], items: list[Item], window: int
) -> Iterator[Result]:
    """`pool.map`, but with at most `window` items in flight, so a run of many cases holds only
    a window of them (and their results) at a time."""
    queue: deque[Future[Result]] = deque()
    for item in items:
        queue.append(pool.submit(function, item))
        if len(queue) >= window:
            yield queue.popleft().result()
    while queue:
        yield queue.popleft().result()


def in_waves(ev: Eval, client: ModelClient, waves: Waves, judge: ModelClient | None = None) -> CaseRunner:
    """A runner for a client whose requests go through `waves` (`Batched`, or a plan's
    rehearsal): a case's probes are asked together, so they share a wave."""
    return CaseRunner(ev, client, judge, gather=waves.gather)


def _run_in_waves(
    ev: Eval,
    client: Backend,
    judge: Backend | None,
    todo: list[Case],
    write: WriteCase,
    folder: RunFolder,
    about: Manifest,
    endpoint: BatchEndpoint,
    progress: bool,
) -> None:
    """Every case in a thread of its own, their requests in lock-step waves (`waves.Waves`);
    finished cases written in plan order. The wave's results are kept in the response cache, or,
    without one, in the run folder (a resumed run then sends none of them again)."""
    if client.cache is None:
        client.cache = ResponseCache(folder.path / "wave-responses.sqlite")
        if judge is not None:
            judge.cache = client.cache
    waves = Waves(
        endpoint,
        folder,
        client.cache,
        progress=progress,
        on_submitted=client.count_calls,
        poll_s=(ev.spec.batch_poll_seconds, max(60.0, ev.spec.batch_poll_seconds)),
    )
    runner = in_waves(ev, Batched(client, waves), waves, judge)
    before = (about.waves or 0, list(about.batches), list(about.wave_seconds))  # they add up over resumes

    def after_wave() -> None:
        report = waves.report
        about.waves, about.batches = before[0] + report.waves, before[1] + report.batches
        about.wave_seconds = before[2] + report.seconds
        about.write(folder.path)

    try:
        with waves.ctrl_c:
            waves.adopt()
            report = waves.run(todo, runner.run, write, after_wave)
    except KeyboardInterrupt:
        running = [batch_id for batch_id, _ in folder.in_flight()]
        raise KeyboardInterrupt(
            f"the batches in flight keep running at the provider ({', '.join(running) or 'none'}); "
            f"`harness run {ev.path} --batch --resume {folder.path}` collects their results "
            "without sending them again"
        ) from None
    after_wave()
    if progress:
        print(
            f"batch: {plural(report.waves, 'wave')}, {plural(len(report.batches), 'batch', 'batches')}, "
            f"{plural(report.submitted, 'request')} submitted "
            f"({report.retried} retried, {report.adopted} collected from batches already in flight)",
            file=sys.stderr,
        )


def _resumed(folder: RunFolder, about: Manifest) -> Manifest:
    """The manifest of the run being resumed (refused if the experiment changed since it started)."""
    if not (folder.path / "manifest.json").exists():
        # Killed between creating its folder and writing its manifest (a half-written `.tmp` at most):
        # nothing ran, so the run starts here.
        if {p.name for p in folder.path.iterdir() if p.suffix != ".tmp"} - {"run.lock"}:
            raise InputError(folder.path, "not a run folder (no manifest.json)")
        return about
    previous = load_manifest(folder.path)
    if not previous.same_experiment(about):
        raise InputError(
            folder.path,
            "the eval, prompts or model changed since this run started; start a new run instead of resuming",
        )
    return previous
