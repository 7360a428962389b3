"""The OpenHands SDK's LLMSummarizingCondenser through the strategy seam (docs/frameworks.md): it
runs unchanged on OpenHands events made from our histories, its summary written through the
harness's client with the eval's settings; its knobs come from the eval; its failures are the
case's errors. Needs the `openhands` extra (Python 3.12+)."""

import importlib
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from fakes import FakeClient

from harness.compaction.context import CompactionContext, CompactionSettings
from harness.errors import InputError
from harness.execution.evals import load_eval
from harness.execution.executors import run_eval
from harness.inputs.scenario_file import load_scenario
from harness.messages import content_text, history_problem
from harness.records import read_jsonl

pytest.importorskip("openhands.sdk")
from harness.adapters import openhands as adapter  # noqa: E402  (only with the extra installed)

ROOT = Path(__file__).parents[1]
SESSIONS = sorted((ROOT / "scenarios" / "agent").glob("*.yaml")) + sorted(
    (ROOT / "scenarios" / "agent-gate").glob("*.yaml")
)
OPENHANDS_PROMPT = "You are maintaining a context-aware state summary for an interactive agent."
STRATEGY = "harness.adapters.openhands:summarizing"


def _blocks(history, kind):
    return [b for m in history if isinstance(m["content"], list) for b in m["content"] if b["type"] == kind]


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_shipped_agent_session_survives_the_round_trip_to_openhands(path):
    history = load_scenario(path).scripted_history()
    events = adapter.to_openhands(history)
    assert adapter.from_openhands(events, history) == history
    # What OpenHands would send its model: every call with its input, every result with its text.
    calls = [e.tool_call for e in events if e.kind == "ActionEvent"]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [
        (b["id"], b["name"], b.get("input") or {}) for b in _blocks(history, "tool_use")
    ]
    observations = [e for e in events if e.kind == "ObservationEvent"]
    assert [(o.tool_call_id, o.observation.text) for o in observations] == [
        (b["tool_use_id"], content_text(b.get("content") or "")) for b in _blocks(history, "tool_result")
    ]
    assert all(o.tool_name != "unknown" and o.action_id for o in observations)  # each answers its call


def test_a_message_the_condenser_splits_keeps_only_its_kept_blocks():
    history = [
        {"role": "user", "content": "Fix the build."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Running it."},
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "make"}},
                {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "error: E42", "is_error": True},
                {"type": "tool_result", "tool_use_id": "t2", "content": "x = 1"},
                {"type": "text", "text": "Also keep the tests green."},
            ],
        },
    ]
    events = adapter.to_openhands(history)
    assert [e.id for e in events] == ["0", "1.0", "1.1", "2.0", "2.1", "2.2"]
    assert events[3].observation.is_error and not events[4].observation.is_error
    kept = [e for e in events if e.id not in {"1.1", "2.1"}]
    assert adapter.from_openhands(kept, history) == [
        history[0],
        {"role": "assistant", "content": history[1]["content"][:2]},
        {"role": "user", "content": [history[2]["content"][0], history[2]["content"][2]]},
    ]


@pytest.fixture
def session():
    """A coding session as it stands before a model call (compaction's moment): tool results last."""
    history = load_scenario(ROOT / "scenarios" / "agent" / "coding-1-000.yaml").scripted_history()
    return history[: max(i for i, m in enumerate(history) if m["role"] == "user") + 1]


def _context(client, limit, **settings):
    return CompactionContext(client=client, limit=limit, settings=CompactionSettings(**settings))


def test_the_condensers_summary_is_written_by_our_client_with_the_evals_settings(session):
    client = FakeClient(lambda request: "USER_CONTEXT: fix the KeyError. PENDING: rerun the tests.")
    result = adapter.summarizing.function(session, _context(client, limit=1000, summary_max_tokens=123))
    (request,) = client.requests
    assert request["max_tokens"] == 123 and request["system"].startswith(OPENHANDS_PROMPT)  # its own prompt
    assert "<EVENT>" in content_text(request["messages"][0]["content"])  # its own rendering of events
    assert history_problem(result) is None and len(result) < len(session)
    assert result[0] == session[0]  # keep_first: the task stays
    # The summary is user text after the kept first events (joined to the user turn it follows).
    summary = [m for m in result if "USER_CONTEXT" in content_text(m["content"])]
    assert len(summary) == 1 and summary[0]["role"] == "user" and result[-1] == session[-1]  # the newer half stays


