"""What a run will cost before it runs (`harness plan`): requests, batch waves, input and output
tokens, and, given prices, the cost of direct and of batch execution.

The plan is a rehearsal of the real runner (`runner.CaseRunner`, the same play, probe and score
steps, in batch waves as `waves.Waves` runs them) against a stand-in model that answers every
request at once with as much text as the request's `max_tokens` allows, so the histories,
summaries and compactions are as long as the real ones can be: output tokens are an upper bound.
Requests the response cache already answers are replayed from it and cost nothing. Input tokens are
counted by the endpoint's `count_tokens` where it has one, else estimated from characters.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..inputs.evalfile import Prices
from ..models.backends import sampled
from ..models.batch import BatchEndpoint, Outcome, Status
from ..models.cache import ResponseCache
from ..models.client import ModelError, Purpose, Reply, current_purpose, reply_problem
from .cases import plan_cases
from .evals import Eval
from .executors import in_waves
from .waves import Waves

CHARS_PER_TOKEN = 4  # when the endpoint cannot count: a common rule of thumb for English text
# The stand-in's words: common ones, so that any tokenizer counts about one token per word
# (a hex digest would cost several tokens per character pair and inflate every count).
WORDS = (
    "alpha",
    "bravo",
    "cedar",
    "delta",
    "ember",
    "fable",
    "grove",
    "harbor",
    "island",
    "jungle",
    "kettle",
    "lemon",
    "meadow",
    "nickel",
    "orbit",
    "pebble",
)


def longest_reply(request: dict[str, Any]) -> dict[str, Any]:
    """The stand-in model's answer: filler as long as the request's `max_tokens` allows, its
    words chosen by a digest of what it answers, so that different histories get different
    summaries and replies (and stay different), as a real model's do."""
    digest = hashlib.sha256(
        json.dumps([request.get("system"), request["messages"]], sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()[:8]
    words = " ".join(WORDS[int(digit, 16)] for digit in digest) + " "
    chars = request["max_tokens"] * CHARS_PER_TOKEN
    text = (words * (chars // len(words) + 1))[:chars]
    edits = [edit.get("type") for edit in (request.get("context_management") or {}).get("edits", [])]
    if "compaction" in request or "compact_20260112" in edits:  # a server-side compaction: its block, alone
        return {
            "type": "message",
            "role": "assistant",
            "stop_reason": "compaction",
            "content": [{"type": "compaction", "content": text, "encrypted_content": digest, "signature": digest}],
            "usage": {
                "input_tokens": 0,
                "output_tokens": 0,
                "iterations": [
                    {
                        "type": "compaction",
                        "input_tokens": 0,
                        "output_tokens": request["max_tokens"],
                        "cache_read_input_tokens": 0,
                        "cache_creation_input_tokens": 0,
                    }
                ],
            },
        }
    return {
        "type": "message",
        "role": "assistant",
        "stop_reason": "max_tokens",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 0, "output_tokens": request["max_tokens"]},
    }


@dataclass
class Rehearsal:
    """A `ModelClient` that sends nothing. Requests the cache answers are replayed from it; the
    others go to the next wave of the batch executor (`waves.Waves`, as in a batch run), whose
    stand-in endpoint answers each with filler as long as its `max_tokens` allows. Each request is
    counted as a direct run would send it."""

    identity: str
    sampling: dict[str, Any]
    cache: ResponseCache | None
    waves: Waves
    stand_in: StandIn  # the waves' endpoint: it counted each request's input tokens
    answered: dict[str, Any] = field(default_factory=dict)  # the waves' results (their store)
    calls: int = 0  # requests a direct run would send
    cached: int = 0
    input_tokens: int = 0  # of the requests a direct run would send
    output_tokens: int = 0
    compaction: list[int] = field(default_factory=lambda: [0, 0, 0])  # of those: compaction requests, in, out
    sent: set[str] = field(default_factory=set)  # requests a direct run with a cache has sent by now
    _lock: threading.Lock = field(default_factory=threading.Lock)  # cases play in threads

    def create(self, sample: int = 0, overrides: dict[str, Any] | None = None, **request: Any) -> Reply:
        _, key = sampled(self.identity, {**self.sampling, **(overrides or {})}, request, sample)
        hit = self.cache.get(key) if self.cache else None
        if hit is not None and reply_problem(hit) is None:
            with self._lock:
                self.cached += 1
            return Reply(hit, cached=True)
        answer = self.answered.get(key) or self.waves.ask(key, request)
        self._count(key, request["max_tokens"], current_purpose())
        return Reply(answer)

    def _count(self, key: str, max_tokens: int, purpose: Purpose) -> None:
        """A request the cache lacked: sent by a direct run (with a cache, each distinct one once)."""
        with self._lock:
            if self.cache and key in self.sent:
                self.cached += 1
                return
            self.sent.add(key)
            self.calls += 1
            self.input_tokens += self.stand_in.tokens[key]
            self.output_tokens += max_tokens
            if purpose == "compaction":
                spent = (1, self.stand_in.tokens[key], max_tokens)
                self.compaction = [a + b for a, b in zip(self.compaction, spent)]

    def count_tokens(self, **request: Any) -> int:
        return self.stand_in.count(request)

    def check(self) -> None:
        """A rehearsal sends nothing, so there is nothing to prove."""


class Answers(dict[str, dict[str, Any]]):
    """The rehearsal's store of wave results (the shape `waves.Store` asks for)."""

    def put(self, key: str, response: dict[str, Any]) -> None:
        self[key] = response


class StandIn(BatchEndpoint):
    """A batch endpoint (split at the provider's limits, as the real one) that ends every batch
    at once, answering with `longest_reply` and counting the tokens of what it was sent."""

    def __init__(self, counter: Any = None):
        super().__init__(client=None)
        self.counter = counter  # a models.Backend whose count_tokens measures input; None: characters
        self.open: dict[str, list[dict[str, Any]]] = {}  # batches submitted, not yet read
        self.tokens: dict[str, int] = {}  # input tokens by custom_id
        self.input_tokens = self.output_tokens = 0

    def count(self, request: dict[str, Any]) -> int:
        if self.counter is not None:
            try:
                return int(self.counter.count_tokens(**{k: v for k, v in request.items() if k != "max_tokens"}))
            except ModelError:
                self.counter = None  # the endpoint cannot count: characters from here on
        text = json.dumps({k: request.get(k) for k in ("system", "messages", "tools")}, ensure_ascii=False)
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    def submit(self, entries: list[dict[str, Any]]) -> str:
        for entry in entries:
            self.tokens[entry["custom_id"]] = self.count(entry["params"])
            self.input_tokens += self.tokens[entry["custom_id"]]
            self.output_tokens += entry["params"]["max_tokens"]
        self.open[f"rehearsal_{len(self.open) + 1}"] = entries
        return f"rehearsal_{len(self.open)}"

    def status(self, batch_id: str) -> Status:
        return Status(True, {})

    def results(self, batch_id: str) -> Iterator[tuple[str, Outcome]]:
        for entry in self.open.pop(batch_id):
            yield entry["custom_id"], Outcome("succeeded", longest_reply(entry["params"]))


class _Unrecorded:
    """A rehearsal's batches are written down nowhere."""

    def submitted(self, batch_id: str, custom_ids: list[str]) -> None: ...

    def collected(self, batch_id: str) -> None: ...

    def in_flight(self) -> list[tuple[str, list[str]]]:
        return []


@dataclass(frozen=True)
class Work:
    """Requests and tokens of one way of running (output tokens at most: every reply as long as
    its max_tokens)."""

    requests: int
    input_tokens: int
    output_tokens: int

    def cost(self, input_price: float, output_price: float) -> float:
        return (self.input_tokens * input_price + self.output_tokens * output_price) / 1e6


@dataclass(frozen=True)
class Estimate:
    cases: int
    cached: int  # requests the response cache answers
    direct: Work
    batch: Work  # identical requests of one wave leave once
    waves: int
    batches: int
    counted_by: str  # how input tokens were measured
    compaction: Work = Work(0, 0, 0)  # of the direct requests, those that compact (summaries, server compaction, edits)


def estimate(
    ev: Eval, identity: str, sampling: dict[str, Any], cache: ResponseCache | None, counter: Any = None
) -> Estimate:
    """Rehearse every case of the eval's plan in batch waves; see the module docstring."""
    endpoint = StandIn(counter)
    answers = Answers()
    waves = Waves(endpoint, _Unrecorded(), answers, poll_s=(0.0, 0.0), progress=False)
    client = Rehearsal(
        identity=identity, sampling=sampling, cache=cache, waves=waves, stand_in=endpoint, answered=answers
    )
    runner = in_waves(ev, client, waves)
    cases = plan_cases(ev)
    report = waves.run(cases, runner.run, lambda case, records: None)
    return Estimate(
        len(cases),
        client.cached,
        Work(client.calls, client.input_tokens, client.output_tokens),
        Work(report.submitted, endpoint.input_tokens, endpoint.output_tokens),
        report.waves,
        len(report.batches),
        "the endpoint's count_tokens" if endpoint.counter is not None else f"characters ({CHARS_PER_TOKEN} per token)",
        Work(*client.compaction),
    )


def costs(estimate: Estimate, prices: Prices) -> dict[str, float]:
    """Direct and batch cost, from prices per million tokens (batch: half, unless given)."""
    batch_input = prices.input / 2 if prices.batch_input is None else prices.batch_input
    batch_output = prices.output / 2 if prices.batch_output is None else prices.batch_output
    return {
        "direct": estimate.direct.cost(prices.input, prices.output),
        "batch": estimate.batch.cost(batch_input, batch_output),
    }
