"""Batch execution on the Message Batches API, in lock-step waves, in bounded threads and memory.

A run goes in passes. In each pass a bounded pool plays every unfinished case from its start:
the requests the store (the response cache, or the run's own) already answers are replayed from
it, and the first request it does not answer is registered for the next wave, which unwinds the
case (`Deferred`; the probes of a case register together). When the pass is over, the registered
requests leave together as one wave: one batch, or several when a wave is over the provider's
request or size limit, polled until they end, their results put in the store by `custom_id` (the
request's cache key: identical requests of one wave are sent once). The next pass replays every
unfinished case one step further. So the waves are as many as the longest chain of calls in the
eval, as if every case waited in its own thread, while threads are the pool's and memory holds
the cases the pool is playing, whatever the number of cases: a wave's requests, and the results
of cases that finish before an earlier one (written in plan order), wait on disk.

Every submitted batch id goes to a journal (the run folder's `batches.jsonl`) before anything
waits on it, so a resumed run collects the batches still in flight instead of paying twice.
"""

from __future__ import annotations

import json
import pickle
import sqlite3
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol, TypeVar

from tqdm import tqdm

from ..errors import plural
from ..models.batch import POLL_S, BatchEndpoint, BatchRejected, CtrlC, Outcome, wait_for
from ..models.client import ModelError, api_problem, reply_problem

RETRIED = ("errored", "expired", "canceled")  # outcomes sent again in the next wave
MAX_ATTEMPTS = 3  # submissions of one request before it is recorded as an error

Item = TypeVar("Item")
Result = TypeVar("Result")


class Deferred(BaseException):
    """A case asked for a response its wave has not brought yet: it unwinds, to be played again
    after the wave. A BaseException, so no `except Exception` on the way (a user's strategy) stops it."""


class Journal(Protocol):
    """Where submitted batches are written down, so a resumed run re-attaches to them."""

    def submitted(self, batch_id: str, custom_ids: list[str]) -> None: ...

    def collected(self, batch_id: str) -> None: ...

    def in_flight(self) -> list[tuple[str, list[str]]]: ...


class Store(Protocol):
    """Where the wave's results are kept for the replays (the response cache has this shape)."""

    def get(self, key: str) -> dict[str, Any] | None: ...

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


