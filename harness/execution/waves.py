"""Batch execution on the Message Batches API, in lock-step waves.

Each case is played once, from its start to its end, in a thread of its own (at most `in_flight`
cases at a time; the next case starts when one finishes). Its model client (`Batched`) answers from
the response cache what it can; a request the cache lacks is filed for the next wave, and the
case's thread waits for it (`Waves.ask`). When every case in flight waits, the filed requests leave
together as one wave: one batch, or several when a wave is over the provider's request or size
limit, polled until they end. Each result wakes the cases that asked for it (identical requests of
one wave are sent once: a request's `custom_id` is its cache key). So a case is never replayed,
the work grows with the number of calls, and no exception passes through a user's strategy; the
waves are as many as the longest chain of calls in the eval while its cases fit in flight (more
cases go in cohorts, each as many waves). Results of cases that finish before an earlier one
(written in plan order) wait on disk.

Every submitted batch id goes to a journal (the run folder's `batches.jsonl`) before anything
waits on it, and every result goes to the store (the response cache) as it is collected, so a
resumed run collects the batches still in flight instead of paying twice.
"""

from __future__ import annotations

import pickle
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ..errors import plural
from ..models.backends import Backend
from ..models.batch import POLL_S, BatchEndpoint, BatchRejected, CtrlC, Outcome, wait_for
from ..models.client import ModelError, Reply, api_problem, reply_problem

RETRIED = ("errored", "expired", "canceled")  # outcomes sent again in the next wave
MAX_ATTEMPTS = 3  # submissions of one request before it is recorded as an error
IN_FLIGHT = 1000  # cases played at once: each waits in its own thread, holding its history

Item = TypeVar("Item")
Result = TypeVar("Result")


class Journal(Protocol):
    """Where submitted batches are written down, so a resumed run re-attaches to them."""

    def submitted(self, batch_id: str, custom_ids: list[str]) -> None: ...

    def collected(self, batch_id: str) -> None: ...

    def in_flight(self) -> list[tuple[str, list[str]]]: ...


class Store(Protocol):
    """Where each result is kept as soon as it is collected, so a run killed before its case
    used it resumes from it (the response cache, which the cases' client reads first)."""

    def put(self, key: str, response: dict[str, Any]) -> None: ...


@dataclass
class WaveReport:
    """What a run's waves did, for the manifest and the closing line."""

    waves: int = 0
    batches: list[str] = field(default_factory=list)
    submitted: int = 0  # request submissions, retries included
    retried: int = 0
    adopted: int = 0  # results collected from batches a previous process submitted
    seconds: list[float] = field(default_factory=list)  # each wave's wait, submission to results


@dataclass
class Filed:
    """A request filed for the next wave: what is sent, and the cases' threads waiting for it."""

    params: dict[str, Any]
    answer: Future[dict[str, Any]] = field(default_factory=Future)
    waiting: int = 0


class Spill:
    """Results kept on disk until their turn: the cases that finish before an earlier one."""

    def __init__(self) -> None:
        self._file = tempfile.NamedTemporaryFile(prefix="harness-finished-", suffix=".sqlite")
        self._db = sqlite3.connect(self._file.name)
        self._db.execute("CREATE TABLE finished (position INTEGER PRIMARY KEY, result BLOB NOT NULL)")

    def put(self, position: int, result: Any) -> None:
        self._db.execute("INSERT INTO finished VALUES (?, ?)", (position, pickle.dumps(result)))

    def __contains__(self, position: int) -> bool:
        return self._db.execute("SELECT 1 FROM finished WHERE position = ?", (position,)).fetchone() is not None

    def pop(self, position: int) -> Any:
        (blob,) = self._db.execute("SELECT result FROM finished WHERE position = ?", (position,)).fetchone()
        self._db.execute("DELETE FROM finished WHERE position = ?", (position,))
        return pickle.loads(blob)


