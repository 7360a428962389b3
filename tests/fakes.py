"""A fake Messages client for unit tests: scripted or rule-based replies, every request kept."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import anthropic

from harness.models.backends import api_error
from harness.models.client import Reply, current_purpose


class FakeClient:
    """Implements Backend's create/count_tokens. `reply` maps a request to the reply text
    (or to a full list of content blocks); the default echoes a fixed string."""

    def __init__(self, reply: Callable[[dict[str, Any]], Any] | None = None, identity: str = "fake"):
        self.reply = reply or (lambda request: "ok")
        self.requests: list[dict[str, Any]] = []
        self.purposes: list[str] = []  # each request's purpose, as tagged where it was made
        self.identity, self.sampling, self.model = identity, {}, "fake-model"
        self.cache = None  # as a Backend opened without a response cache

    def create(self, sample: int = 0, overrides: dict | None = None, **request: Any) -> Reply:
        # A snapshot, not a live reference; a sample or sampling override of the request is kept with it.
        self.purposes.append(current_purpose())
        self.requests.append(
            json.loads(
                json.dumps(
                    {
                        **request,
                        **({"sample": sample} if sample else {}),
                        **({"overrides": overrides} if overrides else {}),
                    }
                )
            )
        )
        try:
            content = self.reply({**request, **({"sample": sample} if sample else {})})
        except anthropic.APIError as exc:  # as the Backend reports a failed call
            raise api_error(exc) from exc
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        return Reply(
            {
                "content": content,
                "usage": {"input_tokens": len(json.dumps(request)) // 4, "output_tokens": 5},
                "stop_reason": "end_turn",
            }
        )

    @property
    def calls(self) -> int:
        return len(self.requests)

    def check(self) -> None:
        """A fake needs no proof that it speaks the Messages API."""

    def count_tokens(self, **request: Any) -> int:
        return len(json.dumps(request["messages"])) // 4


class FakeAnthropic:
    """Stands in for `anthropic.Anthropic()` behind a real `harness.models.backends.Backend`:
    `.messages.create` answers through a FakeClient and returns an SDK-like response."""

    def __init__(self, reply: Callable[[dict[str, Any]], Any] | None = None):
        self.fake = FakeClient(reply)
        self.messages = self

    def with_options(self, **_options: Any) -> FakeAnthropic:
        return self  # the endpoint check's retries and timeout change nothing here

    def create(self, model: str, extra_body: dict | None = None, **request: Any) -> SimpleNamespace:
        try:
            response = dict(self.fake.create(**request))
        except Exception as exc:  # the SDK's own error, as the real client raises it
            raise (exc.__cause__ or exc) from None
        return SimpleNamespace(model_dump=lambda **_: {**response, "type": "message", "role": "assistant"})

    def count_tokens(self, model: str, **request: Any) -> SimpleNamespace:
        return SimpleNamespace(input_tokens=self.fake.count_tokens(**request))
