"""Batch execution on the Message Batches API, in lock-step waves.

Every case of a run plays in its own thread. A thread runs until it needs the model; when every
thread is waiting, their requests leave together as one wave: one batch (several when a wave is
over the provider's request or size limit), polled until it ends, its results matched back to
their threads by `custom_id` (the request's cache key: requests identical in one wave are sent
once). Scripted turns cost no call, so a case only waits for its live turns, summaries and probes.

`Waves` coordinates the threads; `BatchEndpoint` speaks the provider's batch API through the SDK.
Every submitted batch id goes to a journal (the run folder's `batches.jsonl`) before anything
waits on it, so a resumed run re-attaches to the batches still in flight instead of paying twice.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from tqdm import tqdm

from .client import ModelError, SetupError, api_problem

MAX_REQUESTS = 100_000  # per batch, as the Message Batches API allows
MAX_BYTES = 256 * 1024 * 1024
RETRIED = ("errored", "expired", "canceled")  # outcomes sent again in the next wave
MAX_ATTEMPTS = 3  # submissions of one request before it is recorded as an error
POLL_S = (1.0, 60.0)  # first and longest wait between two looks at a batch in flight


class BatchRejected(Exception):
    """The provider refused a whole batch; every request in it is recorded with the reason."""


@dataclass(frozen=True)
class Outcome:
    """One request's result in a batch: `succeeded` with its message, or why not."""

    kind: str  # succeeded, errored, expired, canceled
    message: dict[str, Any] | None = None
    reason: str = ""


@dataclass(frozen=True)
class Status:
    ended: bool
    counts: dict[str, int]  # processing, succeeded, errored, canceled, expired


class Journal(Protocol):
    """Where submitted batches are written down, so a resumed run re-attaches to them."""

    def submitted(self, batch_id: str, custom_ids: list[str]) -> None: ...

    def collected(self, batch_id: str) -> None: ...

    def in_flight(self) -> list[tuple[str, list[str]]]: ...


