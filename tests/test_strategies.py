"""The strategy seam: any compaction function, measured like ours. A strategy gets the messages and
either the seed's arguments or a context (a metered client and the eval's settings); whatever new
messages it puts in place of the folded ones is its summary; its failures are the case's errors."""

import json
import sys
from importlib import metadata

import pytest
from fakes import FakeClient
from test_run import oracle

from harness.analysis import gate
from harness.cli import main
from harness.execution.evals import load_eval
from harness.execution.executors import run_eval
from harness.models.client import Reply
from harness.records import load_run, read_jsonl

STRATEGIES = '''
from harness.messages import exchange_starts, render_message


def _fold(messages, context, wording):
    """Summarise all but the last exchange, in this strategy's own wording."""
    if context.size(messages) <= context.limit or len(exchange_starts(messages)) < 2:
        return messages
    split = exchange_starts(messages)[-1]
    transcript = "\\n".join(map(render_message, messages[:split]))
    reply = context.client.create(
        max_tokens=context.settings.summary_max_tokens,
        system=context.settings.summary_prompt,
        messages=[{"role": "user", "content": transcript}],
    )
    summary = reply["content"][0]["text"]
    return [{"role": "user", "content": f"{wording}{summary}"},
            {"role": "assistant", "content": "OK."}] + messages[split:]


def own_words(messages, context):
    return _fold(messages, context, "Here is what happened earlier: ")


def sweeping(messages, context):
    return _fold(messages, context, f"[{context.settings.prompt_id}] ")
sweeping.uses_prompt = True


def seed_style(messages, client, output_stream, context_limit):
    return messages[-2:] if len(messages) > 4 else messages


def raising(messages, context):
    if context.size(messages) > context.limit:
        raise KeyError("no such thing")
    return messages


def not_a_history(messages, context):
    return "nope" if context.size(messages) > context.limit else messages


def self_recording(messages, context):
    """Drops all but the last exchange and says so itself, as a plugin that knows more than the diff."""
    from harness.records.schema import CompactionEvent

    if context.size(messages) <= context.limit or len(exchange_starts(messages)) < 2:
        return messages
    split = exchange_starts(messages)[-1]
    kept = messages[split:]
    context.record(
        CompactionEvent(
            strategy="mine", folded_messages=split, size_before=context.size(messages),
            size_after=context.size(kept), unit=context.settings.unit, error="dropped on purpose",
        )
    )
    return kept
'''


class Slow(FakeClient):
    """The oracle, each reply taking 50 ms as a backend would measure it."""

    def create(self, **request):
        return Reply(dict(super().create(**request)), latency_s=0.05)


@pytest.fixture
def custom_eval(eval_file, monkeypatch):
    (eval_file.parent / "mystrategies.py").write_text(STRATEGIES)
    monkeypatch.syspath_prepend(str(eval_file.parent))
    sys.modules.pop("mystrategies", None)

    def make(*strategies):
        eval_file.write_text(
            eval_file.read_text().replace(
                "strategies: [summary, truncate, none, no-history]",
                "strategies: [" + ", ".join(["summary", *(f"mystrategies:{s}" for s in strategies)]) + "]",
            )
        )
        return eval_file

    return make


def custom_eval_dir(run_dir):
    return run_dir.parents[2]  # tmp_path: the eval, its prompt and the results beside them


def _run(eval_file, client, tmp_path):
    return run_eval(load_eval(eval_file), client, tmp_path / "results", progress=False)


def test_a_summary_in_its_own_wording_is_found_metered_and_located(custom_eval, tmp_path):
    run_dir = _run(custom_eval("own_words"), Slow(oracle), tmp_path)
    mine = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["strategy"] == "mystrategies:own_words"]
    assert mine and all(c["summary"] and c["replaced_with"] == 2 for c in mine)
    assert all(
        c["input_tokens"] > 0 and c["output_tokens"] > 0 and c["latency_s"] > 0 and c["chunks"] == 1 for c in mine
    )
    ours = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["strategy"] == "summary"]
    # The same folds as the seed's compaction: the summary message is not counted as a turn.
    assert [(c["budget"], c["before_turn"], c["first_verbatim_turn"]) for c in mine] == [
        (c["budget"], c["before_turn"], c["first_verbatim_turn"]) for c in ours
    ]
    retained = [r for r in read_jsonl(run_dir / "retention.jsonl") if r["strategy"] == "mystrategies:own_words"]
    assert retained and all(r["retained"] is not None for r in retained)  # checked against its summary
    records = [r for r in read_jsonl(run_dir / "records.jsonl") if r["strategy"] == "mystrategies:own_words"]
    assert {r["location"] for r in records} <= {"summary", "gone", "verbatim"} and records


def test_a_strategy_that_records_its_own_event_is_taken_at_its_word(custom_eval, tmp_path):
    run_dir = _run(custom_eval("self_recording"), FakeClient(oracle), tmp_path)
    mine = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["strategy"] == "mystrategies:self_recording"]
    # Its own event (under the eval's name for it), once per compaction: none derived beside it.
    assert mine and all(c["error"] == "dropped on purpose" and c["summary"] is None for c in mine)
    assert len({(c["case"], c["before_turn"]) for c in mine}) == len(mine)


def test_the_seed_signature_still_works(custom_eval, tmp_path):
    run_dir = _run(custom_eval("seed_style"), FakeClient(oracle), tmp_path)
    mine = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["strategy"] == "mystrategies:seed_style"]
    assert mine and all(c["summary"] is None and c["replaced_with"] == 0 for c in mine)  # dropped outright
    retained = [
        r["retained"] for r in read_jsonl(run_dir / "retention.jsonl") if r["strategy"] == "mystrategies:seed_style"
    ]
    assert retained and set(retained) == {False}


