"""The runner with fake clients: exact records, errors, resume after a crash, the cache."""

import json
from dataclasses import asdict
from pathlib import Path

import anthropic
import httpx2
import pytest
from fakes import FakeAnthropic, FakeClient

from harness.cli import main
from harness.errors import InputError
from harness.execution.agent import AGENT_SYSTEM
from harness.execution.cases import plan_cases
from harness.execution.evals import load_eval
from harness.execution.executors import run_eval
from harness.execution.runner import CaseRunner
from harness.models.backends import Backend
from harness.models.cache import ResponseCache
from harness.records import RunFolder, load_records, read_jsonl
from harness.reports.formats import text_report
from harness.reports.tables import mean_f1_by_budget, recall_by_budget, where_lost

# tests/data/locker: a scenario with a fact in a user line, one in a tool result and a
# supersession, and an eval running it at 150 characters and at 100% with every strategy.
EVAL = (Path(__file__).parent / "data" / "locker" / "unit.yaml").read_text()


def oracle(request):
    """A fake model that summarises by keeping only user lines, and answers a probe by
    repeating everything it can see (so it recalls exactly what the history still holds)."""
    if request["system"] != AGENT_SYSTEM:  # a summary request
        lines = request["messages"][0]["content"].splitlines()
        return " ".join(line for line in lines if line.startswith("user:"))
    question, history = request["messages"][-1]["content"], request["messages"][:-1]
    if not question.endswith("?"):
        return "Okay."
    return json.dumps(history) if history else "I don't know."


def run(eval_file, client, tmp_path, **kwargs):
    return run_eval(load_eval(eval_file), client, tmp_path / "results", progress=False, **kwargs)


def test_cases_cover_only_the_dimensions_each_strategy_uses(eval_file):
    ids = [c.id for c in plan_cases(load_eval(eval_file))]
    assert ids == [
        "locker/summary/150/user-lines/0",
        "locker/summary/100%/user-lines/0",
        "locker/truncate/150/-/0",
        "locker/truncate/100%/-/0",
        "locker/none/-/-/0",
        "locker/no-history/-/-/0",
    ]


def test_records_are_exactly_what_the_history_held(eval_file, tmp_path):
    run_dir = run(eval_file, FakeClient(oracle), tmp_path)
    records = {(r["case"], r["fact"]): r for r in read_jsonl(run_dir / "records.jsonl")}
    assert len(records) == 12
    outcome = {key: (r["location"], r["in_summary"], r["compactions"], r["verdict"]) for key, r in records.items()}
    assert outcome == {
        # 150 chars: turn 0 folds before turn 2, then turn 1 before the probe; the summary keeps
        # only user lines, so the booking (in a tool result) is gone while the locker stays verbatim
        ("locker/summary/150/user-lines/0", "locker"): ("verbatim", False, 0, "recalled"),
        ("locker/summary/150/user-lines/0", "booking"): ("gone", False, 1, "forgot"),
        # 100% of the scripted history: compaction fires only once the live reply is added
        ("locker/summary/100%/user-lines/0", "locker"): ("verbatim", False, 0, "recalled"),
        ("locker/summary/100%/user-lines/0", "booking"): ("gone", False, 1, "forgot"),
        ("locker/truncate/150/-/0", "locker"): ("verbatim", None, 0, "recalled"),
        ("locker/truncate/150/-/0", "booking"): ("gone", None, 1, "forgot"),
        ("locker/truncate/100%/-/0", "locker"): ("verbatim", None, 0, "recalled"),
        ("locker/truncate/100%/-/0", "booking"): ("gone", None, 1, "forgot"),
        ("locker/none/-/-/0", "locker"): ("verbatim", None, 0, "recalled"),
        ("locker/none/-/-/0", "booking"): ("verbatim", None, 0, "recalled"),
        ("locker/no-history/-/-/0", "locker"): ("none", None, 0, "abstained"),
        ("locker/no-history/-/-/0", "booking"): ("none", None, 0, "abstained"),
    }
    record = records[("locker/summary/150/user-lines/0", "locker")]
    assert record["expected"] == "4480" and record["superseded"] and record["planted_turn"] == 0
    assert record["prompt_hash"] and record["model"] == "fake" and record["limit"] == 150
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    assert {c["case"] for c in compactions} == {
        "locker/summary/150/user-lines/0",
        "locker/summary/100%/user-lines/0",
        "locker/truncate/150/-/0",
        "locker/truncate/100%/-/0",
    }
    first = compactions[0]
    assert first["summary"] == "user: My locker code is 4471. Please remember it."
    assert (first["before_turn"], first["first_verbatim_turn"], first["folded_messages"]) == (2, 1, 2)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["eval"]["name"] == "unit" and manifest["prompts"][0]["id"] == "user-lines"


