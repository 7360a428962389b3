"""The alternatives to a summary prompt: observation masking and tool-result clearing (local, no
model), and Anthropic's server-side compaction and context editing against a fake Messages server
that implements the API's shapes (tests/messages_server.py)."""

from pathlib import Path

import pytest
import yaml
from fakes import FakeClient

from harness.cli import main
from harness.compaction.context import CompactionContext, CompactionSettings, ToolClearing
from harness.compaction.tool_results import CLEARED, CLEARED_INPUT, clear_old_results, mask_observations
from harness.messages import history_problem, opens_with_compaction
from harness.records import read_jsonl

# A session whose facts live in a user line and in four tool results (each padded with log lines),
# one of them a value the agent also repeats in its own words.
PAD = "\n" + "INFO nothing to report\n" * 8
SESSION = {
    "id": "logs",
    "description": "Facts in tool results, cleared or kept.",
    "tools": [
        {"name": "read_log", "description": "Read a log.", "result": "(empty)"},
        {"name": "read_config", "description": "Read the config.", "result": "(empty)"},
    ],
    "turns": [
        {
            "user": "Check the logs. My ticket is TCK-4471.",
            "assistant": {
                "tool_calls": [
                    {
                        "tool": "read_log",
                        "input": {"path": "build.log"},
                        "result": "build B-90210 failed on step lint" + PAD,
                    }
                ]
            },
            "facts": [
                {"id": "ticket", "kind": "identifier", "answer": "TCK-4471", "probe": "What is my ticket?"},
                {"id": "build", "kind": "identifier", "answer": "B-90210", "probe": "Which build failed?"},
            ],
        },
        {
            "assistant": {
                "tool_calls": [
                    {
                        "tool": "read_config",
                        "input": {"path": "deploy.cfg"},
                        "result": "region eu-north-7, replicas 5" + PAD,
                    }
                ]
            },
            "facts": [{"id": "region", "kind": "name", "answer": "eu-north-7", "probe": "Which region is configured?"}],
        },
        {
            "assistant": {
                "text": "Deploy D-31337 is the one to check.",
                "tool_calls": [
                    {"tool": "read_log", "input": {"path": "deploy.log"}, "result": "deploy D-31337 rolled back" + PAD}
                ],
            },
            "facts": [
                {"id": "deploy", "kind": "identifier", "answer": "D-31337", "probe": "Which deploy rolled back?"}
            ],
        },
        {
            "assistant": {
                "tool_calls": [
                    {
                        "tool": "read_log",
                        "input": {"path": "commit.log"},
                        "result": "commit C-77777 is the culprit" + PAD,
                    }
                ],
                "final": "The culprit is the last commit.",
            },
            "facts": [
                {"id": "commit", "kind": "identifier", "answer": "C-77777", "probe": "Which commit is the culprit?"}
            ],
        },
        {"user": "Thanks. Anything else?", "assistant": "No."},
    ],
}


def run_strategies(tmp_path, monkeypatch, strategies, tool_results, budget="10%"):
    (tmp_path / "logs.yaml").write_text(yaml.safe_dump(SESSION, sort_keys=False))
    (tmp_path / "e.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "alt",
                "scenarios": ["logs.yaml"],
                "budgets": [budget],
                "strategies": strategies,
                "cut": "steps",
                "probes": False,
                "tool_results": tool_results,
            }
        )
    )
    fake = FakeClient()
    monkeypatch.setattr("harness.execution.executors.open_for", lambda ev, *_, **__: fake)
    assert main(["run", str(tmp_path / "e.yaml"), "--results", str(tmp_path / "r"), "--quiet"]) == 0
    run_dir = next((tmp_path / "r" / "runs").iterdir())
    assert fake.calls == 0  # neither strategy asks the model anything
    return run_dir


def last_retention(run_dir, strategy):
    """Each fact's retention at the last compaction that checked it."""
    rows = [r for r in read_jsonl(run_dir / "retention.jsonl") if r["strategy"] == strategy]
    return {r["fact"]: r["retained"] for r in sorted(rows, key=lambda r: r["compaction"])}


def test_masking_retains_exactly_what_is_still_in_context(tmp_path, monkeypatch):
    run_dir = run_strategies(tmp_path, monkeypatch, ["mask-observations"], {"keep": 1})
    # At the end only the commit log's result is kept. The ticket is in a user line and the deploy in
    # the agent's own words: still in context. The build and the region lived only in cleared results.
    assert last_retention(run_dir, "mask-observations") == {
        "ticket": True,
        "build": False,
        "region": False,
        "deploy": True,
    }
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    assert all(c["edited"] > 0 and c["summary"] is None for c in compactions)
    assert compactions[-1]["size_after"] < compactions[-1]["size_before"]


def test_clearing_keeps_excluded_tools_and_can_clear_inputs(tmp_path, monkeypatch):
    run_dir = run_strategies(
        tmp_path, monkeypatch, ["clear-tool-results"], {"keep": 1, "exclude_tools": ["read_config"]}
    )
    assert last_retention(run_dir, "clear-tool-results") == {
        "ticket": True,
        "build": False,
        "region": True,
        "deploy": True,
    }


