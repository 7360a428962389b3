"""End to end against an embedded model in llama.cpp's server, in process. These tests check the
harness's mechanics, so they run on the fast one (SmolLM2-135M); what needs a model that follows
its prompts runs on the default (Qwen2.5-Coder-1.5B): test_qwen.py."""

import io
import json
from pathlib import Path

import anthropic
import pytest
import yaml
from browser import CHROMIUM, inspect_page

from harness.cli import main
from harness.compaction.context import CompactionSettings
from harness.compaction.seed import ACKNOWLEDGEMENT, SUMMARY_PREFIX
from harness.execution.agent import Agent
from harness.models.backends import open_model
from harness.records import read_jsonl
from harness.scoring.verdict import VERDICTS

pytestmark = pytest.mark.e2e
DATA = Path(__file__).parent / "data"
FAST = "smollm2-135m"  # mechanics, not judgement: the fast embedded model


@pytest.fixture(scope="module")
def local():
    return open_model(FAST)


def test_three_turns_compact_and_the_compacted_history_is_accepted(local):
    out = io.StringIO()
    agent = Agent(
        client=local, limit=600, max_tokens=96, output_stream=out, settings=CompactionSettings(summary_max_tokens=96)
    )
    for question in ["Tell me about the Eiffel Tower in detail.", "And the Louvre?", "And Notre-Dame?"]:
        assert agent.ask(question)
    assert "[compact] folded" in out.getvalue()
    event = agent.events[0]
    # A weak model's summary can be longer than what it replaced: recorded, not assumed away.
    assert event.summary and event.output_tokens > 0 and event.size_before > 600 and event.size_after > 0
    assert agent.messages[0]["content"].startswith(SUMMARY_PREFIX)
    assert agent.messages[1]["content"] == ACKNOWLEDGEMENT
    assert agent.messages[-2]["content"] == "And Notre-Dame?"  # the latest exchange is verbatim
    assert isinstance(agent.ask("What did you tell me first?"), str)  # the server takes the compacted history


def test_token_budget_counts_with_the_server(local):
    agent = Agent(
        client=local,
        limit=60,
        max_tokens=48,
        output_stream=io.StringIO(),
        settings=CompactionSettings(unit="tokens", summary_max_tokens=64),
    )
    agent.ask("My locker code is 4471.")
    agent.ask("What is a good name for a cat?")
    agent.ask("And for a dog?")
    assert agent.events and agent.events[0].unit == "tokens" and agent.events[0].size_before > 60


def test_server_is_local_only_and_needs_its_key(local):
    url = local.client.base_url
    assert url.host == "127.0.0.1"
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(base_url=str(url), api_key="wrong", max_retries=0).messages.create(
            model="x", max_tokens=4, messages=[{"role": "user", "content": "hi"}]
        )


def test_a_small_eval_end_to_end(tmp_path, capsys, monkeypatch):
    (tmp_path / "seed.txt").write_text((Path(__file__).parents[1] / "harness/prompts/seed.txt").read_text())
    for name in ("tiny.yaml", "tiny-tools.yaml"):
        (tmp_path / name).write_text((DATA / name).read_text())
    (tmp_path / "e.yaml").write_text(
        "name: e2e\nmodel: smollm2-135m\nscenarios: ['tiny*.yaml']\nbudgets: [300]\nprompts: [seed.txt]\n"
        "strategies: [summary, none, no-history]\nsummary_max_tokens: 96\nreply_max_tokens: 64\n"
        "probe: {max_tokens: 32}\n"
    )
    results = tmp_path / "results"
    command = ["run", str(tmp_path / "e.yaml"), "--results", str(results), "--quiet", "--judge", FAST]
    assert main(command) == 0
    printed = capsys.readouterr().out
    assert "Recall by summary prompt and budget" in printed and "summary: seed" in printed
    (run_dir,) = (results / "runs").iterdir()
    records = read_jsonl(run_dir / "records.jsonl")
    assert len(records) == 6  # 2 scenarios x 3 cases x 1 fact
    assert {r["verdict"] for r in records} <= set(VERDICTS)
    # The judge is asked only about answers the matcher calls `forgot`; a reply that is not
    # YES or NO from this small model is an error, never a silent `forgot`.
    for r in records:
        if r["verdict"] == "error":
            assert r["error"].startswith("judge: JudgeError")
        elif r["judge"] is not None:  # the judge was asked
            assert r["verdict"] == ("recalled" if r["judge"] else "forgot")
    summary_records = [r for r in records if r["strategy"] == "summary"]
    assert all(r["location"] in ("summary", "gone") and r["compactions"] >= 1 for r in summary_records)
    assert all(r["answer"] and r["input_tokens"] > 0 for r in records)
    assert any(r["judge"] is not None or r["verdict"] == "error" for r in records)
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    assert compactions and all(c["summary"] for c in compactions)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["model"].startswith("SmolLM2") and manifest["model_calls"] > 0

    # The same run again is served from the response cache: no model calls at all.
    assert main(command) == 0
    second = max((results / "runs").iterdir())
    assert json.loads((second / "manifest.json").read_text())["model_calls"] == 0
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("latency_s", "cached")} for r in rs]
    assert strip(read_jsonl(second / "records.jsonl")) == strip(records)


