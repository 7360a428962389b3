"""What a run will cost before it runs (`harness plan`): requests, batch waves, input and output
tokens, and, given prices, the cost of direct and of batch execution.

The plan is a rehearsal of the real runner (`run.CaseRunner`, the same play, probe and score
steps, in batch waves as `batch.Waves` runs them) against a stand-in model that answers every
request at once with as much text as the request's `max_tokens` allows, so the histories,
summaries and compactions are as long as the real ones can be: output tokens are an upper bound. Requests the response cache already answers
are replayed from it and cost nothing. Input tokens are counted by the endpoint's `count_tokens`
where it has one, else estimated from characters.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from dataclasses import dataclass, field
from typing import Any

from .batch import BatchEndpoint, Outcome, Status, Waves
from .cache import ResponseCache
from .client import ModelError, Reply, reply_problem
from .config import Eval, Prices
from .models import sampled
from .run import CaseRunner, in_waves, plan_cases

CHARS_PER_TOKEN = 4  # when the endpoint cannot count: a common rule of thumb for English text
# The stand-in's words: common ones, so that any tokenizer counts about one token per word
# (a hex digest would cost several tokens per character pair and inflate every count).
WORDS = ("alpha", "bravo", "cedar", "delta", "ember", "fable", "grove", "harbor", "island", "jungle", "kettle",
         "lemon", "meadow", "nickel", "orbit", "pebble")


def longest_reply(request: dict[str, Any]) -> dict[str, Any]:
    """The stand-in model's answer: filler as long as the request's `max_tokens` allows, its
    words chosen by a digest of what it answers, so that different histories get different
    summaries and replies (and stay different), as a real model's do."""
    digest = hashlib.sha256(json.dumps([request.get("system"), request["messages"]], sort_keys=True,
                                       ensure_ascii=False).encode()).hexdigest()[:8]
    words = " ".join(WORDS[int(digit, 16)] for digit in digest) + " "
    chars = request["max_tokens"] * CHARS_PER_TOKEN
    text = (words * (chars // len(words) + 1))[:chars]
    return {"type": "message", "role": "assistant", "stop_reason": "max_tokens",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 0, "output_tokens": request["max_tokens"]}}


@dataclass
class Rehearsal:
    """A `ModelClient` that sends nothing. Requests the cache answers are replayed from it; the
    others wait for the next wave of the batch executor (`batch.Waves`, as in a batch run), whose
    stand-in endpoint answers each with filler as long as its `max_tokens` allows."""

    identity: str
    sampling: dict[str, Any]
    cache: ResponseCache | None = None
    waves: Any = None  # the batch.Waves of the rehearsal
    calls: int = 0  # requests a direct run would send
    cached: int = 0
    input_tokens: int = 0  # of the requests a direct run would send
    output_tokens: int = 0
    answered: dict[str, Any] = field(default_factory=dict)  # what a run would have cached by now
    requested: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def create(self, sample: int = 0, **request: Any) -> Reply:
        _, key = sampled(self.identity, self.sampling, request, sample)
        if self.cache and (hit := self.answered.get(key) or self.cache.get(key)) and reply_problem(hit) is None:
            self.cached += 1
            return Reply(hit, cached=True)
        with self._lock:  # with a cache, a direct run sends each distinct request once
            direct = not self.cache or key not in self.requested
            self.requested.add(key)
        data, _ = self.waves.send(key, request)
        if self.cache:
            self.answered[key] = data
        if direct:
            with self._lock:
                self.calls += 1
                self.input_tokens += self.waves.endpoint.tokens[key]
                self.output_tokens += request["max_tokens"]
        else:
            self.cached += 1
        return Reply(data)

    def count_tokens(self, **request: Any) -> int:
        return self.waves.endpoint.count(request)

    def check(self) -> None:
        """A rehearsal sends nothing, so there is nothing to prove."""


class StandIn(BatchEndpoint):
    """A batch endpoint (split at the provider's limits, as the real one) that ends every batch
    at once, answering with `longest_reply` and counting the tokens of what it was sent."""

    def __init__(self, counter: Any = None):
        super().__init__(client=None)
        self.counter = counter  # a models.Backend whose count_tokens measures input; None: characters
        self.batches: dict[str, list[dict[str, Any]]] = {}
        self.tokens: dict[str, int] = {}  # input tokens by custom_id
        self.input_tokens = self.output_tokens = 0

    def count(self, request: dict[str, Any]) -> int:
        if self.counter is not None:
            try:
                return self.counter.count_tokens(**{k: v for k, v in request.items() if k != "max_tokens"})
            except ModelError:
                self.counter = None  # the endpoint cannot count: characters from here on
        text = json.dumps({k: request.get(k) for k in ("system", "messages", "tools")}, ensure_ascii=False)
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    def submit(self, entries: list[dict[str, Any]]) -> str:
        for entry in entries:
            self.tokens[entry["custom_id"]] = self.count(entry["params"])
            self.input_tokens += self.tokens[entry["custom_id"]]
            self.output_tokens += entry["params"]["max_tokens"]
        self.batches[f"rehearsal_{len(self.batches) + 1}"] = entries
        return f"rehearsal_{len(self.batches)}"

    def status(self, batch_id: str) -> Status:
        return Status(True, {})

    def results(self, batch_id: str) -> dict[str, Outcome]:
        return {e["custom_id"]: Outcome("succeeded", longest_reply(e["params"]))
                for e in self.batches.pop(batch_id)}


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


def estimate(ev: Eval, identity: str, sampling: dict[str, Any], cache: ResponseCache | None,
             counter: Any = None) -> Estimate:
    """Rehearse every case of the eval's plan in batch waves; see the module docstring."""
    endpoint = StandIn(counter)
    waves = Waves(endpoint, _Unrecorded(), poll_s=(0.0, 0.0), progress=False)
    client = Rehearsal(identity, sampling, cache, waves)
    cases = plan_cases(ev)
    futures = in_waves(CaseRunner(ev, client), waves, cases)
    report = waves.run()
    for future in futures:
        future.result()  # a failure of the rehearsal itself is raised, not hidden
    return Estimate(len(cases), client.cached, Work(client.calls, client.input_tokens, client.output_tokens),
                    Work(report.submitted, endpoint.input_tokens, endpoint.output_tokens), report.waves,
                    len(report.batches), "the endpoint's count_tokens" if endpoint.counter is not None
                    else f"characters ({CHARS_PER_TOKEN} per token)")


def costs(estimate: Estimate, prices: Prices) -> dict[str, float]:
    """Direct and batch cost, from prices per million tokens (batch: half, unless given)."""
    batch_input = prices.input / 2 if prices.batch_input is None else prices.batch_input
    batch_output = prices.output / 2 if prices.batch_output is None else prices.batch_output
    return {"direct": estimate.direct.cost(prices.input, prices.output),
            "batch": estimate.batch.cost(batch_input, batch_output)}
