"""Model access: one `Backend` per model name, so the agent code is identical for every backend.

- an embedded model (`weights.MODELS`: `qwen2.5-coder-1.5b`, the default, also called `local`;
  `smollm2-135m`) or a path to a `.gguf` file: llama.cpp's server inside this process (xllamacpp),
  on 127.0.0.1 with a random per-process API key, speaking the Messages API.
- `claude-...`: Anthropic's API, key from ANTHROPIC_API_KEY.
- any name with `base_url`: another Anthropic-compatible server (llama-server, Ollama, a proxy).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..messages import SummaryLayout
from .cache import ResponseCache
from .client import OVERFLOW, ContextOverflow, ModelError, Reply, SetupError, api_problem, reply_problem
from .local import LOCAL, catalog_model, local_server, local_weights
from .tool_text import read_tool_calls
from .weights import DEFAULT, MODELS

REQUEST_TIMEOUT = 600.0  # seconds; a long summary on 2 CPU cores takes tens of seconds
MAX_RETRIES = 4  # the SDK backs off exponentially and honours retry-after
CHECK_TIMEOUT = 8.0  # seconds for the one-token request that proves an endpoint before a run


class MalformedResponse(ModelError):
    """The server answered 200 with a body that is not a Messages reply, even after retries."""


# Where a request the cache lacks goes: (its cache key, the request, the sampling settings) -> the
# response. A direct call to the endpoint, or a batch run's next wave (`execution.waves.Batched`).
Send = Callable[[str, dict[str, Any], dict[str, Any]], dict[str, Any]]


@dataclass
class Backend:
    """A Messages API endpoint plus the model name and sampling settings sent with every call."""

    client: Any  # an anthropic.Anthropic (imported only when a model is opened)
    model: str
    identity: str  # names the weights/endpoint in manifests and cache keys; never the API key
    sampling: dict[str, Any] = field(default_factory=dict)
    cache: ResponseCache | None = None
    prompt_caching: bool = False  # mark shared prefixes with cache_control (Anthropic's API)
    reads_text_tool_calls: bool = False  # a tool call the model wrote as text becomes a tool_use (`tool_text`)
    calls: int = 0  # requests actually sent to the model (cache hits excluded)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # cases run in threads

    def create(self, sample: int = 0, overrides: dict[str, Any] | None = None, **request: Any) -> Reply:
        """Send one Messages request; the response comes back as plain JSON data with its `usage`
        (tokens, latency, whether it came from the cache) attached. `sample` > 0
        asks for another independent sample of the same request (a repeat): its own seed where the
        server takes one, and its own cache entry. `overrides`: sampling settings of this request only
        (a metric's own temperature)."""
        return self.respond(request, sample, overrides, lambda _key, request, sampling: self._send(request, sampling))

    def respond(self, request: dict[str, Any], sample: int, overrides: dict[str, Any] | None, send: Send) -> Reply:
        """`create`, with what the cache lacks answered by `send` (a batch run's waves)."""
        sampling, key = sampled(self.identity, {**self.sampling, **(overrides or {})}, request, sample)
        if self.cache and (hit := self.cache.get(key)) and reply_problem(hit) is None:  # never replay a bad entry
            return self._reply(request, hit, cached=True)
        started = time.monotonic()
        response = send(key, request, sampling)
        if self.cache:
            self.cache.put(key, response)  # as the server sent it: reading text calls is redone on replay
        return self._reply(request, response, latency_s=round(time.monotonic() - started, 3))

    def _reply(self, request: dict[str, Any], data: dict[str, Any], **measured: Any) -> Reply:
        from_text = 0
        if self.reads_text_tool_calls and request.get("tools"):
            data, from_text = read_tool_calls(data, request["tools"])
        return Reply(data, tool_calls_from_text=from_text, **measured)

    def count_calls(self, requests: int) -> None:
        """Requests sent on the model's behalf (a batch executor's submissions)."""
        with self._lock:
            self.calls += requests

    def _send(self, request: dict[str, Any], sampling: dict[str, Any]) -> dict[str, Any]:
        import anthropic

        # The SDK retries HTTP failures itself; a 200 with a broken body it does not, so we do.
        problem: str | None = None
        for _attempt in range(MAX_RETRIES + 1):
            with self._lock:
                self.calls += 1
            try:
                # Server-side compaction and context editing are beta features: their requests name the betas.
                api = self.client.beta.messages if "betas" in request else self.client.messages
                data: dict[str, Any] = _data(api.create(model=self.model, extra_body=sampling or None, **request))
            except json.JSONDecodeError as exc:
                problem = f"the body is not valid JSON ({exc})"
            except anthropic.APIError as exc:
                raise api_error(exc) from exc
            else:
                if (problem := reply_problem(data)) is None:
                    return data
        raise MalformedResponse(f"the server's response is not a Messages reply: {problem}")

    def check(self) -> None:
        """Prove, with one uncached one-token request, that the endpoint speaks the Messages API;
        otherwise stop in seconds with what answered (a run against it would record only errors)."""
        import anthropic

        quick = self.client.with_options(max_retries=0, timeout=CHECK_TIMEOUT)
        try:
            problem = reply_problem(
                _data(
                    quick.messages.create(
                        model=self.model,
                        max_tokens=1,
                        messages=[{"role": "user", "content": "Say OK."}],
                        extra_body=self.sampling or None,
                    )
                )
            )
        except json.JSONDecodeError as exc:
            problem = f"the body is not valid JSON ({exc})"
        except anthropic.APIError as exc:
            problem = api_problem(exc)[:200]
        if problem:
            raise SetupError(
                f"{self.client.base_url} does not answer as a Messages API for model {self.model!r}: "
                f"{problem}; check --base-url, the model name and that the server is running"
            )

    def count_tokens(self, **request: Any) -> int:
        """The endpoint's token count of a request (cached like replies: a budget in tokens measures
        the same histories again in every case, and in every pass of a batch run)."""
        import anthropic

        request.pop("max_tokens", None)
        key = ResponseCache.key(self.identity, {"count_tokens": True}, request)
        if self.cache and isinstance(hit := self.cache.get(key), dict) and isinstance(hit.get("input_tokens"), int):
            return int(hit["input_tokens"])
        try:
            tokens = int(self.client.messages.count_tokens(model=self.model, **request).input_tokens)
        except anthropic.APIError as exc:
            raise api_error(exc) from exc
        if self.cache:
            self.cache.put(key, {"input_tokens": tokens})
        return tokens


def sampled(
    identity: str, sampling: dict[str, Any], request: dict[str, Any], sample: int = 0
) -> tuple[dict[str, Any], str]:
    """The sampling settings of sample `sample` of a request (its own seed where the server takes
    one) and its cache key, which is also its batch custom_id."""
    if sample and "seed" in sampling:
        sampling = {**sampling, "seed": sampling["seed"] + sample}
    return sampling, ResponseCache.key(identity, {**sampling, "sample": sample} if sample else sampling, request)


def _data(response: Any) -> Any:
    """The SDK's response as JSON data; a body that was not JSON comes back as the SDK gave it."""
    return response.model_dump(mode="json", exclude_none=True) if hasattr(response, "model_dump") else response


def api_error(exc: Exception) -> ModelError:
    """An SDK error as the harness records it: its type and message (which never hold the key); a
    request longer than the context window is a `ContextOverflow`."""
    text = f"{type(exc).__name__}: {exc}"
    return (ContextOverflow if OVERFLOW.search(text) else ModelError)(text)


def is_local(name: str, base_url: str | None = None) -> bool:
    return not base_url and (name == LOCAL or name in MODELS or name.endswith(".gguf"))


def default_summary_layout(name: str, base_url: str | None = None) -> SummaryLayout:
    # Measured per embedded model (docs/models.md, "What each model can tell you"): both follow a
    # summary prompt better with the instruction after the delimited transcript (SmolLM2 otherwise
    # continues the transcript; Qwen keeps only a multi-line prompt's last sentence), and the prompts
    # of one cut then share the transcript as a prefix in llama.cpp's prompt cache. Other models keep
    # the seed's layout.
    model = None if base_url else catalog_model(name)
    return model.summary_layout if model else "system"


def default_jobs(name: str, base_url: str | None = None) -> int:
    # Local: one at a time. Parallel slots gained only 1.16x on the smoke eval (2 cores), and
    # batching changes llama.cpp's arithmetic, so answers would depend on scheduling; one slot
    # keeps a run reproducible. Remote: requests mostly wait on the network, so run several.
    return 1 if is_local(name, base_url) else 8


def open_model(
    name: str = LOCAL,
    *,
    base_url: str | None = None,
    temperature: float = 0.0,
    seed: int = 0,
    threads: int | None = None,
    slots: int = 1,
    sampling: dict[str, Any] | None = None,
) -> Backend:
    """Return a Backend for a model name (see the module docstring). `sampling`: extra settings
    sent with every request (and part of the cache key)."""
    backend = _open(name, base_url, temperature, seed, threads, slots)
    backend.sampling.update(sampling or {})
    return backend


def _open(name: str, base_url: str | None, temperature: float, seed: int, threads: int | None, slots: int) -> Backend:
    import anthropic  # here, so that reading eval files and run folders never loads the SDK

    if base_url:  # often a small local model behind llama-server or Ollama: its calls written as text are read
        client = anthropic.Anthropic(
            base_url=base_url,
            api_key=os.environ.get("ANTHROPIC_API_KEY", "none"),
            timeout=REQUEST_TIMEOUT,
            max_retries=MAX_RETRIES,
        )
        return Backend(client, name, f"{base_url}#{name}", {"temperature": temperature}, reads_text_tool_calls=True)
    if name.startswith("claude"):
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise SetupError(
                f"model {name!r} needs ANTHROPIC_API_KEY set in the environment "
                "(or use --model local for the embedded model)"
            )
        client = anthropic.Anthropic(timeout=REQUEST_TIMEOUT, max_retries=MAX_RETRIES)
        return Backend(client, name, name, {"temperature": temperature}, prompt_caching=True)
    if not is_local(name):
        raise SetupError(
            f"unknown model {name!r}: use {', '.join(MODELS)} (`harness models` lists them; "
            f"'local' is {DEFAULT.name}), a .gguf path, a claude-... name, "
            "or give --base-url for another Anthropic-compatible server"
        )
    weights, context = local_weights(name)
    url, key = local_server(weights, threads or os.cpu_count() or 1, slots, context)
    client = anthropic.Anthropic(base_url=url, api_key=key, timeout=REQUEST_TIMEOUT, max_retries=MAX_RETRIES)
    return Backend(
        client,
        weights.stem,
        f"{weights.name}:{weights.stat().st_size}",
        {"temperature": temperature, "seed": seed},
        reads_text_tool_calls=True,
    )
