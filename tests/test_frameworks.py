"""The frameworks' own compactors through the strategy seam (docs/frameworks.md): Inspect AI's
CompactionSummary, CompactionEdit and CompactionTrim run unchanged on our histories, with Inspect's
model layer over the harness's client; their knobs come from the eval; their failures are the
case's errors. (The locks that pin every framework by hash: test_locks.py.)"""

import importlib
import json
import re
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
from harness.messages import content_text, history_problem, render_message
from harness.records import read_jsonl

inspect_ai = pytest.importorskip("inspect_ai")
from harness.adapters import inspect_ai as adapter  # noqa: E402  (only with the extra installed)

ROOT = Path(__file__).parents[1]
SESSIONS = sorted((ROOT / "scenarios" / "agent").glob("*.yaml")) + sorted(
    (ROOT / "scenarios" / "agent-gate").glob("*.yaml")
)
INSPECTS_PROMPT = "You are a helpful AI assistant tasked with summarizing conversations."
ADAPTER = "harness.adapters.inspect_ai"


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_shipped_agent_session_survives_the_round_trip_to_inspect(path):
    history = load_scenario(path).scripted_history()
    converted = adapter.to_inspect(history)
    assert adapter.from_inspect(converted) == history
    # Every tool result became Inspect's tool message, answering the call it answers, by name.
    results = [b for m in history if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result"]
    tools = [m for m in converted if m.role == "tool"]
    assert [(t.tool_call_id, t.text) for t in tools] == [
        (b["tool_use_id"], render_message({"role": "user", "content": [b]})[len("tool result: ") :]) for b in results
    ]
    assert all(t.function for t in tools)


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_shipped_agent_session_survives_the_round_trip_to_langchain(path):
    pytest.importorskip("langchain.agents.middleware.summarization")
    from harness.adapters import langchain

    history = load_scenario(path).scripted_history()
    converted = langchain._to_langchain(history)
    assert langchain._ours(converted, history) == history
    # One LangChain message per tool result, answering its call, with the result's text.
    results = [b for m in history if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result"]
    assert [(m.tool_call_id, m.text) for m in converted if m.type == "tool"] == [
        (b["tool_use_id"], content_text(b.get("content") or "")) for b in results
    ]


def test_blocks_inspect_holds_differently_come_back_as_they_were():
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
                {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "x = 1"}]},
                {"type": "text", "text": "Also keep the tests green."},
            ],
        },
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t3", "name": "bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t3", "content": ""}]},
    ]
    converted = adapter.to_inspect(history)
    assert converted[2].error is not None and converted[2].function == "bash"
    assert adapter.from_inspect(converted) == history


def _context(client, limit, **settings):
    return CompactionContext(client=client, limit=limit, settings=CompactionSettings(**settings))


@pytest.fixture
def session():
    """A coding session as it stands before a model call (compaction's moment): tool results last."""
    history = load_scenario(ROOT / "scenarios" / "agent" / "coding-1-000.yaml").scripted_history()
    return history[: max(i for i, m in enumerate(history) if m["role"] == "user") + 1]


def test_inspects_summary_is_written_by_our_client_with_the_evals_settings(session):
    client = FakeClient(lambda request: "<summary>The task, the error E42 and the plan.</summary>")
    context = _context(client, limit=1000, summary_max_tokens=123, options={"instructions": "Keep every path."})
    result = adapter.summary.function(session, context)
    (request,) = client.requests
    assert request["max_tokens"] == 123
    prompt = content_text(request["messages"][-1]["content"])  # after the conversation, as Inspect sends it
    assert INSPECTS_PROMPT in prompt and "Keep every path." in prompt  # Inspect's prompt, our instructions in it
    # Inspect keeps the first user turn and puts its summary after it: one user message, as it joins them.
    assert len(result) == 1 and result[0]["role"] == "user"
    assert result[0]["content"].startswith(session[0]["content"])
    assert "[CONTEXT COMPACTION SUMMARY]" in result[0]["content"] and "error E42" in result[0]["content"]


def test_with_our_prompt_inspect_sends_ours_and_under_the_limit_nothing_runs(session):
    client = FakeClient(lambda request: "summary")
    ours = "List every file and command {verbatim}."  # braces are ours, not Inspect's placeholders
    assert adapter.summary_with_prompt.function(session, _context(client, limit=10**9, summary_prompt=ours)) == session
    assert not client.requests
    adapter.summary_with_prompt.function(session, _context(client, limit=1000, summary_prompt=ours))
    prompt = client.requests[-1]["messages"][-1]["content"][-1]["text"]
    assert prompt.startswith(ours) and INSPECTS_PROMPT not in prompt