def test_action_probes_on_the_embedded_model(tmp_path, capsys):
    """evals/actions.yaml's sessions with their decision points, on the fast model: every case asks
    every action probe, each step is read and graded (or its error recorded), the pinning arm puts
    the user's rule back, and the report says which probes can tell."""
    root = Path(__file__).parents[1]
    eval_file = tmp_path / "actions.yaml"
    eval_file.write_text(
        (root / "evals" / "actions.yaml").read_text().replace("../scenarios/actions/", f"{root}/scenarios/actions/")
    )
    results = tmp_path / "results"
    command = ["run", str(eval_file), "--model", FAST, "--results", str(results), "--quiet"]
    assert main([*command, "--prompt-id", "seed", "--scenario", "orders-httpie"]) == 0
    (run_dir,) = (results / "runs").iterdir()
    steps = read_jsonl(run_dir / "action_probes.jsonl")
    # seed and keeps-nothing with and without the pin, masking, none and no-history: one decision point each.
    assert len(steps) == 7
    assert {s["strategy"] for s in steps} == {"summary", "summary+pin", "mask-observations", "none", "no-history"}
    # The pin put the user's rule back verbatim after each summary that folded it, whatever the summary said.
    rule = "We work inside the dev container: curl is not installed there, so never use curl;"
    pins = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["strategy"] == "summary+pin"]
    folded = [c for c in pins if c["folded_messages"] and c["error"] is None]
    assert folded and all(rule in c["pinned"] and c["pinned_size"] > 0 for c in folded)
    assert all((s["outcome"] in ("complies", "violates", "neither")) != bool(s["error"]) for s in steps)
    assert all(s["step"] and s["reason"] for s in steps if s["outcome"])
    assert {s["kind"] for s in steps} == {"constraint-tool"}
    assert "Action probes: can each kind tell?" in capsys.readouterr().out


def test_chat_command_shows_compaction(monkeypatch, capsys):
    lines = "Tell me about the Eiffel Tower in detail.\nAnd the Louvre?\nAnd Notre-Dame?\nquit\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    assert main(["chat", "--model", FAST, "--budget", "600", "--summary-max-tokens", "64"]) == 0
    out = capsys.readouterr().out
    assert out.count("agent> ") == 3 and "[compact] folded" in out


CONV = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "conv-26.json"


