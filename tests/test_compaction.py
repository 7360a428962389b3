"""The seed's tests for compaction, plus a property test over random histories."""

import io
import random

from fakes import FakeClient
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.compaction.context import CompactionContext, CompactionSettings
from harness.compaction.seed import ACKNOWLEDGEMENT, compact, truncate
from harness.execution.agent import Agent, Tool, ToolRegistry
from harness.messages import exchange_starts, history_size, render_message
from harness.records.schema import CompactionEvent

SUMMARY_SETTINGS = CompactionSettings(summary_prompt="SUMMARISE", keep_recent=1)


def summariser(request):
    return "SUMMARY" if request.get("system") == "SUMMARISE" else "a long answer " * 20


def test_render_message_covers_all_three_shapes():
    user = {"role": "user", "content": "What is 2+2?"}
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me compute."},
            {"type": "tool_use", "id": "t1", "name": "calculator", "input": {"expression": "2+2"}},
        ],
    }
    results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "4"}]}
    assert render_message(user) == "user: What is 2+2?"
    assert render_message(assistant) == (
        "assistant: Let me compute.\nassistant called calculator({'expression': '2+2'})"
    )
    assert render_message(results) == "tool result: 4"
    assert history_size([user, results]) == len("user: What is 2+2?") + len("tool result: 4")


def test_short_history_passes_through_untouched():
    client = FakeClient()
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    events = []
    assert compact(history, CompactionContext(client=client, limit=1200, events=events)) is history
    assert client.requests == [] and events == []


def test_tool_result_message_is_not_an_exchange_boundary():
    history = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a1"}]},
        {"role": "user", "content": "q2"},
    ]
    assert exchange_starts(history) == [0, 4]


def test_three_turn_run_folds_oldest_exchange_and_keeps_latest_verbatim():
    client = FakeClient(summariser)
    out = io.StringIO()
    agent = Agent(client=client, limit=600, settings=SUMMARY_SETTINGS, output_stream=out)
    agent.ask("Tell me about the Eiffel Tower in detail")
    agent.ask("And the Louvre?")
    assert agent.events == []  # two exchanges still fit
    agent.ask("And Notre-Dame?")
    assert "[compact] folded 2 messages into a summary" in out.getvalue()
    assert [m["content"] for m in agent.messages[:2]] == ["[Conversation summary: SUMMARY]", ACKNOWLEDGEMENT]
    assert agent.messages[2]["content"] == "And the Louvre?"  # the latest old exchange is verbatim
    assert agent.messages[4]["content"] == "And Notre-Dame?"
    (event,) = agent.events
    assert event.folded_messages == 2 and event.summary == "SUMMARY"
    assert event.size_after < event.size_before
    summary_request = client.requests[2]
    assert summary_request["system"] == "SUMMARISE"
    assert summary_request["messages"][0]["content"].startswith("user: Tell me about the Eiffel Tower")


def test_everything_recent_is_left_alone_even_over_budget():
    client = FakeClient()
    history = [{"role": "user", "content": "x" * 5000}, {"role": "assistant", "content": "y"}]
    assert compact(history, CompactionContext(client=client, limit=100)) is history


def test_summary_without_text_leaves_history_and_records_the_event():
    client = FakeClient(lambda request: [])
    history = [
        {"role": "user", "content": "a" * 500},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "d"},
    ]
    events: list[CompactionEvent] = []
    assert compact(history, CompactionContext(client=client, limit=100, events=events)) == history
    assert events[0].error == "summary response had no text block" and events[0].folded_messages == 0


def test_keep_recent_keeps_that_many_exchanges():
    client = FakeClient(lambda request: "S")
    history = []
    for i in range(5):
        history += [{"role": "user", "content": f"q{i} " * 50}, {"role": "assistant", "content": f"a{i}"}]
    result = compact(history, CompactionContext(client=client, limit=100, settings=CompactionSettings(keep_recent=3)))
    assert [m["content"] for m in result[2::2]] == [history[i]["content"] for i in (4, 6, 8)]


