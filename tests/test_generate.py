"""Generated scenarios, retention measured on crafted summaries, and runs without probes."""

import json
import re
from pathlib import Path

import pytest
from fakes import FakeAnthropic, FakeClient

from harness.budget import Budget
from harness.cli import main
from harness.execution.cases import plan_cases
from harness.execution.evals import load_eval
from harness.execution.executors import run_eval
from harness.inputs.probes import probes
from harness.inputs.scenario_file import load_scenario
from harness.models.backends import Backend
from harness.models.cache import ResponseCache
from harness.records import read_jsonl
from harness.reports.formats import html_report, text_report
from harness.scoring.matchers import Expectation, states_about
from harness.sources.generators.chat import Options, generate


def write_eval(folder: Path, extra: str = "") -> Path:
    (folder / "copy.txt").write_text("Copy everything.")
    (folder / "ok.txt").write_text("Reply with the single word OK and nothing else.")
    path = folder / "gen.yaml"
    path.write_text(
        "name: gen\nscenarios: ['gen/*.yaml']\nbudgets: ['50%']\nprompts: [copy.txt]\n"
        "control_prompt: ok.txt\nstrategies: [summary, truncate]\nprobes: false\n"
        "summary_layout: transcript-first\n" + extra
    )
    return path


def summariser(request):
    """Copies the transcript for the 'Copy' prompt, says OK for the control."""
    content = request["messages"][0]["content"]
    if content.endswith("Reply with the single word OK and nothing else."):
        return "OK"
    return content.split("<conversation>\n")[1].split("\n</conversation>")[0]


