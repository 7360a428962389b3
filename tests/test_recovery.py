"""The recovery arm (`<strategy>+recovery`, docs/frameworks.md): after compaction the agent may
search what was folded before it answers a probe or takes its next step. On crafted cases: a fact
folded and found by search is recalled, a fact never in the transcript is not, the cap holds, and
what the searches cost is recorded."""

import json

import pytest
from fakes import FakeClient
from test_run import oracle

from harness.errors import InputError
from harness.execution.agent import AGENT_SYSTEM
from harness.execution.evals import load_eval
from harness.execution.executors import run_eval
from harness.execution.recovery import NO_RESULTS, SEARCH_TOOL, Archive, folded, search_tool, searches_in
from harness.inputs.evalfile import RecoverySettings
from harness.records import read_jsonl


def test_the_archive_finds_the_passage_that_holds_the_words():
    archive = Archive(
        [
            {"role": "user", "content": "My locker code is 4471. Please remember it."},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "Booking QX-19 ok."}]},
            {"role": "assistant", "content": "Noted."},
        ]
    )
    assert archive.search("booking reference", results=3, snippet_tokens=48) == ["tool result: Booking QX-19 ok."]
    # Any of the words matches (BM25 ranks those with more, and rarer, first): a question finds both.
    assert len(archive.search("What is my booking reference?", results=3, snippet_tokens=48)) == 2
    assert archive.search('locker "code" (NEAR*', results=1, snippet_tokens=48)[0].startswith("user: My locker code")
    assert archive.search("zebra", results=3, snippet_tokens=48) == []
    assert archive.search("?!", results=3, snippet_tokens=48) == []  # no words: nothing to match


def test_folded_is_what_the_compacted_history_no_longer_holds_verbatim():
    a, b, c = ({"role": "user", "content": text} for text in "abc")
    summary = {"role": "user", "content": "[summary of a]"}
    assert folded([a, b, c], [summary, b, c]) == [a]


def test_the_cap_holds():
    tool = search_tool(Archive([{"role": "user", "content": "locker 4471"}]), RecoverySettings(max_searches=2))
    assert tool.run(query="locker") == tool.run(query="locker") == "user: locker 4471"
    with pytest.raises(RuntimeError, match="no searches left"):
        tool.run(query="locker")
    assert search_tool(Archive([]), RecoverySettings()).run(query="locker") == NO_RESULTS


def searcher(query=None):
    """A fake agent that, offered the search, searches once for the question's words (or `query`),
    then answers by repeating everything it can see, search results included; otherwise the oracle."""

    def reply(request):
        offered = SEARCH_TOOL in [t["name"] for t in request.get("tools", [])]
        last = request["messages"][-1]["content"]
        if offered and isinstance(last, str) and last.endswith("?"):
            return [{"type": "tool_use", "id": "s1", "name": SEARCH_TOOL, "input": {"query": query or last}}]
        if offered:
            return json.dumps(request["messages"])
        return oracle(request)

    return reply


def _eval(eval_file, strategies, extra=""):
    eval_file.write_text(
        eval_file.read_text()
        .replace("strategies: [summary, truncate, none, no-history]", f"strategies: {strategies}")
        .replace('budgets: [150, "100%"]', "budgets: [150]")
        + extra
    )
    return eval_file


def _records(run_dir):
    return {(r["strategy"], r["fact"]): r for r in read_jsonl(run_dir / "records.jsonl")}


def test_a_folded_fact_found_by_search_is_recalled(eval_file, tmp_path):
    path = _eval(eval_file, "[truncate, truncate+recovery]")
    client = FakeClient(searcher())
    records = _records(run_eval(load_eval(path), client, tmp_path / "results", progress=False))
    without, recovered = records["truncate", "booking"], records["truncate+recovery", "booking"]
    assert without["location"] == recovered["location"] == "gone"  # dropped by truncate, the same in both
    assert without["verdict"] == "forgot" and without["searches"] is None
    assert recovered["verdict"] == "recalled" and recovered["searches"] == 1 and recovered["found_by_search"]
    assert recovered["requests"] == 2 and recovered["input_tokens"] > without["input_tokens"]  # what it cost
    searched = [r for r in client.requests if any(t["name"] == SEARCH_TOOL for t in r.get("tools", []))]
    assert searched and all(r["system"].startswith(AGENT_SYSTEM) and "search_history" in r["system"] for r in searched)


def test_a_fact_never_in_the_transcript_is_not_found(eval_file, tmp_path):
    # The booking's answer is a paraphrase that no message states: nothing to find, nothing recalled.
    scenario = eval_file.parent / "locker.yaml"
    scenario.write_text(scenario.read_text().replace("answer: QX-19,", "answer: ZZ-42, literal: false,"))
    path = _eval(eval_file, "[truncate+recovery]")
    records = _records(run_eval(load_eval(path), FakeClient(searcher()), tmp_path / "results", progress=False))
    booking = records["truncate+recovery", "booking"]
    assert booking["searches"] == 1 and booking["found_by_search"] is False and booking["verdict"] == "forgot"


def test_a_search_that_misses_recalls_nothing(eval_file, tmp_path):
    path = _eval(eval_file, "[truncate+recovery]")
    records = _records(run_eval(load_eval(path), FakeClient(searcher("zebra")), tmp_path / "results", progress=False))
    booking = records["truncate+recovery", "booking"]
    assert booking["searches"] == 1 and booking["found_by_search"] is False and booking["verdict"] == "forgot"


