"""Compaction inside one long exchange (cut: steps), set facts with partial credit, the recorded
strategy, and a context window that overflows: with fake models whose right answers are known."""

import io
import json
import re
from pathlib import Path

import anthropic
import httpx
import pytest
import yaml
from fakes import FakeClient
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.compaction.context import CompactionSettings
from harness.execution.agent import AGENT_SYSTEM, Agent, Tool, ToolRegistry
from harness.inputs.scenario import Scenario
from harness.messages import cut_points, history_problem, history_size
from harness.records import read_jsonl
from harness.scoring.matchers import Expectation, SetMatch, Target
from harness.scoring.verdict import verdict
from harness.sources.generators.coding import Options as CodingOptions
from harness.sources.generators.coding import session
from harness.sources.importers.session import to_scenario

DATA = Path(__file__).parent / "data"
SEED_PROMPT = Path(__file__).parents[1] / "harness" / "prompts" / "seed.txt"


def summariser(request):
    """Summaries are short and say so; a probe gets a fixed answer."""
    return "SUMMARY of earlier steps." if request.get("system") != AGENT_SYSTEM else "ok"


# --- a property: steps mode over generated sessions -------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    steps=st.integers(30, 45),
    file_chars=st.integers(300, 1500),
    seed=st.integers(0, 10_000),
    share=st.floats(0.15, 0.6),
    keep=st.integers(1, 3),
    chunk=st.sampled_from([None, 3000]),
)
def test_steps_mode_compacts_at_the_budget_and_never_splits_a_tool_pair(steps, file_chars, seed, share, keep, chunk):
    log, _ = session(CodingOptions(steps=steps, file_chars=file_chars, seed=seed), 0)
    scenario = Scenario.model_validate(to_scenario(log, {}))
    assert sum(not t.continues for t in scenario.turns) == 2 and len(scenario.turns) == steps  # a message mid-session
    budget = int(share * history_size(scenario.scripted_history()))
    agent = Agent(
        client=FakeClient(summariser),
        limit=budget,
        output_stream=io.StringIO(),
        settings=CompactionSettings(cut="steps", keep_recent=keep, max_transcript_chars=chunk, summary_max_tokens=64),
    )
    for index, turn in enumerate(scenario.turns):
        size, compactions = history_size(agent.messages), len(agent.events)
        more_than_kept = len(cut_points(agent.messages, steps=True)) > keep
        agent.compact()
        # It compacts exactly when the history is over the budget and holds more than the kept steps.
        assert (len(agent.events) > compactions) == (size > budget and more_than_kept)
        assert history_problem(agent.messages) is None
        agent.messages += turn.messages(index)
        assert history_problem(agent.messages) is None
    assert agent.events, "a session over its budget must compact"
    assert all(e.folded_messages > 0 and e.summary for e in agent.events)


def test_steps_mode_compacts_inside_a_live_tool_loop():
    """The model calls a tool seven times in one exchange (the agent's limit is eight rounds); with
    cut: steps the agent compacts before model calls in the loop, keeping the last two steps, and
    every request it sends is valid."""
    calls = iter(range(7))

    def model(request):
        if request.get("system") != AGENT_SYSTEM:
            return "SUMMARY"
        assert history_problem(request["messages"]) is None  # the API would accept every request
        n = next(calls, None)
        return "done" if n is None else [{"type": "tool_use", "id": f"t{n}", "name": "read", "input": {"n": n}}]

    tools = ToolRegistry(
        [Tool(name="read", description="read a file", input_schema={"type": "object"}, run=lambda **_: "x" * 1000)]
    )
    agent = Agent(
        client=FakeClient(model),
        tools=tools,
        limit=3000,
        output_stream=io.StringIO(),
        settings=CompactionSettings(cut="steps", keep_recent=2),
    )
    assert agent.ask("Read all seven files.") == "done"
    assert len(agent.events) >= 3
    assert history_problem(agent.messages) is None
    # Between user turns only (the seed's rule), the same loop never compacts.
    calls = iter(range(7))
    seed_rule = Agent(client=FakeClient(model), tools=tools, limit=3000, output_stream=io.StringIO())
    seed_rule.ask("Read all seven files.")
    assert seed_rule.events == []


def test_a_token_budget_compacts_by_the_models_count():
    client = FakeClient(summariser)  # counts a token every 4 characters of the messages' JSON
    log, _ = session(CodingOptions(steps=30, seed=1), 0)
    scenario = Scenario.model_validate(to_scenario(log, {}))
    agent = Agent(
        client=client, limit=2000, output_stream=io.StringIO(), settings=CompactionSettings(cut="steps", unit="tokens")
    )
    for index, turn in enumerate(scenario.turns):
        agent.compact()
        agent.messages += turn.messages(index)
    assert agent.events and all(e.unit == "tokens" and e.size_before > 2000 for e in agent.events)


# --- set facts --------------------------------------------------------------------------------


FILES = Expectation("a.py, lib/b.py, docs/c.md", items=("src/a.py", "lib/b.py", "docs/c.md"), matcher=SetMatch())