@pytest.mark.parametrize("keep", [0, 2, 5])
def test_inspects_edit_keeps_as_many_tool_results_as_the_eval_says(session, keep):
    client = FakeClient()
    result = adapter.edit.function(session, _context(client, limit=1000, options={"keep_tool_uses": keep}))
    results = [b for m in result if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result"]
    intact = [b for b in results if b["content"] != "(Tool result removed)"]
    assert len(intact) == keep and not client.requests and history_problem(result) is None
    assert [b["tool_use_id"] for b in results] == [
        b["tool_use_id"] for m in session if isinstance(m["content"], list) for b in m["content"] if "tool_use_id" in b
    ]


def test_inspects_trim_keeps_the_task_and_the_share_it_is_told_to(session):
    long_kept = adapter.trim.function(session, _context(FakeClient(), limit=1000, options={"preserve": 0.8}))
    short_kept = adapter.trim.function(session, _context(FakeClient(), limit=1000, options={"preserve": 0.3}))
    assert long_kept[0] == short_kept[0] == session[0]
    assert len(session) > len(long_kept) > len(short_kept) and long_kept[-1] == session[-1]
    assert history_problem(long_kept) is None and history_problem(short_kept) is None


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


def test_a_run_measures_inspects_compactors_and_records_their_versions(tmp_path):
    strategies = [f"{ADAPTER}:summary", f"{ADAPTER}:edit", f"{ADAPTER}:trim"]
    path = _eval(tmp_path, strategies, f'strategy_options:\n  "{ADAPTER}:edit": {{keep_tool_uses: 1}}\n')
    client = FakeClient(lambda request: "The task failed with a KeyError; darutu/pozipa.py is being fixed.")
    run_dir = run_eval(load_eval(path), client, tmp_path / "results", progress=False)
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    assert {c["strategy"] for c in compactions} == set(strategies)
    assert all(c["error"] is None and c["folded_messages"] > 0 for c in compactions)
    summary = [c for c in compactions if c["strategy"] == strategies[0]]
    assert all(c["chunks"] == 1 and c["input_tokens"] > 0 for c in summary)
    assert all(r["max_tokens"] == 150 for r in client.requests if INSPECTS_PROMPT in str(r["messages"]))
    retention = [r for r in read_jsonl(run_dir / "retention.jsonl") if r["strategy"] in strategies]
    assert retention and all(r["error"] is None and r["retained"] is not None for r in retention)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert all(
        metadata.version("inspect-ai") in manifest["strategies"][name]["packages"].values() for name in strategies
    )
    assert manifest["eval"]["strategy_options"] == {f"{ADAPTER}:edit": {"keep_tool_uses": 1}}  # as run


@pytest.mark.parametrize(
    ("compact", "message"),
    [
        (lambda self, model, messages, tools: (_ for _ in ()).throw(RuntimeError("boom")), "RuntimeError: boom"),
        (lambda self, model, messages, tools: ([], None), "it returned no messages"),
    ],
    ids=["raises", "returns-nothing"],
)
def test_inspect_raising_or_returning_nothing_is_the_cases_error(tmp_path, monkeypatch, compact, message):
    async def broken(self, model, messages, tools):
        return compact(self, model, messages, tools)

    monkeypatch.setattr(inspect_ai.model.CompactionTrim, "compact", broken)
    path = _eval(tmp_path, [f"{ADAPTER}:trim", "summary"])
    run_dir = run_eval(load_eval(path), FakeClient(lambda r: "summary"), tmp_path / "results", progress=False)
    retention = read_jsonl(run_dir / "retention.jsonl")
    theirs = [r for r in retention if r["strategy"] == f"{ADAPTER}:trim"]
    assert theirs and all("StrategyError" in r["error"] and message in r["error"] for r in theirs)
    ours = [r for r in retention if r["strategy"] == "summary"]
    assert ours and all(r["error"] is None for r in ours)  # the rest of the run is measured


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (f'strategy_options:\n  "{ADAPTER}:edit": {{keep_tools: 1}}\n', "has no setting 'keep_tools': it takes "),
        (
            "strategy_options:\n  summary: {keep_tool_uses: 1}\n",
            "summary has no setting 'keep_tool_uses': it takes none",
        ),
        (f'strategy_options:\n  "{ADAPTER}:trim": {{preserve: 0.5}}\n', "is not one of this eval's strategies"),
    ],
)
def test_a_setting_no_strategy_takes_is_an_error_on_its_line(tmp_path, options, error):
    path = _eval(tmp_path, [f"{ADAPTER}:edit", "summary"], options)
    with pytest.raises(InputError) as raised:
        load_eval(path)
    assert error in str(raised.value) and re.search(r"frameworks\.yaml:1[01]", str(raised.value))