def test_clear_at_least_leaves_the_history_alone_when_too_little_would_go(tmp_path, monkeypatch):
    run_dir = run_strategies(tmp_path, monkeypatch, ["clear-tool-results"], {"keep": 1, "clear_at_least": 100_000})
    assert read_jsonl(run_dir / "compactions.jsonl") == []


def test_clearing_never_separates_a_call_from_its_result_and_clears_inputs_on_request():
    from harness.inputs.scenario import Scenario

    scenario = Scenario.model_validate(SESSION)
    history = scenario.scripted_history()
    cleared, uses = clear_old_results(history, keep=1, clear_inputs=("read_log",))
    assert [u.name for u in uses] == ["read_log", "read_config", "read_log"]
    assert history_problem(cleared) is None
    results = [b for m in cleared if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result"]
    assert [r["content"] for r in results] == [CLEARED, CLEARED, CLEARED, "commit C-77777 is the culprit" + PAD]
    inputs = [
        b["input"]
        for m in cleared
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    assert inputs == [{"path": CLEARED_INPUT}, {"path": "deploy.cfg"}, {"path": CLEARED_INPUT}, {"path": "commit.log"}]
    assert history[1]["content"][0]["input"] == {"path": "build.log"}  # the original history is untouched
    # Cleared results are not cleared again (nor counted twice).
    again, second = clear_old_results(cleared, keep=1)
    assert second == [] and again is cleared


def test_masking_works_between_user_turns_too():
    agent_history = [
        {"role": "user", "content": "Read both."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "r", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x" * 900}]},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "And now?"},
    ]
    events = []
    out = mask_observations(
        agent_history,
        CompactionContext(
            client=FakeClient(),
            limit=500,
            settings=CompactionSettings(tool_results=ToolClearing(keep=0)),
            events=events,
        ),
    )
    assert out[2]["content"][0]["content"] == "[Old tool output omitted: 900 characters.]"
    assert events[0].edited == 1 and history_problem(out) is None


# --- Anthropic's server-side strategies, against the fake Messages server ------------------------


SEED_PROMPT = Path(__file__).parents[1] / "harness" / "prompts" / "seed.txt"


def run_on_server(
    tmp_path,
    strategies,
    prompt_text="Keep every identifier.",
    probes=True,
    unit="chars",
    budget="40%",
    scenario=SESSION,
    **settings,
):
    from messages_server import MessagesServer

    prompt = tmp_path / "mine.txt"
    prompt.write_text(prompt_text)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    (tmp_path / "e.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "server",
                "scenarios": ["s.yaml"],
                "model": "claude-test",
                "budgets": [budget],
                "unit": unit,
                "prompts": [str(prompt)],
                "strategies": strategies,
                "cut": "steps",
                "probes": probes,
                **settings,
            }
        )
    )
    server = MessagesServer()
    with server:
        code = main(
            [
                "run",
                str(tmp_path / "e.yaml"),
                "--base-url",
                server.url,
                "--results",
                str(tmp_path / "r"),
                "--quiet",
                "--no-cache",
            ]
        )
    run_dir = next((tmp_path / "r" / "runs").iterdir())
    return code, server, run_dir


def test_on_demand_compaction_round_trips_its_block_and_carries_the_prompt(tmp_path, capsys):
    code, server, run_dir = run_on_server(tmp_path, ["anthropic-compact"])
    assert code == 0
    compacting = [r for r in server.requests if "compaction" in r]
    assert compacting and all(
        r["compaction"] == {"type": "summarize", "instructions": "Keep every identifier."}
        and "compact-2026-09-04" in r["_betas"]
        for r in compacting
    )
    # Every later request opens with the block exactly as the server issued it (else it would refuse:
    # every record would be an error).
    records = read_jsonl(run_dir / "records.jsonl")
    assert records and all(r["error"] is None for r in records)
    later = [r for r in server.requests if "compaction" not in r and opens_with_compaction(r["messages"])]
    assert later and all(
        r["messages"][0]["content"][0] == server.issued[r["messages"][0]["content"][0]["signature"]] for r in later
    )
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    assert compactions and all(c["summary"].startswith("Instructions: Keep every identifier.") for c in compactions)
    # The server's summarisation iterations are metered (they are not in the top-level usage).
    assert all(c["input_tokens"] > 0 and c["output_tokens"] > 0 for c in compactions)
    retention = read_jsonl(run_dir / "retention.jsonl")
    assert {r["fact"]: r["retained"] for r in retention if r["fact"] in ("ticket", "build")} == {
        "ticket": True,
        "build": True,
    }  # the fake's summary keeps user lines and tool results


def test_the_servers_own_prompt_sends_no_instructions(tmp_path):
    code, server, _ = run_on_server(tmp_path, ["anthropic-compact-default"], probes=False)
    assert code == 0
    assert [r["compaction"] for r in server.requests if "compaction" in r][0] == {"type": "summarize"}


def test_a_summary_the_server_could_not_write_is_its_own_outcome(tmp_path, capsys):
    code, server, run_dir = run_on_server(tmp_path, ["anthropic-compact"], prompt_text="FAIL on purpose", probes=False)
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    assert compactions and all(
        c["error"] == "the server returned no summary (compaction content null)" and c["folded_messages"] == 0
        for c in compactions
    )
    assert read_jsonl(run_dir / "retention.jsonl") == []  # nothing folded, so nothing blamed on the prompt
    assert "server returned no summary" in capsys.readouterr().out


def test_the_fake_refuses_a_dropped_altered_or_moved_block():
    import anthropic
    from messages_server import MessagesServer

    history = [
        {"role": "user", "content": "Remember TCK-4471."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Go on."},
    ]
    with MessagesServer() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0)
        reply = client.beta.messages.create(
            model="claude-test",
            max_tokens=50,
            messages=history[:2],
            betas=["compact-2026-09-04"],
            compaction={"type": "summarize"},
        )
        block = reply.model_dump(exclude_none=True)["content"][0]
        good = [{"role": "assistant", "content": [block]}, history[2]]
        assert client.messages.create(model="claude-test", max_tokens=5, messages=good).content[0].text == "ok"
        bad = {
            "dropped": history,
            "altered": [{"role": "assistant", "content": [{**block, "content": "Something else."}]}, history[2]],
            "moved": [
                history[2],
                {"role": "assistant", "content": [{"type": "text", "text": "x"}, block]},
                {"role": "user", "content": "?"},
            ],
        }
        for messages in bad.values():
            with pytest.raises(anthropic.BadRequestError):
                client.messages.create(model="claude-test", max_tokens=5, messages=messages)


def test_context_editing_records_what_the_server_cleared(tmp_path):
    code, server, run_dir = run_on_server(
        tmp_path, ["anthropic-context-editing"], probes=False, budget="30%", tool_results={"keep": 1}
    )
    assert code == 0
    edits = [r for r in server.requests if "context_management" in r]
    assert edits and all(
        r["context_management"]["edits"][0]
        == {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "tool_uses", "value": 2},
            "keep": {"type": "tool_uses", "value": 1},
        }
        and "context-management-2025-06-27" in r["_betas"]
        for r in edits
    )
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    assert compactions and all(
        c["edited"] > 0 and c["cleared_input_tokens"] > 0 and c["error"] is None for c in compactions
    )
    # Retention follows what was cleared: the build and region lived only in results the server cleared.
    assert last_retention(run_dir, "anthropic-context-editing") == {
        "ticket": True,
        "build": False,
        "region": False,
        "deploy": True,
    }