class Waves:
    """Plays cases in threads and sends their requests in waves (see the module docstring). A case's
    client asks `ask`; a case sends its probes through `gather`; `run` drives everything."""

    def __init__(
        self,
        endpoint: BatchEndpoint,
        journal: Journal,
        store: Store | None = None,
        *,
        in_flight: int = IN_FLIGHT,
        max_attempts: int = MAX_ATTEMPTS,
        poll_s: tuple[float, float] = POLL_S,
        progress: bool = True,
        on_submitted: Callable[[int], None] = lambda n: None,
    ):
        self.endpoint, self.journal, self.store, self.in_flight = endpoint, journal, store, in_flight
        self.max_attempts, self.poll_s, self.progress, self.on_submitted = max_attempts, poll_s, progress, on_submitted
        self.report = WaveReport()
        self.ctrl_c = CtrlC()  # installed by whoever drives `adopt` and `run` (`with waves.ctrl_c:`)
        # The cases' threads and the coordinator share what follows, under this condition.
        self._changed = threading.Condition()
        self._filed: dict[str, Filed] = {}  # by custom_id, in the order first filed
        self._playing = 0  # threads playing a case and not waiting for a wave
        self._finished: list[tuple[int, Any]] = []  # (position, result), not yet handed on
        self._crashed: BaseException | None = None  # a bug in a case: the run stops with it
        self._stopped = False
        # Only requests that failed keep state between waves (few): their submissions so far, and
        # the error of those that will not be sent again.
        self.attempts: dict[str, int] = {}
        self.failed: dict[str, str] = {}

    # --- the cases' side -------------------------------------------------------------------

    def ask(self, custom_id: str, params: dict[str, Any]) -> dict[str, Any]:
        """The message that answers a request the store lacks, from the next wave (the case's
        thread waits for it); its error when it failed for good."""
        with self._changed:
            if custom_id in self.failed:
                raise ModelError(self.failed[custom_id])
            filed = self._filed.setdefault(custom_id, Filed(params))
            filed.waiting += 1
            self._playing -= 1
            self._changed.notify_all()
        return filed.answer.result()

    def gather(self, jobs: list[Callable[[], Result]]) -> list[Result]:
        """Run `jobs` (the probes of one case), each in a thread of its own, so the requests they
        file share a wave; the case's thread waits for them all."""
        if len(jobs) < 2:
            return [job() for job in jobs]
        results: list[Any] = [None] * len(jobs)
        errors: list[BaseException] = []
        left = len(jobs)
        done = threading.Event()

        def one(index: int, job: Callable[[], Result]) -> None:
            nonlocal left
            try:
                results[index] = job()
            except BaseException as exc:  # handed to the case's thread
                errors.append(exc)
            with self._changed:
                left -= 1
                if left:
                    self._playing -= 1
                    self._changed.notify_all()
                else:  # the last one hands its place back to the case's thread
                    done.set()

        with self._changed:
            self._playing += len(jobs) - 1  # the probes play; the case's thread waits for them
        for index, job in enumerate(jobs):
            threading.Thread(target=one, args=(index, job), daemon=True).start()
        done.wait()
        if errors:
            raise errors[0]
        return results

    # --- the coordinator's side ------------------------------------------------------------

    def adopt(self) -> None:
        """Collect the batches a previous process submitted and did not collect (waiting for
        those still in flight); their results answer the same requests from the store, without a
        new batch."""
        import anthropic

        for batch_id, custom_ids in self.journal.in_flight():
            try:
                wait_for(
                    self.endpoint,
                    [batch_id],
                    len(custom_ids),
                    f"re-attached {batch_id}",
                    self.poll_s,
                    None,
                    self.progress,
                    self.ctrl_c,
                )
                for custom_id, outcome in self.endpoint.results(batch_id):
                    self.report.adopted += outcome.kind == "succeeded"
                    self._settle(custom_id, outcome)
                self.report.batches.append(batch_id)
            except anthropic.APIError as exc:  # deleted, or its results expired (29 days)
                print(
                    f"warning: the results of batch {batch_id} cannot be collected ({api_problem(exc)}); its "
                    f"{plural(len(custom_ids), 'request')} submitted again",
                    file=sys.stderr,
                )
            self.journal.collected(batch_id)

    def run(
        self,
        cases: list[Item],
        play: Callable[[Item], Result],
        finished: Callable[[Item, Result], None],
        after_wave: Callable[[], None] = lambda: None,
    ) -> WaveReport:
        """Play every case; `finished` gets each case's result in the order of `cases`;
        `after_wave` runs after each wave."""
        queue = iter(range(len(cases)))
        threads = min(self.in_flight, len(cases))
        self._playing = threads
        for _ in range(threads):
            threading.Thread(target=self._play_cases, args=(queue, cases, play), daemon=True).start()
        early = Spill()  # results of cases that finished before an earlier one, until its turn
        written = 0  # cases[:written] have been handed to `finished`
        try:
            while written < len(cases):
                with self._changed:
                    self._changed.wait_for(lambda: self._finished or not self._playing or self._crashed, 0.5)
                    if self._crashed:
                        raise self._crashed
                    ready, self._finished = self._finished, []
                    waiting = not self._playing
                self.ctrl_c.check()
                for index, result in ready:
                    early.put(index, result)
                while written in early:
                    finished(cases[written], early.pop(written))
                    written += 1
                if waiting and self._filed:
                    self._send_wave()
                    after_wave()
                elif waiting and written < len(cases):  # nobody plays and nothing is filed: a bug, never a hang
                    raise RuntimeError(f"{len(cases) - written} cases neither finished nor wait for a wave")
        finally:
            self._stop()
        return self.report

    def _play_cases(self, queue: Any, cases: list[Any], play: Callable[[Any], Any]) -> None:
        """One thread of the run: plays cases until none is left."""
        while True:
            with self._changed:
                index = None if self._stopped else next(queue, None)
                if index is None:
                    self._playing -= 1
                    self._changed.notify_all()
                    return
            try:
                result = play(cases[index])
            except BaseException as exc:  # a bug in the case: the coordinator raises it
                with self._changed:
                    self._crashed = self._crashed or exc
                    self._playing -= 1
                    self._changed.notify_all()
                return
            with self._changed:
                self._finished.append((index, result))
                self._changed.notify_all()

    def _stop(self) -> None:
        """After the run, or when it stops early: no case starts, and a case still waiting gets an
        error instead of an answer, so no thread waits for ever."""
        with self._changed:
            self._stopped = True
            filed, self._filed = self._filed, {}
        for request in filed.values():
            request.answer.set_exception(ModelError("the run stopped before this request's wave"))

    def _send_wave(self) -> None:
        self.report.waves += 1
        started = time.monotonic()
        wave = list(self._filed)  # every case waits: nothing is filed while the wave is sent
        requests = len(wave)
        submitted, rejected = self._submit()
        if submitted:
            typical = sum(self.report.seconds) / len(self.report.seconds) if self.report.seconds else None
            wait_for(
                self.endpoint,
                submitted,
                requests - len(rejected),
                f"wave {self.report.waves}",
                self.poll_s,
                typical,
                self.progress,
                self.ctrl_c,
            )
        retried_before = self.report.retried
        answered = set()
        for batch_id in submitted:
            for custom_id, outcome in self.endpoint.results(batch_id):
                self._settle(custom_id, outcome)
                answered.add(custom_id)
            self.journal.collected(batch_id)
        # What no batch answered is an error (cases woken by the results file their next requests meanwhile).
        for custom_id in [c for c in wave if c not in answered]:
            self._settle(custom_id, rejected.get(custom_id) or Outcome("missing", reason="no result in its batch"))
        self.report.seconds.append(round(time.monotonic() - started, 3))
        if self.progress:
            again = self.report.retried - retried_before
            print(
                f"wave {self.report.waves}: {plural(requests, 'request')} in "
                f"{plural(len(submitted), 'batch', 'batches')} {' '.join(submitted)}, "
                f"{self.report.seconds[-1]:.0f}s" + (f"; {again} to submit again" if again else ""),
                file=sys.stderr,
            )

    def _submit(self) -> tuple[list[str], dict[str, Outcome]]:
        """Submit the filed requests in batches within the limits, journaling each id as soon as
        the provider accepts it; the requests of a rejected batch get the provider's reason."""
        submitted, rejected = [], {}
        filed = ({"custom_id": custom_id, "params": f.params} for custom_id, f in self._filed.items())
        for part in self.endpoint.batches(filed):
            ids = [entry["custom_id"] for entry in part]
            for custom_id in ids:
                self.attempts[custom_id] = self.attempts.get(custom_id, 0) + 1
            self.report.submitted += len(ids)
            self.on_submitted(len(ids))
            try:
                batch_id = self.endpoint.submit(part)
            except BatchRejected as exc:
                rejected.update({cid: Outcome("rejected", reason=str(exc)) for cid in ids})
                print(f"wave {self.report.waves}: {exc}", file=sys.stderr)
                continue
            self.journal.submitted(batch_id, ids)
            submitted.append(batch_id)
            self.report.batches.append(batch_id)
        return submitted, rejected

    def _settle(self, custom_id: str, outcome: Outcome) -> None:
        """Keep a request's outcome and wake the cases that wait for it: its message (also put in
        the store at once, so a run killed now resumes from it), or its error; or nothing, when it
        is sent again in the next wave."""
        attempts = self.attempts.get(custom_id, 1)
        if outcome.kind == "succeeded":
            message = outcome.message
            problem = reply_problem(message)
            if problem is None and message is not None:
                self.attempts.pop(custom_id, None)
                if self.store is not None:
                    self.store.put(custom_id, message)
                self._wake(custom_id, message)
                return
            # Paid for once and never cached: an error of the run, not a retry.
            self._fail(custom_id, f"the batch result is not a Messages reply: {problem}")
            return
        if outcome.kind in RETRIED and attempts < self.max_attempts and not _permanent(outcome):
            self.report.retried += 1
            self.attempts[custom_id] = attempts
            return
        self._fail(custom_id, f"batch result {outcome.kind} after {attempts} submission(s): {outcome.reason}")

    def _fail(self, custom_id: str, error: str) -> None:
        self.failed[custom_id] = error[:500]
        self._wake(custom_id, ModelError(self.failed[custom_id]))

    def _wake(self, custom_id: str, answer: dict[str, Any] | ModelError) -> None:
        """Hand an answer to the cases waiting for it (none, for a batch adopted at the start)."""
        with self._changed:
            filed = self._filed.pop(custom_id, None)
            if filed is None:
                return
            self._playing += filed.waiting  # counted before they wake, so no wave leaves without them
        if isinstance(answer, ModelError):
            filed.answer.set_exception(answer)
        else:
            filed.answer.set_result(answer)


@dataclass
class Batched:
    """The model client of a batch run: the backend's, except that a request its cache lacks goes
    to the next wave, and `create` returns when the wave brings the answer."""

    backend: Backend
    waves: Waves

    @property
    def identity(self) -> str:
        return self.backend.identity

    @property
    def sampling(self) -> dict[str, Any]:
        return self.backend.sampling

    @property
    def calls(self) -> int:
        return self.backend.calls

    def create(self, sample: int = 0, overrides: dict[str, Any] | None = None, **request: Any) -> Reply:
        return self.backend.respond(request, sample, overrides, self._to_wave)

    def _to_wave(self, key: str, request: dict[str, Any], sampling: dict[str, Any]) -> dict[str, Any]:
        return self.waves.ask(key, {"model": self.backend.model, **request, **sampling})

    def count_tokens(self, **request: Any) -> int:
        return self.backend.count_tokens(**request)

    def check(self) -> None:
        self.backend.check()


def _permanent(outcome: Outcome) -> bool:
    """An invalid request fails the same way every time: sending it again only costs time."""
    return outcome.reason.startswith("invalid_request_error")