@pytest.mark.parametrize(
    "strategy, message",
    [("raising", "raised KeyError: 'no such thing'"), ("not_a_history", "returned str, not a list of messages")],
)
def test_a_failing_strategy_is_an_error_of_its_cases_not_a_crash(strategy, message, custom_eval, tmp_path):
    run_dir = _run(custom_eval(strategy), FakeClient(oracle), tmp_path)
    records = read_jsonl(run_dir / "records.jsonl")
    mine = [r for r in records if r["strategy"] == f"mystrategies:{strategy}"]
    assert mine and all(r["verdict"] == "error" and message in r["error"] for r in mine)
    assert all(r["verdict"] != "error" for r in records if r["strategy"] == "summary")  # the rest ran


def test_a_strategy_that_takes_a_prompt_sweeps_the_prompts_and_pairs_with_ours(custom_eval, tmp_path, capsys):
    client = FakeClient(oracle)
    run_dir = _run(custom_eval("sweeping"), client, tmp_path)
    compactions = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["strategy"] == "mystrategies:sweeping"]
    assert compactions and {c["prompt"] for c in compactions} == {"user-lines"}
    assert all(c["summary"].startswith("[user-lines] user:") for c in compactions)  # the prompt's id reached it...
    prompt = (custom_eval_dir(run_dir) / "user-lines.txt").read_text().strip()
    assert sum(r.get("system") == prompt for r in client.requests) >= 2 * len(compactions)  # ...and its text
    assert main(["compare", str(run_dir), "--a", "summary:user-lines", "--b", "mystrategies:sweeping:user-lines"]) == 0
    out = capsys.readouterr().out
    assert "A (summary: user-lines)" in out and "B (mystrategies:sweeping: user-lines)" in out and "pairs in" in out


def test_the_manifest_records_where_a_strategy_came_from(custom_eval, tmp_path):
    run_dir = _run(custom_eval("own_words"), FakeClient(oracle), tmp_path)
    about = json.loads((run_dir / "manifest.json").read_text())["strategies"]["mystrategies:own_words"]
    assert about["module"] == "mystrategies" and about["path"].endswith("mystrategies.py")
    assert len(about["sha256"]) == 64
    assert about["packages"]["compaction-harness"] == metadata.version(
        "compaction-harness"
    )  # the module imports harness


def test_validate_refuses_a_function_that_is_not_a_compaction(custom_eval, tmp_path, capsys):
    path = custom_eval("own_words")
    path.write_text(path.read_text().replace("mystrategies:own_words", "mystrategies:_fold"))
    assert main(["validate", str(path)]) == 1
    assert "is not a compaction function" in capsys.readouterr().err


def test_the_gate_covers_a_custom_strategy_that_takes_prompts(custom_eval, tmp_path):
    path = custom_eval("sweeping")
    baseline = load_run(_run(path, FakeClient(oracle), tmp_path / "base"))
    candidate = load_run(_run(path, FakeClient(oracle), tmp_path / "cand"))
    verdict = gate.evaluate(baseline, candidate, load_eval(path).spec.gate)
    names = {c.name for c in verdict.cells}
    assert "retention: mystrategies:sweeping: user-lines @ all budgets" in names
    assert "retention: summary: user-lines @ all budgets" in names  # and ours, each against its own baseline
    mine = next(c for c in verdict.cells if c.name == "retention: mystrategies:sweeping: user-lines @ all budgets")
    assert mine.comparison.n > 0 and set(mine.comparison.pairs["strategy"]) == {"mystrategies:sweeping"}


def test_langchain_summarization_runs_through_the_seam(eval_file, tmp_path):
    """LangChain's real SummarizationMiddleware, with its own wording, measured like ours."""
    pytest.importorskip("langchain.agents.middleware.summarization")
    eval_file.write_text(
        eval_file.read_text().replace(
            "strategies: [summary, truncate, none, no-history]",
            'strategies: [summary, "harness.adapters.langchain:summarization", '
            '"harness.adapters.langchain:summarization_with_prompt"]',
        )
    )

    def reply(request):  # LangChain sends its prompt as the user turn, with no system prompt
        return oracle({"system": None, **request}) if "system" not in request else oracle(request)

    run_dir = _run(eval_file, Slow(reply), tmp_path)
    assert not [r for r in read_jsonl(run_dir / "records.jsonl") if r["verdict"] == "error"]
    compactions = read_jsonl(run_dir / "compactions.jsonl")
    by = {s: [c for c in compactions if c["strategy"] == s] for s in {c["strategy"] for c in compactions}}
    theirs = by["harness.adapters.langchain:summarization"]
    assert theirs and all(
        c["summary"].startswith("Here is a summary of the conversation to date")
        and c["chunks"] == 1
        and c["input_tokens"] > 0
        and c["latency_s"] > 0
        for c in theirs
    )
    # It folds at the same turns as ours (the budget and keep_recent reached it) ...
    assert [(c["budget"], c["before_turn"]) for c in theirs] == [(c["budget"], c["before_turn"]) for c in by["summary"]]
    # ... and with our prompt, it sweeps the prompts and sends ours.
    assert {c["prompt"] for c in by["harness.adapters.langchain:summarization_with_prompt"]} == {"user-lines"}
    retained = [r for r in read_jsonl(run_dir / "retention.jsonl") if r["strategy"].startswith("harness.adapters")]
    assert retained and all(r["retained"] is not None for r in retained)