@pytest.mark.parametrize(
    "answer, share, outcome, extras",
    [
        ("I changed src/a.py, lib/b.py and docs/c.md.", 1.0, "recalled", 0),
        ("I edited a.py and c.md.", 2 / 3, "recalled", 0),  # a path by its file name counts
        ("Only lib/b.py.", 1 / 3, "forgot", 0),
        ("I did not change any files.", 0.0, "forgot", 0),
        ("src/a.py, lib/b.py, docs/c.md, and also setup.py and tests/test_x.py", 1.0, "recalled", 2),
    ],
)
def test_set_facts_get_partial_credit_and_untouched_paths_are_counted(answer, share, outcome, extras):
    matcher = FILES.matcher
    assert matcher.score(answer, FILES) == pytest.approx(share)
    assert matcher.extras(answer, FILES) == extras
    assert verdict(answer, Target(FILES, matcher=FILES.matcher)) == outcome


# --- the recorded strategy --------------------------------------------------------------------


def write_recorded_eval(tmp_path: Path, summary: str) -> Path:
    """A Claude Code log with five derivable facts before its compaction, whose recorded summary
    is `summary`; imported, and an eval of the recorded strategy over it."""
    lines = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {
                "role": "user",
                "content": "Port the exporter to the new API. Never touch vendor/legacy_sdk.py.",
            },
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Bash",
                        "input": {"command": "python -m exporter --dry-run"},
                    }
                ],
            },
        },
        {
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a1",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": 'Traceback (most recent call last):\n  File "exporter/cli.py", line 9\n'
                        "ImportError: cannot import name 'Batcher' from 'sdk.v2'",
                    }
                ],
            },
        },
        {
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "r1",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "Edit",
                        "input": {"file_path": "exporter/cli.py", "old_string": "a", "new_string": "b"},
                    }
                ],
            },
        },
        {
            "type": "user",
            "uuid": "r2",
            "parentUuid": "a2",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": "The file exporter/cli.py has been updated.",
                    }
                ],
            },
        },
        {"type": "system", "subtype": "compact_boundary", "uuid": "c", "parentUuid": None, "logicalParentUuid": "r2"},
        {
            "type": "user",
            "uuid": "s",
            "parentUuid": "c",
            "isCompactSummary": True,
            "message": {"role": "user", "content": summary},
        },
        {"type": "user", "uuid": "u2", "parentUuid": "s", "message": {"role": "user", "content": "Carry on."}},
        {
            "type": "assistant",
            "uuid": "a3",
            "parentUuid": "u2",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        },
    ]
    log = tmp_path / "session.jsonl"
    log.write_text("\n".join(map(json.dumps, lines)) + "\n")
    assert main(["import", "claude-code", str(log), "--out", str(tmp_path / "scenarios")]) == 0
    eval_file = tmp_path / "recorded.yaml"
    eval_file.write_text(
        f"name: recorded\nscenarios: ['scenarios/*.yaml']\nbudgets: ['50%']\nprompts: ['{SEED_PROMPT}']\n"
        "strategies: [recorded, summary]\nprobes: false\n"
    )
    return eval_file


def test_the_recorded_strategy_measures_the_logs_own_summary_with_no_model_call(tmp_path, capsys, monkeypatch):
    # The summary keeps the error and the file, and loses the task and the prohibition.
    eval_file = write_recorded_eval(
        tmp_path, "We hit ImportError: cannot import name 'Batcher' from 'sdk.v2' and edited exporter/cli.py."
    )
    capsys.readouterr()
    fake = FakeClient(summariser)
    monkeypatch.setattr("harness.execution.executors.open_for", lambda ev, *_, **__: fake)
    assert main(["run", str(eval_file), "--results", str(tmp_path / "results"), "--quiet"]) == 0
    run_dir = next((tmp_path / "results" / "runs").iterdir())
    recorded = [r for r in read_jsonl(run_dir / "retention.jsonl") if r["strategy"] == "recorded"]
    # The file the traceback named and the agent then edited is also an identifier it reused.
    assert {r["fact"]: r["retained"] for r in recorded} == {
        "task": False,
        "constraint-1": False,
        "first-error": True,
        "files-changed": True,
        "reused-file-path-1": True,
    }
    assert [r["credit"] for r in recorded if r["fact"] == "files-changed"] == [1.0]
    assert re.search(r"^recorded +60% \(3/5;", capsys.readouterr().out, re.MULTILINE)
    # No summary was asked of the model for the recorded strategy (the summary strategy asked its own).
    recorded_compactions = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["strategy"] == "recorded"]
    assert len(recorded_compactions) == 1 and recorded_compactions[0]["input_tokens"] == 0


# --- the context window -------------------------------------------------------------------------