def test_under_the_limit_nothing_runs_unless_its_own_event_cap_is_passed(session):
    client = FakeClient(lambda request: "summary")
    assert adapter.summarizing.function(session, _context(client, limit=10**9)) == session
    assert not client.requests
    events = len(adapter.to_openhands(session))
    options = {"max_size": events - 1, "keep_first": 1}  # its own trigger, set from the eval
    result = adapter.summarizing.function(session, _context(client, limit=10**9, options=options))
    assert len(client.requests) == 1 and len(result) < len(session) and history_problem(result) is None


def _eval(tmp_path, strategies, options=""):
    path = tmp_path / "frameworks.yaml"
    path.write_text(
        f"""name: frameworks
scenarios: [{ROOT / "scenarios" / "agent" / "coding-1-000.yaml"}]
budgets: ["60%"]
cut: steps
keep_recent: 2
prompts: [seed]
strategies: {strategies}
probes: false
summary_max_tokens: 150
{options}"""
    )
    return path


def test_a_run_measures_the_condenser_and_records_its_version(tmp_path):
    path = _eval(tmp_path, [STRATEGY], f'strategy_options:\n  "{STRATEGY}": {{keep_first: 3}}\n')
    client = FakeClient(lambda request: "USER_CONTEXT: the task failed with a KeyError in darutu/pozipa.py.")
    run_dir = run_eval(load_eval(path), client, tmp_path / "results", progress=False)
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    assert compactions and all(c["error"] is None and c["folded_messages"] > 0 for c in compactions)
    assert all(c["input_tokens"] > 0 and c["summary"] for c in compactions)
    retention = read_jsonl(run_dir / "retention.jsonl")
    assert retention and all(r["error"] is None and r["retained"] is not None for r in retention)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["strategies"][STRATEGY]["packages"]["openhands-sdk"] == metadata.version("openhands-sdk")
    assert manifest["eval"]["strategy_options"] == {STRATEGY: {"keep_first": 3}}


@pytest.mark.parametrize(
    ("reply", "message"),
    [("", "returned no summary"), (None, "Summarization LLM call failed")],
    ids=["returns-nothing", "raises"],
)
def test_the_condenser_failing_is_the_cases_error(tmp_path, reply, message):
    def answer(request):
        if OPENHANDS_PROMPT not in request.get("system", ""):
            return "summary"
        if reply is None:
            raise RuntimeError("the summariser is down")
        return reply

    path = _eval(tmp_path, [STRATEGY, "summary"])
    run_dir = run_eval(load_eval(path), FakeClient(answer), tmp_path / "results", progress=False)
    retention = read_jsonl(run_dir / "retention.jsonl")
    theirs = [r for r in retention if r["strategy"] == STRATEGY]
    assert theirs and all("StrategyError" in r["error"] and message in r["error"] for r in theirs)
    ours = [r for r in retention if r["strategy"] == "summary"]
    assert ours and all(r["error"] is None for r in ours)  # the rest of the run is measured


def test_a_setting_the_condenser_does_not_take_is_an_error_on_its_line(tmp_path):
    path = _eval(tmp_path, [STRATEGY], f'strategy_options:\n  "{STRATEGY}": {{keep_last: 3}}\n')
    with pytest.raises(InputError, match=r"frameworks\.yaml:1[01].*has no setting 'keep_last'"):
        load_eval(path)


def test_without_the_extra_the_error_is_one_line_naming_the_install(monkeypatch):
    for name in [n for n in sys.modules if n == "openhands" or n.startswith("openhands.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    monkeypatch.delitem(sys.modules, "harness.adapters.openhands")
    with pytest.raises(ImportError, match=re.escape("pip install 'compaction-harness[openhands]'")):
        importlib.import_module("harness.adapters.openhands")


@pytest.mark.slow
def test_importing_the_adapter_leaves_the_output_and_the_network_alone():
    # OpenHands configures the root logger on import (every HTTP request at INFO), prints a banner,
    # and LiteLLM fetches its price list; the adapter turns all three off, in a fresh interpreter.
    code = (
        "import logging; before = (logging.getLogger().level, len(logging.getLogger().handlers))\n"
        "import harness.adapters.openhands\n"
        "assert (logging.getLogger().level, len(logging.getLogger().handlers)) == before, before\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "OpenHands SDK v" not in done.stdout + done.stderr and "cost map" not in done.stderr