def test_automatic_compaction_fires_at_its_trigger(tmp_path):
    from harness.sources.generators.coding import Options, session
    from harness.sources.importers.session import to_scenario

    log, _ = session(Options(steps=30, file_chars=40_000, seed=5), 0)  # about 70,000 tokens by the fake's count
    scenario = to_scenario(
        log,
        {
            0: [
                {
                    "id": "task",
                    "kind": "recall",
                    "answer": log.exchanges[0].user.split(";")[0],
                    "match": "f1",
                    "probe": "What task did I give you?",
                }
            ]
        },
    )
    code, server, run_dir = run_on_server(
        tmp_path, ["anthropic-auto-compact"], probes=False, unit="tokens", budget="50000", scenario=scenario
    )
    assert code == 0
    auto = [r for r in server.requests if "context_management" in r]
    assert auto and auto[0]["context_management"]["edits"][0] == {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": 50000},
        "pause_after_compaction": True,
    }
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    assert compactions and compactions[0]["summary"] and compactions[0]["size_after"] < compactions[0]["size_before"]


def test_the_embedded_model_gets_a_one_line_refusal_and_claude_strategies_are_skipped(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(SESSION, sort_keys=False))
    (tmp_path / "e.yaml").write_text(
        f"name: e\nscenarios: [s.yaml]\nbudgets: ['40%']\nprompts: ['{SEED_PROMPT}']\n"
        "strategies: [summary, anthropic-compact]\n"
    )
    assert main(["validate", str(tmp_path / "e.yaml")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "e.yaml:5: strategies[1]: anthropic-compact needs Claude's Messages API" in err
    assert main(["run", str(tmp_path / "e.yaml"), "--results", str(tmp_path / "r")]) == 1
    assert "needs Claude's Messages API" in capsys.readouterr().err and not (tmp_path / "r" / "runs").exists()
    (tmp_path / "e.yaml").write_text(
        f"name: e\nscenarios: [s.yaml]\nbudgets: ['40%']\nprompts: ['{SEED_PROMPT}']\n"
        "strategies: [summary]\nclaude_strategies: [anthropic-compact]\n"
    )
    assert main(["validate", str(tmp_path / "e.yaml")]) == 0
    assert "skipped on the embedded model (they need Claude's API): anthropic-compact" in capsys.readouterr().out
    (tmp_path / "e.yaml").write_text(
        "name: e\nscenarios: [s.yaml]\nmodel: claude-x\nbudgets: ['40%']\nstrategies: [anthropic-auto-compact]\n"
    )
    assert main(["validate", str(tmp_path / "e.yaml")]) == 1
    assert "set unit: tokens" in capsys.readouterr().err