class BatchEndpoint:
    """The Message Batches API of an SDK client (`anthropic.Anthropic`), Anthropic's or any
    server's that serves `/v1/messages/batches`."""

    def __init__(self, client: Any, max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES):
        self.client, self.max_requests, self.max_bytes = client, max_requests, max_bytes

    def check(self, timeout: float = 8.0) -> None:
        """Prove, with one cheap listing request, that the endpoint serves the Message Batches API;
        otherwise stop in seconds, before the run (it would record only errors)."""
        import anthropic

        try:
            self.client.with_options(max_retries=0, timeout=timeout).messages.batches.list(limit=1)
            return
        except (anthropic.APIError, ValueError) as exc:  # ValueError: a body that is not JSON
            problem = api_problem(exc)[:200]
        raise SetupError(f"--batch: {self.client.base_url} has no Message Batches API (/v1/messages/batches): "
                         f"{problem}; run without --batch")

    def split(self, entries: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """The entries cut into batches within the request and size limits, in order."""
        batches: list[list[dict[str, Any]]] = [[]]
        size = 0
        for entry in entries:
            entry_size = len(json.dumps(entry, ensure_ascii=False).encode()) + 1
            if batches[-1] and (len(batches[-1]) >= self.max_requests or size + entry_size > self.max_bytes):
                batches.append([])
                size = 0
            batches[-1].append(entry)
            size += entry_size
        return [b for b in batches if b]

    def submit(self, entries: list[dict[str, Any]]) -> str:
        import anthropic

        try:
            return self.client.messages.batches.create(requests=entries).id
        except anthropic.APIError as exc:
            verb = "the provider rejected" if isinstance(exc, anthropic.APIStatusError) else "could not submit"
            raise BatchRejected(f"{verb} a batch of {len(entries)} requests: {api_problem(exc)[:300]}") from None

    def status(self, batch_id: str) -> Status:
        batch = self.client.messages.batches.retrieve(batch_id)
        return Status(batch.processing_status == "ended", batch.request_counts.model_dump())

    def results(self, batch_id: str) -> dict[str, Outcome]:
        outcomes = {}
        for line in self.client.messages.batches.results(batch_id):
            result = line.result
            if result.type == "succeeded":
                # As it came: whatever is not a Messages reply is found and recorded by the caller.
                message = result.message.model_dump(mode="json", exclude_none=True, warnings=False)
                outcomes[line.custom_id] = Outcome("succeeded", message)
            elif result.type == "errored":
                error = result.error.error if hasattr(result.error, "error") else result.error
                outcomes[line.custom_id] = Outcome("errored", reason=f"{getattr(error, 'type', 'error')}: "
                                                                     f"{getattr(error, 'message', error)}")
            else:
                outcomes[line.custom_id] = Outcome(result.type, reason=f"the request was {result.type}")
        return outcomes


@dataclass
class _Request:
    params: dict[str, Any]
    ready: threading.Condition  # its waiters sleep on their own condition: no herd wakes per wave
    waiters: int = 0
    attempts: int = 0
    message: dict[str, Any] | None = None
    error: str | None = None
    done: bool = False


@dataclass
class WaveReport:
    """What a run's waves did, for the manifest and the closing line."""

    waves: int = 0
    batches: list[str] = field(default_factory=list)
    submitted: int = 0  # request submissions, retries included
    retried: int = 0
    adopted: int = 0  # results collected from batches a previous process submitted


class Waves:
    """Runs participant threads (`spawn`, `map`) that send requests (`send`); when all of them
    wait, the requests go out as one wave. `run` drives the waves in the calling thread."""

    def __init__(self, endpoint: BatchEndpoint, journal: Journal, *, max_attempts: int = MAX_ATTEMPTS,
                 poll_s: tuple[float, float] = POLL_S, progress: bool = True):
        self.endpoint, self.journal, self.max_attempts = endpoint, journal, max_attempts
        self.poll_s, self.progress = poll_s, progress
        self.report = WaveReport()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # the coordinator's: every participant waits
        self._running = 0  # participants neither waiting on a wave nor finished
        self._live = 0  # participants not finished
        self._requests: dict[str, _Request] = {}
        self._adopted: dict[str, Outcome] = {}
        self._durations: list[float] = []
        self.after_wave: Callable[[], None] = lambda: None

    # --- the participants' side -----------------------------------------------------------

    def spawn(self, function: Callable[..., Any], *args: Any) -> Future:
        """Run `function(*args)` in a new participant thread; its result arrives in the future."""
        future: Future = Future()
        with self._lock:
            self._running += 1
            self._live += 1

        def body() -> None:
            try:
                future.set_result(function(*args))
            except BaseException as exc:  # handed to whoever reads the future
                future.set_exception(exc)
            finally:
                with self._lock:
                    self._live -= 1
                    self._stop_running()
        threading.Thread(target=body, daemon=True).start()  # daemon: Ctrl-C must not wait for a wave
        return future

    def map(self, function: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """From inside a participant: `function` over `items`, each in its own participant, so
        their requests share waves (the probes of one case go out together)."""
        items = list(items)
        state = {"left": len(items), "waiting": False}
        finished = threading.Condition(self._lock)

        def child(item: Any) -> Any:
            try:
                return function(item)
            finally:
                with self._lock:
                    state["left"] -= 1
                    if state["left"] == 0 and state["waiting"]:
                        self._running += 1  # the caller runs again before this child stops counting
                        finished.notify()
        futures = [self.spawn(child, item) for item in items]
        with self._lock:
            if state["left"]:
                state["waiting"] = True
                self._stop_running()  # this thread waits on its children, not on a wave
                while state["left"]:
                    finished.wait()
        return [f.result() for f in futures]

    def _stop_running(self) -> None:
        """(Holding the lock.) One participant fewer is running; the last one wakes the coordinator."""
        self._running -= 1
        if self._running == 0:
            self._idle.notify()

    def send(self, custom_id: str, params: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """Wait for the wave that carries this request: its message, and how many submissions
        it took that this caller accounts for (0 when an identical request was already waiting)."""
        with self._lock:
            request = self._requests.get(custom_id)
            first = request is None
            if first:
                request = self._requests[custom_id] = _Request(params, threading.Condition(self._lock))
            # A request answered in the last wave is answered at once (until the next wave, when
            # the response cache has it), so identical requests never depend on thread timing.
            if not request.done:
                request.waiters += 1
                self._stop_running()
                while not request.done:
                    request.ready.wait()
                # `_settle` counted this thread as running again when it finished the request
        if request.error is not None:
            raise ModelError(request.error)
        return request.message, request.attempts if first else 0

    # --- the coordinator's side -----------------------------------------------------------

    def adopt(self) -> None:
        """Collect the batches a previous process submitted and did not collect (waiting for
        those still in flight); their results answer the same requests without a new batch."""
        import anthropic

        for batch_id, custom_ids in self.journal.in_flight():
            try:
                wait_for(self.endpoint, [batch_id], len(custom_ids), f"re-attached {batch_id}", self.poll_s, None,
                         self.progress)
                self._adopted.update(self.endpoint.results(batch_id))
                self.report.batches.append(batch_id)
            except anthropic.APIError as exc:  # deleted, or its results expired (29 days)
                print(f"warning: the results of batch {batch_id} cannot be collected ({api_problem(exc)}); its "
                      f"{len(custom_ids)} requests are submitted again", file=sys.stderr)
            self.journal.collected(batch_id)
        self.report.adopted = len(self._adopted)

    def run(self) -> WaveReport:
        """Send waves until every participant has finished."""
        while True:
            with self._lock:
                while self._running > 0:
                    self._idle.wait()
                # Everyone waits: whoever took an answer of the last wave has cached it by now.
                self._requests = {cid: r for cid, r in self._requests.items() if not r.done}
                wave = dict(self._requests)
                if not wave and self._live == 0:
                    return self.report
            if wave:
                self._send_wave(wave)
            self.after_wave()

    def _send_wave(self, wave: dict[str, _Request]) -> None:
        self.report.waves += 1
        started = time.monotonic()
        outcomes = {cid: self._adopted.pop(cid) for cid in list(wave) if cid in self._adopted}
        adopted = len(outcomes)
        for cid in outcomes:
            wave[cid].attempts += 1  # submitted by the process that was interrupted
        fresh = [{"custom_id": cid, "params": r.params} for cid, r in wave.items() if cid not in outcomes]
        submitted = self._submit(fresh, wave, outcomes)
        if submitted:
            typical = sum(self._durations) / len(self._durations) if self._durations else None
            wait_for(self.endpoint, submitted, len(fresh), f"wave {self.report.waves}", self.poll_s, typical,
                     self.progress)
            for batch_id in submitted:
                outcomes.update(self.endpoint.results(batch_id))
                self.journal.collected(batch_id)
            self._durations.append(time.monotonic() - started)
        retried_before = self.report.retried
        with self._lock:
            for cid, request in wave.items():
                self._settle(request, outcomes.get(cid, Outcome("missing", reason="no result in its batch")))
        if self.progress:
            again = self.report.retried - retried_before
            print(f"wave {self.report.waves}: {len(wave)} requests in {len(submitted)} batch(es) {' '.join(submitted)}, "
                  f"{time.monotonic() - started:.0f}s" + (f"; {adopted} collected from batches in flight" if adopted else "")
                  + (f"; {again} to submit again" if again else ""), file=sys.stderr)

    def _submit(self, entries: list[dict[str, Any]], wave: dict[str, _Request],
                outcomes: dict[str, Outcome]) -> list[str]:
        """Submit the entries in batches within the limits, journaling each id as soon as the
        provider accepts it; the requests of a rejected batch get the provider's reason."""
        submitted = []
        for part in self.endpoint.split(entries):
            ids = [entry["custom_id"] for entry in part]
            for cid in ids:
                wave[cid].attempts += 1
            try:
                batch_id = self.endpoint.submit(part)
            except BatchRejected as exc:
                outcomes.update({cid: Outcome("rejected", reason=str(exc)) for cid in ids})
                print(f"wave {self.report.waves}: {exc}", file=sys.stderr)
                continue
            self.journal.submitted(batch_id, ids)
            submitted.append(batch_id)
            self.report.batches.append(batch_id)
            self.report.submitted += len(ids)
        return submitted

    def _settle(self, request: _Request, outcome: Outcome) -> None:
        """Finish a request with its outcome, or leave it for the next wave (a retry)."""
        if outcome.kind == "succeeded":
            request.message, request.done = outcome.message, True
        elif outcome.kind in RETRIED and request.attempts < self.max_attempts and not _permanent(outcome):
            self.report.retried += 1
            return
        else:
            request.error = (f"batch result {outcome.kind} after {request.attempts} submission(s): "
                             f"{outcome.reason}")[:500]
            request.done = True
        self._running += request.waiters  # they run again as soon as they wake
        request.ready.notify_all()


def wait_for(endpoint: BatchEndpoint, batch_ids: list[str], requests: int, label: str,
             poll_s: tuple[float, float], typical: float | None, progress: bool) -> None:
    """Poll the batches until all have ended, with a progress bar: requests succeeded, failed and
    waiting, the batch ids, and the time left as earlier waves (`typical` seconds) took."""
    delay, started = poll_s[0], time.monotonic()
    with tqdm(total=requests, desc=label, unit="req", disable=not progress, dynamic_ncols=True,
              file=sys.stderr, leave=False) as bar:
        while True:
            statuses = [endpoint.status(b) for b in batch_ids]
            counts = {k: sum(s.counts.get(k, 0) for s in statuses)
                      for k in ("succeeded", "errored", "expired", "canceled", "processing")}
            bar.n = requests - counts["processing"]
            failed = counts["errored"] + counts["expired"] + counts["canceled"]
            left = f"{max(0.0, typical - (time.monotonic() - started)):.0f}s" if typical else "?"
            bar.set_postfix_str(f"ok {counts['succeeded']} failed {failed} waiting {counts['processing']}"
                                f" · est. left {left} (as earlier waves) · {', '.join(batch_ids)}")
            if all(s.ended for s in statuses):
                return
            time.sleep(delay)
            delay = min(delay * 1.5, poll_s[1])


def _permanent(outcome: Outcome) -> bool:
    """An invalid request fails the same way every time: sending it again only costs time."""
    return outcome.reason.startswith("invalid_request_error")