def test_an_agent_that_keeps_searching_is_stopped_at_the_cap(eval_file, tmp_path):
    def insists(request):
        if SEARCH_TOOL in [t["name"] for t in request.get("tools", [])]:
            n = len(request["messages"])
            return [{"type": "tool_use", "id": f"s{n}", "name": SEARCH_TOOL, "input": {"query": "booking"}}]
        return oracle(request)

    path = _eval(eval_file, "[truncate+recovery]", "recovery: {max_searches: 2}\n")
    run_dir = run_eval(load_eval(path), FakeClient(insists), tmp_path / "results", progress=False)
    for record in read_jsonl(run_dir / "records.jsonl"):
        assert record["searches"] == 2 and record["verdict"] != "error"  # refused after two; it ends
        assert record["answer"].startswith("(stopped after")


def test_searches_are_read_from_the_history_the_model_saw():
    messages = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": SEARCH_TOOL, "input": {"query": "x"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "user: x is 4"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "b", "name": SEARCH_TOOL, "input": {"query": "y"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "no", "is_error": True}]},
    ]
    searches = searches_in(messages)
    assert searches.queries == ["x"] and searches.found(lambda text: "4" in text)


@pytest.mark.parametrize("base", ["none", "no-history"])
def test_recovery_needs_a_strategy_that_compacts(eval_file, base):
    with pytest.raises(InputError, match="never compacts, so there is nothing to search"):
        load_eval(_eval(eval_file, f"[summary, {base}+recovery]"))


def _coding_eval(tmp_path, settings: str):
    """An eval on a generated coding session, compacted inside its tool loop, with `settings` added."""
    from pathlib import Path

    scenario = Path(__file__).parents[1] / "scenarios" / "agent" / "coding-1-000.yaml"
    path = tmp_path / "coding.yaml"
    path.write_text(f'name: coding\nscenarios: [{scenario}]\nbudgets: ["60%"]\ncut: steps\nkeep_recent: 2\n{settings}')
    return path


def test_next_step_with_recovery_searches_then_steps(tmp_path):
    """At a cut, the compacted agent may search before its step; the ceiling may not."""
    path = _coding_eval(tmp_path, "strategies: [truncate, truncate+recovery]\nprobes: false\nnext_action: true\n")

    def reply(request):
        tools = [t["name"] for t in request.get("tools", [])]
        last = request["messages"][-1]["content"]
        searched = isinstance(last, list) and any(b.get("tool_use_id") == "s" for b in last)
        if SEARCH_TOOL in tools and not searched:
            return [{"type": "tool_use", "id": "s", "name": SEARCH_TOOL, "input": {"query": "pozipa"}}]
        return [{"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "pytest -q"}}]

    client = FakeClient(reply)
    run_dir = run_eval(load_eval(path), client, tmp_path / "results", progress=False)
    actions = {a["strategy"]: a for a in read_jsonl(run_dir / "actions.jsonl")}
    assert actions["truncate"]["searches"] is None
    recovered = actions["truncate+recovery"]
    assert recovered["searches"] == 1 and recovered["compacted"] == actions["truncate"]["compacted"]
    assert recovered["requests"] == actions["truncate"]["requests"] + 1  # the search cost one more request


def test_the_report_pairs_recall_with_and_without_search(eval_file, tmp_path):
    from harness.records import load_run
    from harness.reports.comparisons import recovery_arm

    path = _eval(eval_file, "[truncate, truncate+recovery, summary]")
    run = load_run(run_eval(load_eval(path), FakeClient(searcher()), tmp_path / "results", progress=False))
    table = recovery_arm(run)
    assert list(table.index) == ["truncate+recovery"]  # one row per strategy with the arm
    row = table.loc["truncate+recovery"]
    with_search = run.records[run.records["strategy"] == "truncate+recovery"]
    without = run.records[run.records["strategy"] == "truncate"]
    assert row["recall"] == f"{(with_search['verdict'] == 'recalled').mean():.0%}"
    assert row["same facts without"] == f"{(without['verdict'] == 'recalled').mean():.0%}"
    assert row["searches per probe"] == "1.00" and row["requests per probe"] == "2.00"
    assert row["reading"] == "too few scenarios to tell"  # one scenario: it says so instead of deciding


def test_every_request_is_tagged_with_its_purpose_and_the_plan_counts_compactions_by_it(tmp_path):
    """The recovery arm and the next step add to the agent's system prompt; neither is a compaction.
    The plan's compaction requests are the run's summaries, one a compaction event."""
    from harness.execution.rehearsal import estimate, longest_reply

    settings = "prompts: [seed]\nstrategies: [summary, summary+recovery]\nprobe: {sample: 2}\nnext_action: true\n"
    ev = load_eval(_coding_eval(tmp_path, settings))
    client = FakeClient(lambda request: longest_reply(request)["content"])
    run_dir = run_eval(ev, client, tmp_path / "results", progress=False)
    summaries = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["summary"] is not None]
    assert {"compaction", "probe", "next-step"} <= set(client.purposes)
    assert client.purposes.count("compaction") == len(summaries) > 0
    searching = [p for r, p in zip(client.requests, client.purposes) if SEARCH_TOOL in json.dumps(r.get("tools"))]
    assert searching and set(searching) <= {"probe", "next-step"}  # the arm's requests: never compactions
    plan = estimate(ev, "fake", {}, None)
    assert plan.compaction.requests == len(summaries)
    assert plan.direct.requests == len(client.requests)
