"""The Message Batches API, through the SDK: submit a batch, poll it, read its results.

`BatchEndpoint` speaks it for Anthropic's API or any server that serves `/v1/messages/batches`;
`wait_for` polls batches with a progress bar. How a run's requests are gathered into waves of
batches is the executor's business (`execution.waves`).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tqdm import tqdm

from ..errors import plural
from .client import SetupError, api_problem

MAX_REQUESTS = 100_000  # per batch, as the Message Batches API allows
MAX_BYTES = 256 * 1024 * 1024
POLL_S = (1.0, 60.0)  # first and longest wait between two looks at a batch in flight


class CtrlC:
    """Ctrl-C during a batch run, kept even when Python loses it. A KeyboardInterrupt raised while a
    finaliser runs (the SDK's response streams have a `__del__`) is printed as "Exception ignored"
    and dropped, and the run would go on waiting for its batches. While installed (`with`, in the
    main thread, where Ctrl-C raises KeyboardInterrupt: not where it is ignored, as in a background
    job), the handler also records the press, and `check` raises it again at the next poll or case."""

    def __init__(self) -> None:
        self.pressed = threading.Event()
        self._previous: Any = None

    def __enter__(self) -> CtrlC:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _handle(self, signum: int, frame: object) -> None:
        self.pressed.set()
        raise KeyboardInterrupt

    def check(self) -> None:
        if self.pressed.is_set():
            raise KeyboardInterrupt


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
        raise SetupError(
            f"--batch: {self.client.base_url} has no Message Batches API (/v1/messages/batches): "
            f"{problem}; run without --batch"
        )

    def split(self, entries: Iterable[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        """The entries cut into batches within the request and size limits, in order."""
        return list(self.batches(entries))

    def batches(self, entries: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
        """`split`, one batch at a time: only the batch being filled is held."""
        batch: list[dict[str, Any]] = []
        size = 0
        for entry in entries:
            entry_size = len(json.dumps(entry, ensure_ascii=False).encode()) + 1
            if batch and (len(batch) >= self.max_requests or size + entry_size > self.max_bytes):
                yield batch
                batch, size = [], 0
            batch.append(entry)
            size += entry_size
        if batch:
            yield batch

    def submit(self, entries: list[dict[str, Any]]) -> str:
        import anthropic

        try:
            return str(self.client.messages.batches.create(requests=entries).id)
        except anthropic.APIError as exc:
            verb = "the provider rejected" if isinstance(exc, anthropic.APIStatusError) else "could not submit"
            raise BatchRejected(
                f"{verb} a batch of {plural(len(entries), 'request')}: {api_problem(exc)[:300]}"
            ) from None

    def status(self, batch_id: str) -> Status:
        batch = self.client.messages.batches.retrieve(batch_id)
        return Status(batch.processing_status == "ended", batch.request_counts.model_dump())

    def results(self, batch_id: str) -> Iterator[tuple[str, Outcome]]:
        """Each request's outcome, as the results stream in (a batch's results are not held whole)."""
        for line in self.client.messages.batches.results(batch_id):
            result = line.result
            if result.type == "succeeded":
                # As it came: whatever is not a Messages reply is found and recorded by the caller.
                yield (
                    line.custom_id,
                    Outcome("succeeded", result.message.model_dump(mode="json", exclude_none=True, warnings=False)),
                )
            elif result.type == "errored":
                error = result.error.error if hasattr(result.error, "error") else result.error
                yield (
                    line.custom_id,
                    Outcome("errored", reason=f"{getattr(error, 'type', 'error')}: {getattr(error, 'message', error)}"),
                )
            else:
                yield line.custom_id, Outcome(result.type, reason=f"the request was {result.type}")


def wait_for(
    endpoint: BatchEndpoint,
    batch_ids: list[str],
    requests: int,
    label: str,
    poll_s: tuple[float, float],
    typical: float | None,
    progress: bool,
    ctrl_c: CtrlC | None = None,
) -> None:
    """Poll the batches until all have ended, with a progress bar: requests succeeded, failed and
    waiting, the batch ids, and the time left as earlier waves (`typical` seconds) took."""
    delay, started = poll_s[0], time.monotonic()
    with tqdm(
        total=requests, desc=label, unit="req", disable=not progress, dynamic_ncols=True, file=sys.stderr, leave=False
    ) as bar:
        while True:
            if ctrl_c is not None:
                ctrl_c.check()
            statuses = [endpoint.status(b) for b in batch_ids]
            counts = {
                k: sum(s.counts.get(k, 0) for s in statuses)
                for k in ("succeeded", "errored", "expired", "canceled", "processing")
            }
            bar.n = requests - counts["processing"]
            failed = counts["errored"] + counts["expired"] + counts["canceled"]
            left = f"{max(0.0, typical - (time.monotonic() - started)):.0f}s" if typical else "?"
            bar.set_postfix_str(
                f"ok {counts['succeeded']} failed {failed} waiting {counts['processing']}"
                f" · est. left {left} (as earlier waves) · {', '.join(batch_ids)}"
            )
            if all(s.ended for s in statuses):
                return
            time.sleep(delay)
            delay = min(delay * 1.5, poll_s[1])