@pytest.mark.skipif(not CONV.exists(), reason=f"LoCoMo sample not found at {CONV}")
def test_a_locomo_slice_end_to_end(tmp_path, capsys):
    raw = json.loads(CONV.read_text())
    sessions = ("session_1", "session_2")
    conversation = {
        k: v for k, v in raw.items() if k in ("speaker_a", "speaker_b") or k.split("_date_time")[0] in sessions
    }
    qa = [q for q in raw["qa"] if q.get("evidence") and all(e.split(":")[0] in ("D1", "D2") for e in q["evidence"])]
    (tmp_path / "slice.json").write_text(json.dumps({**conversation, "qa": qa}))
    assert main(["import", "locomo", str(tmp_path / "slice.json"), "--out", str(tmp_path)]) == 0
    (tmp_path / "seed.txt").write_text((Path(__file__).parents[1] / "harness/prompts/seed.txt").read_text())
    (tmp_path / "e.yaml").write_text(
        "name: slice\nmodel: smollm2-135m\nscenarios: [slice.yaml]\nbudgets: ['40%']\nprompts: [seed.txt]\n"
        "strategies: [summary]\n"
        "summary_max_tokens: 96\nsummary_transcript_chars: 2000\nprobe: {max_tokens: 32, sample: 4}\n"
    )
    results = tmp_path / "results"
    assert main(["run", str(tmp_path / "e.yaml"), "--results", str(results), "--quiet"]) == 0
    assert "slice.yaml: 18 turns, 20 facts" in capsys.readouterr().out
    (run_dir,) = (results / "runs").iterdir()
    records = read_jsonl(run_dir / "records.jsonl")
    assert len(records) == 4 and not [r for r in records if r["verdict"] == "error"]
    assert all(r["kind"].startswith("locomo-") or r["kind"] == "temporal" for r in records)
    # LoCoMo's own metric scores every answer, the unanswerable category (5) included.
    assert all(r["f1"] is not None and 0 <= r["f1"] <= 1 for r in records)
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    assert compactions and max(c["chunks"] for c in compactions) > 1  # folded in chunks that fit


def test_no_api_key_reaches_any_output(tmp_path, monkeypatch, capsys):
    """A recognisable fake Anthropic key, and the embedded server's own per-process key,
    appear in no result, manifest, cache, report or printed output."""
    fake_key = "sk-ant-FAKE-0123456789-recognisable"
    monkeypatch.setenv("ANTHROPIC_API_KEY", fake_key)
    (tmp_path / "seed.txt").write_text("Summarise.")
    (tmp_path / "tiny.yaml").write_text((DATA / "tiny.yaml").read_text())
    (tmp_path / "e.yaml").write_text(
        "name: keys\nmodel: smollm2-135m\nscenarios: [tiny.yaml]\nbudgets: [200]\nprompts: [seed.txt]\n"
        "summary_max_tokens: 32\nreply_max_tokens: 32\nprobe: {max_tokens: 16}\n"
    )
    results = tmp_path / "results"
    assert main(["run", str(tmp_path / "e.yaml"), "--results", str(results), "--quiet"]) == 0
    (run_dir,) = (results / "runs").iterdir()
    assert main(["report", str(run_dir)]) == 0
    from harness.models.local import _servers

    server_keys = [key for _, key in _servers.values()]
    printed = "".join(capsys.readouterr())
    files = [p for p in results.rglob("*") if p.is_file()]
    assert any(p.name == "responses.sqlite" for p in files) and any(p.name == "report.html" for p in files)
    for secret in [fake_key, *server_keys]:
        assert secret not in printed
        for path in files:
            assert secret.encode() not in path.read_bytes(), path