def test_token_budget_uses_the_servers_count():
    client = FakeClient(lambda request: "S")
    history = [
        {"role": "user", "content": "word " * 400},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "b"},
    ]
    tokens = CompactionSettings(unit="tokens")
    assert compact(history, CompactionContext(client=client, limit=10_000, settings=tokens)) is history
    events = []
    compact(history, CompactionContext(client=client, limit=200, settings=tokens, events=events))
    assert events[0].unit == "tokens" and events[0].size_before == client.count_tokens(messages=history)


def test_truncate_drops_without_a_summary():
    client = FakeClient()
    history = [
        {"role": "user", "content": "a" * 500},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "d"},
    ]
    assert truncate(history, CompactionContext(client=client, limit=100)) == history[2:]
    assert client.requests == []


def _random_history(rng: random.Random) -> list[dict]:
    """Exchanges of random shape: plain replies, or tool calls with their results."""
    history = []
    for turn in range(rng.randint(1, 8)):
        history.append({"role": "user", "content": "u" * rng.randint(1, 300)})
        for call in range(rng.randint(0, 3)):
            tid = f"t{turn}_{call}"
            history.append(
                {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "f", "input": {"x": call}}]}
            )
            history.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": tid, "content": "r" * rng.randint(1, 300)}],
                }
            )
        history.append({"role": "assistant", "content": [{"type": "text", "text": "a" * rng.randint(1, 300)}]})
    return history


def _check_well_formed(history: list[dict]) -> None:
    roles = [m["role"] for m in history]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:]))
    for i, message in enumerate(history):
        content = message["content"]
        if isinstance(content, list):
            uses = [b["id"] for b in content if b["type"] == "tool_use"]
            if uses:  # every tool_use is answered by the very next message
                answered = [b["tool_use_id"] for b in history[i + 1]["content"]]
                assert answered == uses
            for b in content:
                if b["type"] == "tool_result":  # and every tool_result follows its tool_use
                    assert b["tool_use_id"] in [u["id"] for u in history[i - 1]["content"] if u["type"] == "tool_use"]


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 10**6), budget=st.integers(0, 3000), keep=st.integers(0, 3), fold_twice=st.booleans())
def test_compaction_never_splits_a_tool_call_and_keeps_roles_alternating(seed, budget, keep, fold_twice):
    rng = random.Random(seed)
    client = FakeClient(lambda request: "S" * rng.randint(0, 50))
    compaction = CompactionSettings(keep_recent=keep)
    history = compact(_random_history(rng), CompactionContext(client=client, limit=budget, settings=compaction))
    _check_well_formed(history)
    if fold_twice:  # a second round of turns folds the previous summary too
        history += _random_history(rng)
        history = compact(history, CompactionContext(client=client, limit=budget, settings=compaction))
        _check_well_formed(history)


def test_error_harness_turns_failing_and_unknown_tools_into_error_results():
    def broken():
        raise RuntimeError("disk on fire")

    calls = iter(
        [
            [
                {"type": "tool_use", "id": "a", "name": "broken", "input": {}},
                {"type": "tool_use", "id": "b", "name": "missing", "input": {}},
            ],
            "recovered",
        ]
    )
    client = FakeClient(lambda request: next(calls))
    agent = Agent(
        client=client,
        tools=ToolRegistry([Tool(name="broken", description="fails", input_schema={"type": "object"}, run=broken)]),
        output_stream=io.StringIO(),
    )
    assert agent.ask("go") == "recovered"
    results = agent.messages[2]["content"]
    assert results[0] == {
        "type": "tool_result",
        "tool_use_id": "a",
        "content": "Error: RuntimeError: disk on fire",
        "is_error": True,
    }
    assert results[1]["is_error"] and "unknown tool 'missing'" in results[1]["content"]
    assert client.requests[1]["tools"][0]["name"] == "broken"