def test_a_model_answering_the_old_value_is_scored_stale(eval_file, tmp_path):
    def stale(request):
        if request["system"] == AGENT_SYSTEM and request["messages"][-1]["content"] == "What is my locker code?":
            return "It is 4471."
        return oracle(request)

    records = read_jsonl(run(eval_file, FakeClient(stale), tmp_path) / "records.jsonl")
    assert {r["verdict"] for r in records if r["fact"] == "locker" and r["strategy"] != "no-history"} == {"stale"}


def _api_error():
    return anthropic.APIConnectionError(request=httpx2.Request("POST", "http://127.0.0.1/v1/messages"))


def test_model_errors_are_recorded_as_errors_never_as_forgetting(eval_file, tmp_path):
    def flaky(request):
        if request["system"] != AGENT_SYSTEM:
            raise _api_error()  # every summary call fails: the whole case is an error
        if "booking reference" in str(request["messages"][-1]["content"]):
            raise _api_error()  # this probe fails alone
        return oracle(request)

    run_dir = run(eval_file, FakeClient(flaky), tmp_path)
    records = read_jsonl(run_dir / "records.jsonl")
    verdicts = {(r["strategy"], r["budget"], r["fact"]): r["verdict"] for r in records}
    assert verdicts[("summary", "150", "locker")] == "error"
    assert verdicts[("summary", "150", "booking")] == "error"
    assert verdicts[("none", None, "locker")] == "recalled"
    assert verdicts[("none", None, "booking")] == "error"
    assert all(r["error"].startswith("APIConnectionError") for r in records if r["verdict"] == "error")
    assert recall_by_budget(load_records(run_dir)).loc["summary: user-lines", "errors"] == 4


class Crash(BaseException):
    """Stands in for SIGKILL: nothing after it runs, no handler catches it."""


def test_resume_after_a_crash_gives_exactly_the_uninterrupted_records(eval_file, tmp_path):
    reference = read_jsonl(run(eval_file, FakeClient(oracle), tmp_path / "a") / "records.jsonl")

    calls = 0

    def crashing(request):
        nonlocal calls
        calls += 1
        if calls == 9:  # in the middle of the second case
            raise Crash()
        return oracle(request)

    with pytest.raises(Crash):
        run(eval_file, FakeClient(crashing), tmp_path / "b")
    run_dir = next((tmp_path / "b" / "results" / "runs").iterdir())
    with (run_dir / "records.jsonl").open("a") as file:
        file.write('{"case": "locker/none/-/-/0", "fact": "lock')  # a line cut short by the crash
    finished = len(read_jsonl(run_dir / "cases.jsonl"))
    assert 0 < finished < 6

    client = FakeClient(oracle)
    run_eval(load_eval(eval_file), client, tmp_path / "b" / "results", resume=run_dir, progress=False)
    resumed = read_jsonl(run_dir / "records.jsonl")
    key = lambda r: (r["case"], r["fact"])
    assert sorted(map(key, resumed)) == sorted(map(key, reference))
    assert sorted(resumed, key=key) == sorted(reference, key=key)
    assert len(client.requests) < 20  # finished cases were not redone


def test_resume_refuses_a_changed_eval(eval_file, tmp_path):
    run_dir = run(eval_file, FakeClient(oracle), tmp_path)
    eval_file.write_text(EVAL.replace("budgets: [150", "budgets: [160"))
    with pytest.raises(InputError, match="changed since this run started"):
        run(eval_file, FakeClient(oracle), tmp_path, resume=run_dir)


def test_an_unchanged_rerun_is_served_from_the_cache(eval_file, tmp_path):
    cache = ResponseCache(tmp_path / "cache.sqlite")
    first = Backend(FakeAnthropic(oracle), "m", "fake", {"temperature": 0}, cache)
    records_1 = read_jsonl(run(eval_file, first, tmp_path / "1") / "records.jsonl")
    assert first.calls > 0
    second = Backend(FakeAnthropic(oracle), "m", "fake", {"temperature": 0}, cache)
    records_2 = read_jsonl(run(eval_file, second, tmp_path / "2") / "records.jsonl")
    assert second.calls == 0
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("latency_s", "cached")} for r in rs]
    assert strip(records_1) == strip(records_2)
    assert all(r["cached"] for r in records_2 if r["verdict"] != "error")
    other = Backend(FakeAnthropic(oracle), "m", "fake", {"temperature": 0.7}, cache)
    run(eval_file, other, tmp_path / "3")
    assert other.calls > 0  # different sampling: a different request, not a cache hit