def test_same_seed_same_files_and_every_kind_planted_everywhere(tmp_path):
    options = Options(scenarios=3, facts=16, filler_chars=200, seed=7, supersede=0.3, distract=0.5)
    first, second = generate(options, tmp_path / "a"), generate(options, tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    other = generate(Options(3, 16, 200, seed=8), tmp_path / "c")
    assert first[0].read_bytes() != other[0].read_bytes()
    kinds, channels, superseded, distracted = set(), set(), 0, 0
    for path in first:
        scenario = load_scenario(path)  # validates like a hand-written file
        for turn in scenario.turns:
            for fact in turn.facts:
                kinds.add(fact.kind)
                assert fact.subject and fact.subject in fact.probe
                channels.add(
                    "tool"
                    if turn.assistant.tool_calls
                    else "user"
                    if fact.subject.lower() in turn.user.lower() and "note" in turn.user
                    else "assistant"
                )
                distracted += bool(fact.distractors)
            superseded += len(turn.supersedes)
        assert len(probes(scenario)) == 16
    assert kinds == {"identifier", "number", "money", "date", "name", "place", "decision", "preference", "constraint"}
    assert channels == {"user", "assistant", "tool"} and superseded > 0 and distracted > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--scenarios", "0"], "--scenarios must be at least 1"),
        (["--facts", "500"], "--facts must be between 1 and"),
        (["--filler", "lots"], "filler is a number of characters"),
        (["--facts", "2", "--filler", "0", "--budget", "100000"], "compaction would never fire"),
    ],
)
def test_impossible_options_say_so_in_one_line_and_write_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "out"
    assert main(["generate", "--out", str(out), *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: harness generate: ") and message in err and err.count("\n") == 1
    assert not out.exists()


def test_retention_requires_the_value_with_its_subject():
    code = Expectation("PX-4821")
    others = ("parcel Birch",)
    assert states_about("- parcel Amber: PX-4821\n- parcel Birch: KT-1111", code, "parcel Amber", others)
    assert not states_about("parcel Birch is PX-4821 and parcel Amber is KT-1111", code, "parcel Amber", others)
    assert not states_about("The code PX-4821 was mentioned.", code, "parcel Amber", others)
    assert states_about("PX-4821 is the code of parcel Amber.", code, "parcel Amber", others)
    assert states_about("Shipment Dune arrives on 3 March 2028.", Expectation("2028-03-03"), "shipment Dune", ())
    assert not states_about("Shipment Dune arrives in March.", Expectation("2028-03-03"), "shipment Dune", ())
    assert states_about("Nothing about subjects: PX-4821.", code, None)  # facts without a subject


def test_a_run_without_probes_measures_retention_of_every_folded_fact(tmp_path):
    generate(Options(scenarios=2, facts=6, filler_chars=0, seed=1, supersede=0), tmp_path / "gen")
    ev = load_eval(write_eval(tmp_path))
    assert {c.strategy for c in plan_cases(ev)} == {"summary", "truncate"}  # no probes: no ceiling or control
    client = FakeClient(summariser)
    run_dir = run_eval(ev, client, tmp_path / "results", progress=False)
    assert read_jsonl(run_dir / "records.jsonl") == []
    assert not any(
        m["content"].endswith("?")
        for r in client.requests
        for m in r["messages"][-1:]
        if isinstance(m["content"], str) and "<conversation>" not in m["content"]
    )
    rows = read_jsonl(run_dir / "retention.jsonl")
    by = {}
    for row in rows:
        by.setdefault((row["strategy"], row["prompt"]), []).append(row["retained"])
    assert set(by[("summary", "copy")]) == {True}  # a copy keeps every folded fact
    assert set(by[("summary", "ok")]) == {False} and set(by[("truncate", None)]) == {False}
    # Every fact whose planting turn was folded is checked at each compaction after that.
    compactions = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["prompt"] == "copy"]
    first = compactions[0]
    folded = [r for r in rows if r["prompt"] == "copy" and r["compaction"] == 0 and r["scenario"] == first["scenario"]]
    assert {r["value_turn"] for r in folded} == set(range(first["first_verbatim_turn"]))
    text = text_report(run_dir)
    assert "Summary retention by prompt and budget" in text and "Recall by summary prompt" not in text
    page = html_report(run_dir)
    assert "Summary retention by prompt and budget" in page and "Facts not recalled" not in page
    sensitivity = text.split("Prompt sensitivity")[1]
    assert re.search(r"summary: copy \(best\)\s+100%\s+0%\s+\+100\.0%", sensitivity)


def test_repeats_at_temperature_zero_collapse_and_above_zero_are_new_samples(tmp_path):
    generate(Options(scenarios=1, facts=4, filler_chars=0, seed=2, supersede=0), tmp_path / "gen")
    ev = load_eval(write_eval(tmp_path, "repeats: 3\n"))
    assert ev.repeats == 1 and {c.repeat for c in plan_cases(ev)} == {0}
    ev = load_eval(write_eval(tmp_path, "repeats: 3\ntemperature: 0.7\n"))
    assert {c.repeat for c in plan_cases(ev)} == {0, 1, 2}
    fake = FakeAnthropic(summariser)
    backend = Backend(fake, "m", "fake", {"temperature": 0.7, "seed": 0}, ResponseCache(tmp_path / "cache.sqlite"))
    run_eval(ev, backend, tmp_path / "results", progress=False)
    summaries = [r for r in fake.fake.requests if "<conversation>" in json.dumps(r)]
    # Each repeat sends its requests itself (its own cache entries), none served as a copy.
    assert backend.calls == len(fake.fake.requests) and len(summaries) % 3 == 0
    assert len({json.dumps(r, sort_keys=True) for r in summaries}) == len(summaries) // 3


def test_cli_warns_when_repeats_would_be_copies(tmp_path, capsys, monkeypatch):
    generate(Options(scenarios=1, facts=4, filler_chars=0, seed=2, supersede=0), tmp_path / "gen")
    path = write_eval(tmp_path, "repeats: 4\n")
    import harness.execution.executors

    monkeypatch.setattr(harness.execution.executors, "open_model", lambda *a, **k: FakeClient(summariser))
    assert main(["run", str(path), "--results", str(tmp_path / "results"), "--quiet"]) == 0
    assert (
        "warning: 4 repeats at temperature 0 would be copies of one answer; collapsed to 1" in capsys.readouterr().err
    )


def test_init_writes_an_agent_gate_on_coding_sessions_or_a_chat_gate_that_points_to_it(tmp_path, capsys):
    assert main(["init", str(tmp_path / "agent"), "--kind", "agent"]) == 0
    spec = load_eval(tmp_path / "agent" / "evals" / "compaction-gate.yaml")
    assert (spec.spec.cut, spec.spec.budgets, spec.spec.probes) == ("steps", [Budget("78%")], False)
    sessions = sorted((tmp_path / "agent" / "scenarios" / "compaction").glob("*.yaml"))
    assert len(sessions) == 12
    kinds = {fact.kind for path in sessions for fact in probes(load_scenario(path))}
    assert {"artifact", "plan", "constraint", "identifier", "continuation"} <= kinds
    assert "coding-agent sessions" in (tmp_path / "agent" / "evals" / "README.md").read_text()
    assert "--kind agent" not in capsys.readouterr().out
    assert main(["init", str(tmp_path / "chat")]) == 0
    assert "`harness init --kind agent`" in capsys.readouterr().out
    assert main(["validate", str(tmp_path / "agent" / "evals" / "compaction-gate.yaml")]) == 0


def test_init_offers_every_starter_kind_and_only_those():
    from harness.cli import build_parser
    from harness.sources.starter import KINDS

    init = next(action.choices["init"] for action in build_parser()._actions if isinstance(action.choices, dict))
    kind = next(action for action in init._actions if action.dest == "kind")
    assert list(kind.choices) == list(KINDS)


def test_no_generated_coding_path_repeats_a_segment():
    """Every toolchain's paths are real project paths: never `src/src/...` (nor any folder twice in a row)."""
    from harness.sources.generators.coding import Options as CodingOptions
    from harness.sources.generators.coding import session

    path = re.compile(r"(?<![\w./-])(?:[\w.-]+/)+[\w.-]+")
    seen = 0
    for seed in range(3):
        for index in range(18):  # every archetype in every toolchain
            log, _ = session(CodingOptions(steps=28, seed=seed), index)
            text = json.dumps([exchange.__dict__ for exchange in log.exchanges], default=lambda o: o.__dict__)
            for found in path.findall(text):
                segments = found.split("/")
                assert all(a != b for a, b in zip(segments, segments[1:])), (seed, index, found)
                seen += 1
    assert seen > 1000