def test_without_the_extra_the_error_is_one_line_naming_the_install(tmp_path, monkeypatch):
    for name in [n for n in sys.modules if n == "inspect_ai" or n.startswith("inspect_ai.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    monkeypatch.delitem(sys.modules, ADAPTER)
    with pytest.raises(ImportError, match=re.escape("pip install 'compaction-harness[inspect]'")):
        importlib.import_module(ADAPTER)
    with pytest.raises(InputError, match=re.escape("pip install 'compaction-harness[inspect]'")):
        load_eval(_eval(tmp_path, [f"{ADAPTER}:summary"]))


def _one_request(path: Path, to: Path) -> Path:
    """A coding agent's usual session: one request, then only tool steps (the first exchange of a
    generated session, its facts cut to what that exchange plants)."""
    import yaml

    data = yaml.safe_load(path.read_text())
    turns = data["turns"]
    turns = turns[: next(i for i, t in enumerate(turns) if i and "user" in t)]
    for turn in turns:
        for fact in turn.get("facts", []):
            if "item_turns" in fact:
                keep = [i for i, at in enumerate(fact["item_turns"]) if at < len(turns)]
                fact["items"] = [fact["items"][i] for i in keep]
                fact["item_turns"] = [fact["item_turns"][i] for i in keep]
                fact["done"] = [d for d in fact.get("done", []) if d in fact["items"]]
    turns[-1]["assistant"].setdefault("final", "Done.")
    to.write_text(yaml.safe_dump({**data, "id": "one-request", "turns": turns}, sort_keys=False))
    return to


def test_langchain_cuts_inside_the_tool_loop_under_cut_steps(session):
    """keep_recent counts steps under `cut: steps`: a session whose user lines all sit early is still
    compacted, keeping its last steps; counted in exchanges (`cut: turns`) everything is recent."""
    pytest.importorskip("langchain.agents.middleware.summarization")
    from harness.adapters import langchain

    client = FakeClient(lambda request: "The task, the error E42 and the plan.")
    by_turns = langchain.summarization(session, _context(client, limit=1000, keep_recent=2, cut="turns"))
    assert by_turns == session and not client.requests
    by_steps = langchain.summarization(session, _context(client, limit=1000, keep_recent=2, cut="steps"))
    assert len(client.requests) == 1 and len(by_steps) < len(session) and history_problem(by_steps) is None
    assert "error E42" in content_text(by_steps[0]["content"])
    assert by_steps[-4:] == session[-4:]  # the last two steps, each call with its result


@pytest.mark.parametrize("source", ["generated", "imported"])
def test_frameworks_compact_a_one_request_session_and_edits_in_place_are_measured(tmp_path, source):
    """One request, many tool steps: LangChain compacts it, and Inspect's edit (results cleared in
    place, every call kept) has its folded facts measured in the history it leaves."""
    pytest.importorskip("langchain.agents.middleware.summarization")
    scenario = (
        _one_request(ROOT / "scenarios" / "agent" / "coding-1-000.yaml", tmp_path / "one.yaml")
        if source == "generated"
        else ROOT / "scenarios" / "agent" / "test-repo-i1.yaml"  # SWE-agent's log: one issue, then steps
    )
    edit, summarization = f"{ADAPTER}:edit", "harness.adapters.langchain:summarization"
    path = (
        _eval(tmp_path, [edit, summarization])
        .read_text()
        .replace(str(ROOT / "scenarios" / "agent" / "coding-1-000.yaml"), str(scenario))
    )
    (tmp_path / "frameworks.yaml").write_text(path.replace('["60%"]', '["50%"]'))
    client = FakeClient(lambda request: "The task failed with a KeyError; a fix is under way.")
    run_dir = run_eval(load_eval(tmp_path / "frameworks.yaml"), client, tmp_path / "results", progress=False)
    compactions = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["folded_messages"]]
    retention = read_jsonl(run_dir / "retention.jsonl")
    for strategy in (edit, summarization):
        assert any(c["strategy"] == strategy for c in compactions), strategy
        assert any(r["strategy"] == strategy and r["retained"] is not None for r in retention), strategy
    edits = [c for c in compactions if c["strategy"] == edit]
    assert all(c["edited"] > 0 and c["first_verbatim_turn"] > 0 for c in edits)
    if source == "generated":  # its identifiers sit in results the edit clears
        assert any(r["strategy"] == edit and r["retained"] is False for r in retention)