def test_report_tables(eval_file, tmp_path):
    run_dir = run(eval_file, FakeClient(oracle), tmp_path)
    text = text_report(run_dir)
    assert "Recall by summary prompt and budget" in text and str(run_dir) in text
    df = load_records(run_dir)
    table = recall_by_budget(df)
    assert table.loc["summary: user-lines", "budget 150"] == "50% (1/2; 9%-91%)"
    assert table.loc["ceiling (full history)", "budget 150"] == "100% (2/2; 34%-100%)"
    assert table.loc["control: no history", "budget 100%"] == "0% (0/2; 0%-66%)"
    lost = where_lost(df)
    assert lost.loc["summary: user-lines", "lost: not in summary"] == 2
    assert lost.loc["truncate", "recalled"] == 2


def test_probes_mark_their_shared_prefix_for_prompt_caching(eval_file, tmp_path):
    client = FakeClient(oracle)
    client.prompt_caching = True
    run(eval_file, client, tmp_path)
    probes = [
        r
        for r in client.requests
        if r["messages"][-1]["content"] in ("What is my locker code?", "What is my booking reference?")
        and len(r["messages"]) > 1
    ]
    assert probes
    for request in probes:
        marked = [
            b
            for m in request["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if "cache_control" in b
        ]
        assert marked == [request["messages"][-2]["content"][-1]]  # one breakpoint, just before the probe
        assert marked[0]["cache_control"] == {"type": "ephemeral"}
    # The history itself is untouched: turns and compactions never see the marker.
    others = [r for r in client.requests if r not in probes]
    assert not any("cache_control" in json.dumps(r) for r in others)


def test_two_runs_in_the_same_second_get_their_own_folders(eval_file, tmp_path):
    first = run(eval_file, FakeClient(oracle), tmp_path)
    second = run(eval_file, FakeClient(oracle), tmp_path)
    assert first != second and first.parent == second.parent
    assert len(read_jsonl(second / "records.jsonl")) == len(read_jsonl(first / "records.jsonl"))


def test_each_request_kind_has_its_own_token_limit(eval_file, tmp_path):
    eval_file.write_text(EVAL + "summary_max_tokens: 30\nreply_max_tokens: 20\nprobe: {max_tokens: 10}\n")
    client = FakeClient(oracle)
    run(eval_file, client, tmp_path)
    questions = ("What is my locker code?", "What is my booking reference?")
    limits = {
        (
            "summary"
            if r["system"] != AGENT_SYSTEM
            else "probe"
            if r["messages"][-1]["content"] in questions
            else "live turn",
            r["max_tokens"],
        )
        for r in client.requests
    }
    assert limits == {("summary", 30), ("live turn", 20), ("probe", 10)}


def test_max_turns_plays_a_prefix_and_probes_only_what_it_planted(eval_file, tmp_path):
    eval_file.write_text(EVAL + "max_turns: 2\n")
    client = FakeClient(oracle)
    run_dir = run(eval_file, client, tmp_path)
    records = read_jsonl(run_dir / "records.jsonl")
    # The third turn (the live one that changes the locker code) is never played...
    assert not any("Change my locker" in json.dumps(r["messages"]) for r in client.requests)
    # ...so both facts are probed with the values they had after two turns.
    assert {(r["fact"], r["expected"]) for r in records} == {("locker", "4471"), ("booking", "QX-19")}
    assert {r["verdict"] for r in records if r["strategy"] == "none"} == {"recalled"}
    # 100% is a share of the two turns played: they fit, so nothing is compacted at that budget.
    assert not [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["budget"] == "100%"]
    assert "first 2 turns of each" in text_report(run_dir)


def test_free_form_answers_carry_their_token_f1_and_the_report_averages_it(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "id: move\ndescription: a free-form fact and an unanswerable one\nturns:\n"
        "  - user: I moved to Lisbon last spring, together with my sister.\n"
        "    assistant: Lisbon is lovely in spring.\n"
        "    facts:\n"
        "      - {id: city, kind: place, answer: 'Lisbon, my sister', match: f1, literal: false,\n"
        "         probe: 'Where did I move and with whom?'}\n"
        "      - {id: pet, kind: name, expect: abstain, probe: 'What is my dog called?'}\n"
    )
    (tmp_path / "e.yaml").write_text(
        "name: f1\nscenarios: [s.yaml]\nbudgets: ['100%']\nstrategies: [none, no-history]\n"
    )

    def reply(request):  # answers "Lisbon" when the history holds it: F1 0.5 against three words
        return "Lisbon." if "Lisbon" in json.dumps(request["messages"][:-1]) else "I don't know."

    run_dir = run(tmp_path / "e.yaml", FakeClient(reply), tmp_path)
    f1 = {(r["strategy"], r["fact"]): r["f1"] for r in read_jsonl(run_dir / "records.jsonl")}
    assert f1 == {
        ("none", "city"): 0.5,
        ("none", "pet"): None,
        ("no-history", "city"): 0.0,
        ("no-history", "pet"): None,
    }
    table = mean_f1_by_budget(load_records(run_dir))
    assert table.to_dict()["budget any"] == {
        "ceiling (full history)": "0.50 (n=1)",
        "control: no history": "0.00 (n=1)",
    }
    assert "Mean token F1 of free-form answers (LoCoMo's metric)" in text_report(run_dir)


def test_an_executor_can_send_the_probes_of_every_case_at_once(eval_file):
    """The runner's three steps serve an executor that plays all cases first, then sends every
    probe request of every case in one wave (here in reverse order, as a batch may return them),
    then scores: the records equal those of playing and probing one case at a time."""
    ev = load_eval(eval_file)
    cases = plan_cases(ev)
    one_at_a_time = CaseRunner(ev, FakeClient(oracle))
    expected = [asdict(r) for case in cases for r in one_at_a_time.run(case)[0]]

    client = FakeClient(oracle)
    runner = CaseRunner(ev, client)
    played = [runner.play(case) for case in cases]
    requests = [(p, r) for p in played for r in runner.probe_requests(p)]
    calls_before = client.calls
    answers = {id(r): r.agent.take(client.create(**r.agent.request())) for _, r in reversed(requests)}
    assert client.calls - calls_before == len(requests) == len(expected)  # one request per probe, no tool rounds
    records = [asdict(runner.score(p, r.fact, answers[id(r)], usage=r.agent.usage[0])) for p, r in requests]
    assert records == expected


def test_model_calls_add_up_across_resumes(eval_file, tmp_path):
    """A run stopped after some cases and resumed by another process reports every call made."""

    def crashing_after(n):
        client = FakeClient(oracle)

        def reply(request):
            if len(client.requests) > n:
                raise Crash()
            return oracle(request)

        client.reply = reply
        return client

    first = crashing_after(12)
    with pytest.raises(Crash):
        run(eval_file, first, tmp_path)
    run_dir = next((tmp_path / "results" / "runs").iterdir())
    assert json.loads((run_dir / "manifest.json").read_text())["model_calls"] > 0  # written as cases finish
    second = FakeClient(oracle)
    run(eval_file, second, tmp_path, resume=run_dir)
    finished_by_first = json.loads((run_dir / "manifest.json").read_text())["model_calls"] - second.calls
    assert 0 < finished_by_first <= first.calls


def test_a_run_folder_belongs_to_one_process_at_a_time(eval_file, tmp_path):
    run_dir = run(eval_file, FakeClient(oracle), tmp_path)
    records = (run_dir / "records.jsonl").read_text()
    with RunFolder(run_dir).locked():  # as another process still running it would
        with pytest.raises(InputError, match=r"in use by another run \(process \d+ on "):
            run(eval_file, FakeClient(oracle), tmp_path, resume=run_dir)
    assert (run_dir / "records.jsonl").read_text() == records  # nothing touched
    run(eval_file, FakeClient(oracle), tmp_path, resume=run_dir)  # released: resumable again


def test_subsets_run_part_of_an_eval_and_name_what_exists(eval_file, tmp_path, capsys, monkeypatch):
    ev = load_eval(eval_file, limit=2)
    assert [c.id for c in plan_cases(ev)] == ["locker/summary/150/user-lines/0", "locker/summary/100%/user-lines/0"]
    run_dir = run_eval(ev, FakeClient(oracle), tmp_path / "results", progress=False)
    assert {r["case"] for r in read_jsonl(run_dir / "records.jsonl")} == {c.id for c in plan_cases(ev)}
    assert json.loads((run_dir / "manifest.json").read_text())["eval"]["limit"] == 2  # what ran is on record
    (eval_file.parent / "terse.txt").write_text("Summarise tersely.")
    eval_file.write_text(
        eval_file.read_text().replace("prompts: [user-lines.txt]", "prompts: [user-lines.txt, terse.txt]")
    )
    assert {p.id for p in load_eval(eval_file, prompt_ids=["terse"]).prompts} == {"terse"}
    assert [s.id for s in load_eval(eval_file, scenario_ids=["locker"]).scenarios] == ["locker"]
    monkeypatch.setattr("harness.execution.executors.open_model", lambda *a, **k: pytest.fail("a model was opened"))
    for flag, value, message in (
        ("--scenario", "lockr", "no scenario 'lockr' in this eval (it has: locker)"),
        ("--prompt-id", "tarse", "no prompt 'tarse' in this eval (it has: user-lines, terse)"),
    ):
        assert main(["run", str(eval_file), flag, value, "--results", str(tmp_path)]) == 1
        assert capsys.readouterr().err.strip() == f"error: {flag}: {message}"