class Pending:
    """The requests registered for the next wave, on disk (a wave can hold a request of every case):
    one row per custom_id, in the order they were first registered."""

    def __init__(self) -> None:
        self._file = tempfile.NamedTemporaryFile(prefix="harness-wave-", suffix=".sqlite")
        self._db = sqlite3.connect(self._file.name, check_same_thread=False)
        self._db.execute("CREATE TABLE pending (custom_id TEXT PRIMARY KEY, params TEXT NOT NULL)")
        self._lock = threading.Lock()  # the pool's cases register concurrently

    def add(self, custom_id: str, params: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO pending VALUES (?, ?)", (custom_id, json.dumps(params)))

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM pending").fetchone()[0])

    def entries(self) -> Iterator[dict[str, Any]]:
        for custom_id, params in self._db.execute("SELECT custom_id, params FROM pending ORDER BY rowid"):
            yield {"custom_id": custom_id, "params": json.loads(params)}

    def clear(self) -> None:
        self._db.execute("DELETE FROM pending")


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
    """Runs cases in passes and their requests in waves (see the module docstring). A client in a
    wave asks `answer`; a case sends its probes through `gather`; `run` drives everything."""

    def __init__(
        self,
        endpoint: BatchEndpoint,
        journal: Journal,
        store: Store | None = None,
        *,
        workers: int = 8,
        max_attempts: int = MAX_ATTEMPTS,
        poll_s: tuple[float, float] = POLL_S,
        progress: bool = True,
        on_submitted: Callable[[int], None] = lambda n: None,
    ):
        self.endpoint, self.journal, self.store, self.workers = endpoint, journal, store, workers
        self.max_attempts, self.poll_s, self.progress, self.on_submitted = max_attempts, poll_s, progress, on_submitted
        self.report = WaveReport()
        self.pending = Pending()
        self.ctrl_c = CtrlC()  # installed by whoever drives `adopt` and `run` (`with waves.ctrl_c:`)
        # Only requests that failed keep state between waves (few): their submissions so far, and
        # the error of those that will not be sent again.
        self.attempts: dict[str, int] = {}
        self.failed: dict[str, str] = {}

    # --- the cases' side -------------------------------------------------------------------

    def answer(self, custom_id: str, params: dict[str, Any]) -> NoReturn:
        """For a request the store does not answer: its error when it failed for good, else it is
        registered for the next wave and the case unwinds."""
        if custom_id in self.failed:
            raise ModelError(self.failed[custom_id])
        self.pending.add(custom_id, params)
        raise Deferred()

    def gather(self, function: Callable[[Item], Result], items: Iterable[Item]) -> list[Result]:
        """`function` over `items` (the probes of one case), registering every request they miss
        before the case unwinds, so they share a wave."""
        results, deferred = [], False
        for item in items:
            try:
                results.append(function(item))
            except Deferred:
                deferred = True
        if deferred:
            raise Deferred()
        return results

    # --- the coordinator's side ------------------------------------------------------------

    def adopt(self) -> None:
        """Collect the batches a previous process submitted and did not collect (waiting for
        those still in flight); their results answer the same requests without a new batch."""
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
        """Play every case in passes until all have finished; `finished` gets each case's result in
        the order of `cases`; `after_wave` runs after each wave."""
        unfinished = list(range(len(cases)))
        early = Spill()  # results of cases that finished before an earlier one, until its turn
        written = 0  # cases[:written] have been handed to `finished`
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            while unfinished:
                deferred = []
                outcomes = ordered_map(pool, lambda i: _attempt(play, cases[i]), unfinished, 4 * self.workers)
                for index, (done, result) in tqdm(
                    zip(unfinished, outcomes),
                    total=len(unfinished),
                    unit="case",
                    desc=f"pass {self.report.waves + 1}",
                    disable=not self.progress,
                    leave=False,
                    file=sys.stderr,
                ):
                    self.ctrl_c.check()
                    if not done:
                        deferred.append(index)
                        continue
                    if index != written:
                        early.put(index, result)
                        continue
                    finished(cases[index], result)
                    written += 1
                    while written in early:
                        finished(cases[written], early.pop(written))
                        written += 1
                unfinished = deferred
                if len(self.pending):
                    self._send_wave()
                    after_wave()
                elif deferred:  # deferred with nothing to send cannot make progress: a bug, never a loop
                    raise RuntimeError(f"{len(deferred)} cases wait for a wave with no request in it")
        return self.report

    def _send_wave(self) -> None:
        self.report.waves += 1
        started = time.monotonic()
        requests = len(self.pending)
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
        for entry in self.pending.entries():  # whatever a batch did not answer is an error
            if entry["custom_id"] not in answered:
                self._settle(
                    entry["custom_id"],
                    rejected.get(entry["custom_id"]) or Outcome("missing", reason="no result in its batch"),
                )
        self.pending.clear()
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
        """Submit the pending requests in batches within the limits, journaling each id as soon as
        the provider accepts it; the requests of a rejected batch get the provider's reason."""
        submitted, rejected = [], {}
        for part in self.endpoint.batches(self.pending.entries()):
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
        """Keep a request's outcome: its message in the store, or its error, or nothing (it is sent
        again when a replay asks for it)."""
        attempts = self.attempts.get(custom_id, 1)
        if outcome.kind == "succeeded":
            message = outcome.message
            problem = reply_problem(message)
            if problem is None and message is not None:
                self.attempts.pop(custom_id, None)
                if self.store is not None:
                    self.store.put(custom_id, message)
                return
            # Paid for once and never cached: an error of the run, not a retry.
            outcome = Outcome("invalid", reason=f"the batch result is not a Messages reply: {problem}")
            self.failed[custom_id] = outcome.reason[:500]
            return
        if outcome.kind in RETRIED and attempts < self.max_attempts and not _permanent(outcome):
            self.report.retried += 1
            self.attempts[custom_id] = attempts
            return
        self.failed[custom_id] = f"batch result {outcome.kind} after {attempts} submission(s): {outcome.reason}"[:500]


def _attempt(play: Callable[[Item], Result], case: Item) -> tuple[bool, Result | None]:
    """(True, result) when the case finished; (False, None) when it waits for the next wave."""
    try:
        return True, play(case)
    except Deferred:
        return False, None


def ordered_map(
    pool: ThreadPoolExecutor, function: Callable[[Item], Result], items: list[Item], window: int
) -> Iterator[Result]:
    """`pool.map`, but with at most `window` items in flight, so a pass over many cases holds only
    a window of them (and their results) at a time."""
    queue: deque[Future[Result]] = deque()
    for item in items:
        queue.append(pool.submit(function, item))
        if len(queue) >= window:
            yield queue.popleft().result()
    while queue:
        yield queue.popleft().result()


def _permanent(outcome: Outcome) -> bool:
    """An invalid request fails the same way every time: sending it again only costs time."""
    return outcome.reason.startswith("invalid_request_error")