def test_generated_facts_retention_and_the_no_history_control(tmp_path, capsys):
    """A generated scenario on the embedded model: retention is measured per folded fact and
    compaction, the report shows it with prompt sensitivity, and with no history the model
    cannot guess the generated values (the control stays near 0%)."""
    from harness.sources.generators.chat import Options, generate

    generate(Options(scenarios=1, facts=8, filler_chars=0, seed=11), tmp_path / "gen")
    evals = Path(__file__).parents[1] / "harness" / "prompts"
    (tmp_path / "e.yaml").write_text(
        f"name: gen-e2e\nmodel: smollm2-135m\nscenarios: ['gen/*.yaml']\nbudgets: ['50%']\n"
        f"prompts: ['{evals / 'fact-list.txt'}']\n"
        f"control_prompt: '{evals / 'keeps-nothing.txt'}'\nstrategies: [summary, no-history]\n"
        "summary_max_tokens: 96\nprobe: {max_tokens: 32}\nsummary_layout: transcript-first\n"
    )
    assert main(["run", str(tmp_path / "e.yaml"), "--results", str(tmp_path / "r"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "Summary retention by prompt and budget" in out and "Prompt sensitivity" in out
    run_dir = next((tmp_path / "r" / "runs").iterdir())
    retention = read_jsonl(run_dir / "retention.jsonl")
    assert retention and {r["prompt"] for r in retention} == {"fact-list", "keeps-nothing"}
    assert all(isinstance(r["retained"], bool) and r["error"] is None for r in retention)
    guesses = [r for r in read_jsonl(run_dir / "records.jsonl") if r["strategy"] == "no-history"]
    assert len(guesses) == 8 and sum(r["verdict"] == "recalled" for r in guesses) <= 1


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed: run scripts/install-chromium.sh")
def test_the_report_of_a_real_run_in_headless_chromium(tmp_path, capsys):
    """A real embedded run's HTML report: its plots decode, and the explorer, filtered to one fact,
    shows the summary that fact passed through and the model's answer; a screenshot is kept."""
    (tmp_path / "seed.txt").write_text((Path(__file__).parents[1] / "harness/prompts/seed.txt").read_text())
    (tmp_path / "tiny.yaml").write_text((DATA / "tiny.yaml").read_text())
    (tmp_path / "e.yaml").write_text(
        "name: page\nmodel: smollm2-135m\nscenarios: [tiny.yaml]\nbudgets: [300]\nprompts: [seed.txt]\n"
        "strategies: [summary, none]\n"
        "summary_max_tokens: 96\nreply_max_tokens: 64\nprobe: {max_tokens: 32}\n"
    )
    assert main(["run", str(tmp_path / "e.yaml"), "--results", str(tmp_path / "results"), "--quiet"]) == 0
    (run_dir,) = (tmp_path / "results" / "runs").iterdir()
    assert main(["report", str(run_dir)]) == 0
    capsys.readouterr()
    record = next(r for r in read_jsonl(run_dir / "records.jsonl") if r["strategy"] == "summary")
    passed_through = [
        c["summary"]
        for c in read_jsonl(run_dir / "compactions.jsonl")
        if c["case"] == record["case"] and c["summary"] and c["first_verbatim_turn"] > record["changed_turn"]
    ]
    shot = tmp_path / "explorer.png"
    found = inspect_page(run_dir / "report" / "report.html", tmp_path, fact=record["fact"], screenshot=shot)
    assert found["images"] and set(found["images"]) == {"ok"}
    assert found["shown"].startswith("2 probes match")  # the fact under summary and under the ceiling
    assert passed_through and found["summaries"] == passed_through and record["answer"] in found["opened"]
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one


def test_langchain_eval_on_the_embedded_model(tmp_path, capsys):
    """evals/langchain.yaml with the extra installed, on one of its conversations: LangChain's
    SummarizationMiddleware summarises through the embedded model and its retention is measured
    beside our prompt's."""
    pytest.importorskip("langchain.agents.middleware.summarization")
    eval_file = Path(__file__).parents[1] / "evals" / "langchain.yaml"
    seed = str(eval_file.parents[1] / "harness" / "prompts" / "seed.txt")
    assert (
        main(
            [
                "run",
                str(eval_file),
                "--model",
                FAST,
                "--budget",
                "40%",
                "--prompt",
                seed,
                "--scenario",
                "trip-planning",
                "--no-probes",
                "--results",
                str(tmp_path),
                "--quiet",
            ]
        )
        == 0
    )
    assert "summary: seed" in capsys.readouterr().out
    (run_dir,) = (tmp_path / "runs").iterdir()
    theirs = [
        c
        for c in read_jsonl(run_dir / "compactions.jsonl")
        if c["strategy"] == "harness.adapters.langchain:summarization"
    ]
    assert theirs and all(c["summary"] and c["output_tokens"] > 0 and c["error"] is None for c in theirs)
    retention = [r for r in read_jsonl(run_dir / "retention.jsonl") if r["strategy"] == theirs[0]["strategy"]]
    assert retention and all(r["error"] is None and r["retained"] is not None for r in retention)


def test_batch_mode_on_the_embedded_model_behind_a_loopback_batch_engine(local, tmp_path, capsys):
    """The embedded model has no batch endpoint (`--batch` fails in seconds, one line); behind a
    loopback batch engine that forwards to it, a batch run plays every case in waves."""
    import anthropic
    from batch_server import BatchServer

    from harness.execution.evals import load_eval
    from harness.execution.executors import run_eval
    from harness.models.backends import Backend
    from harness.models.batch import BatchEndpoint
    from harness.models.cache import ResponseCache

    eval_file = Path(__file__).parents[1] / "evals" / "smoke.yaml"
    assert main(["run", str(eval_file), "--model", FAST, "--batch", "--results", str(tmp_path), "--quiet"]) == 1
    assert "has no Message Batches API" in capsys.readouterr().err and not (tmp_path / "runs").exists()

    def forward(params):  # the batch engine's worker: the embedded model, one request at a time
        known = {k: params[k] for k in ("max_tokens", "messages", "system", "tools") if k in params}
        sampling = {k: v for k, v in params.items() if k not in known and k != "model"}
        return local.client.messages.create(model=params["model"], extra_body=sampling, **known).model_dump(
            mode="json", exclude_none=True
        )

    ev = load_eval(eval_file, model=FAST, scenario_ids=["trip-planning"], prompt_ids=["seed"], batch=True)
    ev.spec.batch_poll_seconds = 0.05
    with BatchServer(respond=forward, batch_delay_s=0.0) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0, timeout=600)
        backend = Backend(
            client, local.model, local.identity, dict(local.sampling), cache=ResponseCache(tmp_path / "cache.sqlite")
        )
        run_dir = run_eval(ev, backend, tmp_path, progress=False, batch=BatchEndpoint(client))
    records = read_jsonl(run_dir / "records.jsonl")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    facts = len(read_jsonl(run_dir / "scenarios.jsonl")) and len({r["fact"] for r in records})
    assert len(records) == 3 * facts  # summary at its budget, none, no-history
    assert all(r["verdict"] in ("recalled", "forgot", "stale") and r["answer"] for r in records)
    assert server.direct_messages == 0 and manifest["model_calls"] == len(server.submitted)
    # A wave per step of the longest case (its summary requests, live turns, then all its
    # probes at once), not one per request.
    live = sum(turn.assistant is None for turn in ev.scenarios[0].turns)
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    chain = max(
        live + 1 + sum(c["chunks"] for c in compactions if c["case"] == case) for case in {r["case"] for r in records}
    )
    assert live >= 1 and 2 <= manifest["waves"] <= chain and manifest["waves"] * 3 < len(server.submitted)
    assert compactions[0]["summary"]


def test_the_agent_and_alternatives_evals_on_the_embedded_model(tmp_path, capsys):
    """evals/agent.yaml as shipped, on two of its sessions: a generated coding session compacted
    inside its tool loop (cut: steps) by two prompts on the embedded model, and the hand-written
    Claude Code log's own recorded summary (no model call: its retention is known exactly). Then
    evals/alternatives.yaml on the same sessions (its summary cases come from the response cache):
    masking and clearing tool results, the server-side strategies skipped and said so."""
    root = Path(__file__).parents[1]
    sessions = ["--scenario", "coding-1-000", "--scenario", "claude_code_session"]
    results = ["--results", str(tmp_path / "r"), "--quiet"]
    assert main(["run", str(root / "evals" / "agent.yaml"), "--model", FAST, *sessions, *results]) == 0
    out = capsys.readouterr().out
    assert "Summary retention by fact kind" in out and "facts stated per 1,000 summary tokens" in out
    run_dir = next((tmp_path / "r" / "runs").iterdir())
    retention = read_jsonl(run_dir / "retention.jsonl")
    assert all(r["error"] is None for r in retention)
    summary = [r for r in retention if r["strategy"] == "summary"]
    assert {"recall", "artifact", "continuation", "decision", "constraint"} <= {r["kind"] for r in summary}
    assert {r["prompt"] for r in summary} == {"seed", "facts-first"}
    # The recorded summary states the task, the prohibition, the error and the file; not the count, nor
    # the command run before the cut (the commands so far: a set that grows).
    recorded = {r["fact"]: r["retained"] for r in retention if r["strategy"] == "recorded"}
    assert recorded == {
        "task": True,
        "constraint-1": True,
        "first-error": True,
        "first-failures": False,
        "files-changed": True,
        "commands-run": False,
    }
    # The generated session (one user line, 24 tool steps) compacted inside its tool loop, by both prompts.
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    inside = {
        c["prompt"] for c in compactions if c["scenario"] == "coding-1-000" and c["before_turn"] > 0 and c["summary"]
    }
    assert inside == {"seed", "facts-first"}
    capsys.readouterr()
    assert main(["run", str(root / "evals" / "alternatives.yaml"), "--model", FAST, *sessions, *results]) == 0
    out = capsys.readouterr().out
    run_dir = max((tmp_path / "r" / "runs").glob("alternatives-*"))
    retention = read_jsonl(run_dir / "retention.jsonl")
    assert {r["strategy"] for r in retention} == {"summary", "mask-observations", "clear-tool-results"}
    edits = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["strategy"] != "summary"]
    assert edits and all(c["edited"] > 0 and c["summary"] is None and c["size_after"] < c["size_before"] for c in edits)
    assert "mask-observations" in out and "Compression and cost per prompt" in out


def test_next_action_eval_on_the_embedded_model(tmp_path, capsys):
    """evals/next-action.yaml as shipped, on two of its sessions: at each cut the embedded model is
    asked for its next step from the compacted and the full history (twice), with the sessions'
    tools; every cut is recorded with the log's own step, and the report shows fidelity and floor."""
    root = Path(__file__).parents[1]
    assert (
        main(
            [
                "run",
                str(root / "evals" / "next-action.yaml"),
                "--model",
                FAST,
                "--scenario",
                "coding-1-000",
                "--scenario",
                "claude_code_session",
                "--prompt-id",
                "seed",
                "--results",
                str(tmp_path),
                "--quiet",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Next-action fidelity" in out and "noise floor" in out
    run_dir = next((tmp_path / "runs").iterdir())
    rows = read_jsonl(run_dir / "actions.jsonl")
    assert {r["strategy"] for r in rows} >= {"summary", "mask-observations", "clear-tool-results", "recorded"}
    assert all(r["log"] for r in rows if r["scenario"] == "coding-1-000")  # every cut there is a logged step
    scored = [r for r in rows if r["error"] is None and r["ceiling_error"] is None]
    assert scored and all(r["compacted"] and r["ceiling"] and r["ceiling_again"] for r in scored)
    assert all(isinstance(r["exact"], bool) and isinstance(r["floor"], bool) for r in scored)


def test_the_frameworks_eval_on_the_embedded_model(tmp_path, capsys):
    """evals/frameworks.yaml as shipped but for the recall probes and the strategies other tests
    cover (our prompt, masking, clearing, the recorded compaction), on one of its sessions (a small
    real SWE-agent log: one request and its tool loop, the shape LangChain's middleware once never
    compacted; the other sessions are each framework's unit tests, with a scripted model): Inspect
    AI's three compactions, LangChain's middleware and OpenHands's condenser run their own code with
    the embedded model writing the summaries, and the next step is asked after each. Every case is
    scored or recorded as an error naming its cause; none crashes the run."""
    pytest.importorskip("inspect_ai")
    pytest.importorskip("langchain.agents.middleware.summarization")
    pytest.importorskip("openhands.sdk")
    root = Path(__file__).parents[1]
    shipped = yaml.safe_load((root / "evals" / "frameworks.yaml").read_text())
    frameworks = [f"harness.adapters.inspect_ai:{name}" for name in ("summary", "edit", "trim")]
    frameworks += ["harness.adapters.langchain:summarization", "harness.adapters.openhands:summarizing"]
    assert set(frameworks) <= set(shipped["strategies"])
    eval_file = tmp_path / "frameworks.yaml"
    eval_file.write_text(
        yaml.safe_dump(
            {
                **shipped,
                "scenarios": [str(root / "scenarios" / "agent" / "*.yaml")],
                "strategies": frameworks,
                "strategy_options": {k: v for k, v in shipped["strategy_options"].items() if k in frameworks},
            }
        )
    )
    sessions = ["test-repo-i1"]
    chosen = [arg for scenario in sessions for arg in ("--scenario", scenario)]
    run = ["run", str(eval_file), "--model", FAST, *chosen, "--no-probes", "--results", str(tmp_path), "--quiet"]
    assert main(run) == 0
    run_dir = next((tmp_path / "runs").iterdir())
    retention = read_jsonl(run_dir / "retention.jsonl")
    played = [row["case"].split("/") for row in read_jsonl(run_dir / "cases.jsonl")]
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    for strategy in frameworks:
        assert {case[0] for case in played if case[1] == strategy} == set(sessions)  # every session played
        rows = [r for r in retention if r["strategy"] == strategy]  # the facts of the cases it compacted
        assert rows and all(r["error"] is None and r["retained"] is not None for r in rows), strategy
        theirs = [c for c in compactions if c["strategy"] == strategy and c["error"] is None]
        # Each folded part of the history (a weak model's summary may outgrow what it replaced).
        assert theirs and all(c["folded_messages"] > 0 for c in theirs), strategy
    summaries = [c for c in compactions if c["strategy"] == frameworks[0] and c["error"] is None]
    assert all(c["summary"] and c["output_tokens"] > 0 for c in summaries)  # written by the model under test
    manifest = json.loads((run_dir / "manifest.json").read_text())
    packages = {name: info["packages"] for name, info in manifest["strategies"].items()}
    assert "inspect_ai" in packages[frameworks[0]] and "langchain" in packages[frameworks[3]]  # which release ran
    assert "openhands-sdk" in packages[frameworks[4]]
    # The next step after each of their compactions, at the cuts in a tool loop, beside the full history's.
    steps = read_jsonl(run_dir / "actions.jsonl")
    for strategy in frameworks:
        assert any(s["strategy"] == strategy and s["compacted"] for s in steps), strategy


def test_the_recovery_arm_on_the_embedded_model(tmp_path):
    """Truncation with and without search over what it dropped, on the embedded model through
    llama.cpp's Messages API with the search tool offered: every probe is answered (none an error),
    the searches the model made are counted, and what they cost is recorded."""
    for name in ("locker.yaml", "unit.yaml"):
        (tmp_path / name).write_text((DATA / "locker" / name).read_text())
    eval_file = tmp_path / "unit.yaml"
    eval_file.write_text(
        "name: recovery\nmodel: smollm2-135m\nscenarios: [locker.yaml]\nbudgets: [150]\n"
        "prompts: [seed]\nstrategies: [truncate, truncate+recovery]\nrecovery: {max_searches: 2}\n"
    )
    assert main(["run", str(eval_file), "--results", str(tmp_path / "r"), "--quiet"]) == 0
    run_dir = next((tmp_path / "r" / "runs").iterdir())
    records = {(r["strategy"], r["fact"]): r for r in read_jsonl(run_dir / "records.jsonl")}
    assert records and all(r["verdict"] != "error" for r in records.values())
    for (strategy, fact), record in records.items():
        if strategy == "truncate":
            assert record["searches"] is None
            continue
        assert 0 <= record["searches"] <= 2 and record["requests"] >= 1 + min(record["searches"], 1)
        sent = [r["input_tokens"] + (r["cache_read_tokens"] or 0) for r in (record, records["truncate", fact])]
        assert sent[0] > sent[1]  # the tool and its note cost prompt tokens (cache reads count apart)