def test_a_probe_over_the_context_window_is_its_own_outcome(tmp_path, capsys, monkeypatch):
    def model(request):
        if request.get("system") == AGENT_SYSTEM and request["messages"][-1]["content"].endswith("?"):
            raise anthropic.BadRequestError(
                "request (9120 tokens) exceeds the available context size (8192 tokens)",
                response=httpx.Response(400, request=httpx.Request("POST", "http://x")),
                body={"error": {"type": "exceed_context_size_error"}},
            )
        return summariser(request)

    fake = FakeClient(model)
    monkeypatch.setattr("harness.execution.executors.open_for", lambda ev, *_, **__: fake)
    eval_file = tmp_path / "e.yaml"
    eval_file.write_text(
        f"name: overflow\nscenarios: ['{DATA / 'tiny.yaml'}']\nbudgets: ['50%']\n"
        f"prompts: ['{SEED_PROMPT}']\nstrategies: [summary]\n"
    )
    # Nothing could be measured: the run says so and exits 1, with every outcome recorded.
    assert main(["run", str(eval_file), "--results", str(tmp_path / "r"), "--quiet"]) == 1
    out = capsys.readouterr().out
    records = read_jsonl(next((tmp_path / "r" / "runs").iterdir()) / "records.jsonl")
    assert records and {r["verdict"] for r in records} == {"overflow"}
    assert all(r["error"].startswith("context window exceeded") for r in records)
    assert "context window exceeded" in out and "forgot" not in {r["verdict"] for r in records}


# --- sets that grow: the artifact trail at every cut ---------------------------------------------


def test_a_compaction_mid_session_scores_the_files_changed_so_far(tmp_path, monkeypatch):
    """Four files written at steps 1, 2, 6 and 7: a compaction before step 5 folds two of them, and its
    retention row scores those two (the summary names one: half credit, the other listed missing);
    the probe at the end places each file where it was (in the last summary, or gone: before the probe
    the last compaction keeps only the closing step verbatim)."""
    steps = [
        {
            "tool_calls": [
                {
                    "tool": "Write",
                    "input": {"file_path": f"src/{name}.py", "content": "x = 1"},
                    "result": f"Wrote src/{name}.py",
                }
            ]
        }
        if name
        else {"tool_calls": [{"tool": "Bash", "input": {"command": f"pytest -k case{n}"}, "result": "1 passed " * 20}]}
        for n, name in enumerate([None, "alpha", "beta", None, None, None, "gamma", "delta"])
    ]
    turns = [{"user": "Split the module into four files.", "assistant": steps[0]}] + [
        {"assistant": step} for step in steps[1:]
    ]
    turns[-1]["assistant"]["final"] = "Done."
    turns[0]["facts"] = [
        {
            "id": "files-changed",
            "kind": "artifact",
            "match": "set",
            "probe": "Which files did you write?",
            "items": [f"src/{n}.py" for n in ("alpha", "beta", "gamma", "delta")],
            "item_turns": [1, 2, 6, 7],
        }
    ]
    # A growing set is planted at its first item's turn.
    turns[1].setdefault("facts", []).append(turns[0].pop("facts")[0])
    (tmp_path / "s.yaml").write_text(
        yaml.safe_dump(
            {
                "id": "grow",
                "description": "d",
                "tools": [
                    {"name": "Write", "description": "w", "result": "ok"},
                    {"name": "Bash", "description": "b", "result": "ok"},
                ],
                "turns": turns,
            }
        )
    )
    eval_file = tmp_path / "e.yaml"
    eval_file.write_text(
        f"name: grow\nscenarios: [s.yaml]\nbudgets: [500]\ncut: steps\nkeep_recent: 1\n"
        f"prompts: ['{SEED_PROMPT}']\nstrategies: [summary]\n"
    )

    def model(request):
        if request.get("system") == AGENT_SYSTEM:  # the probe: the agent names two files
            return "I wrote src/alpha.py and src/gamma.py."
        return "Wrote alpha.py so far."  # every summary names only the first file

    monkeypatch.setattr("harness.execution.executors.open_for", lambda ev, *_, **__: FakeClient(model))
    assert main(["run", str(eval_file), "--results", str(tmp_path / "r"), "--quiet"]) == 0
    run_dir = next((tmp_path / "r" / "runs").iterdir())
    rows = [r for r in read_jsonl(run_dir / "retention.jsonl") if r["fact"] == "files-changed"]
    at_step_5 = next(r for r in rows if r["before_turn"] == 5)
    assert at_step_5["expected"] == "src/alpha.py, src/beta.py" and at_step_5["credit"] == 0.5
    assert at_step_5["missing"] == ["src/beta.py"] and at_step_5["value_turn"] == 2
    assert max(len(r["expected"].split(", ")) for r in rows) == 4  # later cuts fold all four
    from harness.reports.formats import text_report

    trail = text_report(run_dir).split("The artifact trail at every cut")[1]
    assert "cut 1" in trail and "50% (0.5/1;" in trail  # the first cut folded alpha and beta, named alpha
    (probe,) = read_jsonl(run_dir / "records.jsonl")
    assert probe["items"] == [
        {"item": "src/alpha.py", "location": "summary", "named": True},
        {"item": "src/beta.py", "location": "gone", "named": False},
        {"item": "src/gamma.py", "location": "gone", "named": True},
        {"item": "src/delta.py", "location": "gone", "named": False},
    ]
