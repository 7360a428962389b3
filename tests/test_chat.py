"""`harness chat` shows what compaction did: each summary, the history against the budget, cut replies."""

import io

from fakes import FakeClient

from harness.compaction.context import CompactionSettings
from harness.execution.agent import Agent
from harness.execution.chat import chat
from harness.models.client import Reply


class Cutting(FakeClient):
    """Summaries say SUMMARY; replies are long and, past the first, cut at the token limit."""

    def create(self, **request):
        reply = super().create(**request)
        if len(self.requests) > 1 and request.get("system") != "sum":
            return Reply({**reply, "stop_reason": "max_tokens"})
        return reply


def _chat(show_summaries=True):
    client = Cutting(lambda r: "SUMMARY" if r.get("system") == "sum" else "x" * 300)
    out = io.StringIO()
    agent = Agent(client=client, limit=500, settings=CompactionSettings(summary_prompt="sum"), output_stream=out)
    chat(agent, io.StringIO("first question\nsecond question\nthird\nquit\n"), show_summaries=show_summaries)
    return out.getvalue()


def test_chat_shows_summaries_sizes_and_cut_replies():
    out = _chat()
    assert "[summary] SUMMARY" in out
    assert out.count("[history ") == 3 and "/500 chars]" in out
    assert out.count("[cut at the token limit]") == 2  # the first reply ended on its own


def test_summaries_can_be_hidden():
    out = _chat(show_summaries=False)
    assert "[summary]" not in out and "[compact] folded" in out
