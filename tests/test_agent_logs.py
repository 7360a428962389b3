"""Agent-log importers (Claude Code, Codex CLI, SWE-agent, mini-swe-agent, chat messages), the facts
derived from a log, redaction, variants and synthetic coding sessions: on small fixtures written
for these tests (tests/data/agent_logs) and on real logs (tests/data/agent_logs/real, with their licenses)."""

import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.errors import InputError
from harness.inputs.probes import probes
from harness.inputs.scenario import Scenario
from harness.inputs.scenario_file import load_scenario
from harness.messages import history_problem
from harness.scoring.verdict import verdict
from harness.sources.generators.coding import Options as CodingOptions
from harness.sources.generators.coding import generate as generate_coding
from harness.sources.generators.variants import generate_variants
from harness.sources.importers import AGENT_FORMATS
from harness.sources.importers.agent_logs import FORMATS, Options, import_logs
from harness.sources.importers.derive import derive
from harness.sources.importers.redact import PATTERNS, redact_text
from harness.sources.importers.session import Call, Exchange, Session, Step, to_scenario

DATA = Path(__file__).parent / "data" / "agent_logs"
REAL = DATA / "real"  # real logs, copied with their sources and licenses (README.md there)


def imported(fmt: str, path: Path, tmp_path: Path, **options) -> tuple[Scenario, list[str]]:
    [result], refused = import_logs(fmt, [path], tmp_path / "out", Options(**options))
    assert not refused
    assert load_scenario(result.path) == result.scenario  # what was written validates as it was built
    return result.scenario, result.notes


def calls(scenario: Scenario) -> list:
    return [c for t in scenario.turns if t.assistant for c in t.assistant.tool_calls]


def facts(scenario: Scenario) -> dict[str, dict]:
    return {f.id: f for t in scenario.turns for f in t.facts}


def pairs_intact(scenario: Scenario) -> bool:
    """Every tool_use of the replayed history has its tool_result in the next message."""
    return history_problem(scenario.scripted_history()) is None


def test_the_command_line_lists_every_format_it_reads():
    assert set(FORMATS) == set(AGENT_FORMATS)


# --- Claude Code ------------------------------------------------------------------------------


def test_claude_code_follows_the_parent_chain_past_a_rewind_a_sidechain_and_a_compaction(tmp_path):
    scenario, notes = imported("claude-code", DATA / "claude_code_session.jsonl", tmp_path)
    text = yaml.safe_dump(scenario.model_dump())
    # The rewound branch (an earlier child of the same parent) and the subagent's line are left out.
    assert "abandoned_branch" not in text and "SUBAGENT" not in text
    assert [c.tool for c in calls(scenario)] == ["Read", "Bash", "Edit", "Bash"]
    assert calls(scenario)[1].is_error and "KeyError: 'currency_code'" in calls(scenario)[1].result
    assert pairs_intact(scenario)
    # Two user lines; the compaction's summary is recorded before the second one.
    assert [t.user for t in scenario.turns if not t.continues] == [
        "Fix the failing test in payments/ledger.py. Don't touch the migrations folder.",
        "Now run the whole suite.",
    ]
    [recorded] = [t for t in scenario.turns if t.recorded_summary]
    assert recorded.user == "Now run the whole suite." and "KeyError" in recorded.recorded_summary
    assert "claude_code_session.jsonl: line 11: not a JSON object, left out" in notes
    assert {
        "rewound (on a branch the session left): 2 lines left out",
        "sidechain (subagent): 1 line left out",
        "meta: 1 line left out",
    } <= set(notes)
    derived = facts(scenario)
    assert derived["first-error"].answer == "KeyError: 'currency_code'"
    assert derived["first-failures"].answer == "1"
    assert derived["files-changed"].items == ["payments/currency.py"]
    assert derived["commands-run"].items == ["pytest tests/test_ledger.py -x", "pytest -q"]
    assert derived["constraint-1"].answer == "migrations folder" and derived["constraint-1"].constraint
    assert {f.kind for f in derived.values()} == {"recall", "artifact", "constraint"}


def test_a_file_that_is_not_a_claude_code_session_is_refused_with_its_name(tmp_path):
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"type": "summary"}\nnot json\n')
    with pytest.raises(InputError, match="notes.jsonl: not a Claude Code session: no user or assistant line"):
        import_logs("claude-code", [bad], tmp_path / "out", Options())
    assert not (tmp_path / "out").exists()


# --- Codex CLI --------------------------------------------------------------------------------


def test_codex_links_calls_to_outputs_by_call_id_and_records_its_compaction(tmp_path):
    scenario, notes = imported("codex", DATA / "codex_rollout.jsonl", tmp_path)
    first, patch, test = calls(scenario)
    # An argument list runs as the shell line it holds; a non-zero exit code is an error.
    assert first.input["command"] == "python -m ingest tests/fixtures/empty.csv" and first.is_error
    assert first.result.endswith("StopIteration: header row missing in empty.csv\n")
    assert patch.tool == "apply_patch" and not patch.is_error
    assert test.result.startswith("Exit code: 0") and not test.is_error
    assert pairs_intact(scenario)
    assert [t.user for t in scenario.turns if not t.continues] == [
        "The importer crashes on empty CSV files; fix it in ingest/reader.py.",
        "Add a regression test too.",
    ]
    assert "empty CSV" in next(t.recorded_summary for t in scenario.turns if t.recorded_summary)
    assert "codex_rollout.jsonl: line 12: not a JSON object, left out" in notes
    assert {"Codex preamble message: 1 item left out", "reasoning: 1 item left out"} <= set(notes)
    derived = facts(scenario)
    assert derived["files-changed"].items == ["ingest/reader.py"]  # from the patch's own header
    assert derived["first-error"].answer == "StopIteration: header row missing in empty.csv"


# --- chat messages ----------------------------------------------------------------------------


def test_openai_messages_keep_parallel_tool_calls_together(tmp_path):
    scenario, notes = imported("openai", DATA / "openai_messages.json", tmp_path)
    assert [len(t.assistant.tool_calls) for t in scenario.turns] == [1, 2]
    assert [c.result for c in calls(scenario)][1:] == ["wrote billing/config.py", "wrote deploy/run.sh"]
    assert scenario.turns[-1].assistant.final == "Renamed in billing/config.py and deploy/run.sh."
    assert pairs_intact(scenario)
    assert facts(scenario)["files-changed"].items == ["billing/config.py", "deploy/run.sh"]
    assert "1 system, developer or unreadable message left out" in notes


def test_jsonl_with_a_conversation_a_line_writes_a_scenario_each(tmp_path):
    log = tmp_path / "runs.jsonl"
    conversation = json.loads((DATA / "openai_messages.json").read_text())
    log.write_text("\n".join(json.dumps({"messages": conversation}) for _ in range(2)) + "\n")
    results, _ = import_logs("openai", [log], tmp_path / "out", Options())
    assert [r.scenario.id for r in results] == ["runs-1", "runs-2"]


def test_a_tool_result_for_a_call_the_log_lacks_is_left_out_and_said(tmp_path):
    log = tmp_path / "orphan.json"
    log.write_text(
        json.dumps(
            [
                {"role": "user", "content": "List the files."},
                {"role": "tool", "tool_call_id": "nowhere", "content": "a.py"},
                {"role": "assistant", "content": "Done."},
            ]
        )
    )
    scenario, notes = imported("openai", log, tmp_path)
    assert "orphan.json: messages[1]: a tool result for a call the log does not hold (nowhere): left out" in notes
    assert scenario.turns[0].assistant == "Done." or scenario.turns[0].assistant.text == "Done."


# --- real logs (tests/data/agent_logs/real) --------------------------------------------------------


@pytest.mark.parametrize(
    "fmt, name, exchanges, steps, tool_calls, fact_ids",
    [
        # SWE-agent's template says "don't just use the scroll_down command": the harness's words, no constraint.
        (
            "swe-agent",
            "swe-agent/marshmallow-1867.traj",
            1,
            11,
            11,
            {"task", "files-changed", "commands-run", "next-1", "next-2"},
        ),
        ("swe-agent", "swe-agent/test-repo-i1.traj", 1, 5, 5, {"task", "files-changed", "commands-run"}),
        ("mini-swe-agent", "mini-swe-agent/local.traj.json", 1, 2, 2, {"task", "commands-run"}),
        ("claude-code", "claude-code/representative_messages.jsonl", 4, 2, 2, {"task", "files-changed"}),
        ("claude-code", "claude-code/todowrite_examples.jsonl", 2, 3, 3, {"task", "plan"}),
    ],
)
def test_real_logs_import_with_every_tool_pair_intact(fmt, name, exchanges, steps, tool_calls, fact_ids, tmp_path):
    scenario, _ = imported(fmt, REAL / name, tmp_path)
    assert sum(not t.continues for t in scenario.turns) == exchanges
    assert sum(bool(t.assistant and t.assistant.tool_calls) for t in scenario.turns) == steps
    assert len(calls(scenario)) == tool_calls
    assert pairs_intact(scenario)
    assert set(facts(scenario)) == fact_ids


def test_swe_agent_facts_come_from_the_trajectory(tmp_path):
    scenario, notes = imported("swe-agent", REAL / "swe-agent/marshmallow-1867.traj", tmp_path)
    derived = facts(scenario)
    assert derived["task"].answer == "TimeDelta serialization precision"
    assert derived["files-changed"].items == ["reproduce.py", "src/marshmallow/fields.py"]
    assert "python reproduce.py" in derived["commands-run"].items
    assert derived["next-1"].answer == "fields.py" and derived["next-1"].probe_at == 4
    assert "the run ended with exit status 'submitted'" in notes


# --- what agents lose: plans, reused identifiers, constraints a person gave, applied changes ---------


def session_of(*steps, user: str = "Fix the flaky export job.") -> Session:
    """A one-request session whose steps are (tool, input, result, is_error) calls."""
    return Session(
        "s",
        "d",
        [
            Exchange(
                user,
                [Step(None, [Call(tool, arguments, result, error)]) for tool, arguments, result, error in steps],
                "Done.",
            )
        ],
    )


def todos(*statuses: str) -> dict:
    items = ["Reproduce the export failure", "Patch the exporter", "Rerun the export job"]
    return {"todos": [{"content": item, "status": status} for item, status in zip(items, statuses)]}


def test_a_plan_whose_item_finishes_is_probed_with_its_new_status(tmp_path):
    log = session_of(
        ("TodoWrite", todos("in_progress", "pending", "pending"), "Todos updated.", False),
        ("Bash", {"command": "make export"}, "export failed", True),
        ("TodoWrite", todos("completed", "in_progress", "pending"), "Todos updated.", False),
    )
    data = to_scenario(log, derive(log))
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data))
    [plan] = [p for p in probes(load_scenario(tmp_path / "plan.yaml")) if p.fact_id == "plan"]
    assert plan.kind == "plan" and plan.planted_turn == 0 and plan.changed_turn == 2
    assert plan.target.expected.done == ("Reproduce the export failure",)
    assert plan.question == "Which items of your plan are finished, and which are still to do?"
    right = "Done: Reproduce the export failure. Still to do: Patch the exporter, Rerun the export job."
    assert verdict(right, plan.target) == "recalled"
    # The old state (nothing finished) is stale; a finished item named as still to do is wrong, not partial.
    assert (
        verdict("Still to do: Reproduce the export failure, Patch the exporter, Rerun the export job.", plan.target)
        == "stale"
    )
    assert verdict("Done: Patch the exporter. Pending: Reproduce the export failure.", plan.target) == "forgot"
    assert plan.value_before(2)[1].done == () and plan.value_before(3)[1].done == ("Reproduce the export failure",)


@pytest.mark.parametrize(
    "text, states",
    [
        ("Done: Reproduce the export failure. Still to do: Patch the exporter, Rerun the export job.", True),
        ("Finished:\n- Reproduce the export failure\nRemaining:\n- Patch the exporter\n- Rerun the export job", True),
        ("[x] Reproduce the export failure\n[ ] Patch the exporter\n[ ] Rerun the export job", True),
        # The plan tool's own call, as a transcript renders it: each record's status field.
        (
            "assistant called TodoWrite({'todos': [{'content': 'Reproduce the export failure', 'status': 'completed'}, "
            "{'content': 'Patch the exporter', 'status': 'in_progress'}, {'content': 'Rerun the export job', "
            "'status': 'pending'}]})",
            True,
        ),
        ("The plan: Reproduce the export failure, Patch the exporter, Rerun the export job.", False),  # no status said
        ("Done: Patch the exporter. Pending: Reproduce the export failure.", False),  # a finished item as still to do
    ],
)
def test_a_plan_is_read_with_each_items_status_however_it_is_written(text, states):
    from harness.scoring.matchers import Expectation, PlanMatch

    plan = Expectation(
        "plan",
        items=("Reproduce the export failure", "Patch the exporter", "Rerun the export job"),
        done=("Reproduce the export failure",),
    )
    assert PlanMatch().states(text, plan, within=True) is states


def test_an_identifier_read_in_output_and_typed_again_is_a_fact_one_only_read_is_not():
    log = session_of(
        (
            "Bash",
            {"command": "git log --oneline -3"},
            "9f3c2ab Fix export paths\n41d7e0c Bump deps\n77aa01f Initial",
            False,
        ),
        ("Bash", {"command": "git show 9f3c2ab --stat"}, "exporter/job.py | 4 ++--", False),
        ("Bash", {"command": "curl -s localhost:8731/health"}, "ok", False),
    )
    derived = {f["id"]: f for facts in derive(log).values() for f in facts}
    reused = [f for f in derived.values() if f["kind"] == "identifier"]
    assert [f["answer"] for f in reused] == ["9f3c2ab"]  # 41d7e0c was only read; the port was typed, never read
    assert reused[0]["probe"] == (
        "Which commit hash did the output of `git log --oneline -3` give you, that you then used in a later tool call?"
    )
    assert "9f3c2ab" not in reused[0]["probe"]


def test_only_a_person_gives_constraints_not_an_agent_harness_template():
    template = (
        "We're currently solving the following issue within our repository. Here's the issue text:\nISSUE:\n"
        "The CSV export drops the header. Don't rename the columns.\n\nINSTRUCTIONS:\nRemember, don't just "
        "use the scroll_down command multiple times."
    )
    derived = [
        f
        for facts in derive(session_of(("swe_agent", {"command": "ls"}, "a.py", False), user=template)).values()
        for f in facts
        if f["kind"] == "constraint"
    ]
    assert [f["answer"] for f in derived] == ["columns"]
    assert derived[0]["source"] == "a prohibition in the issue text of SWE-agent's instance template, turn 0"
    reminder = "Fix it.<system-reminder>Never run git push.</system-reminder> Never touch setup.py."
    derived = [
        f
        for facts in derive(session_of(("Bash", {"command": "ls"}, "a.py", False), user=reminder)).values()
        for f in facts
        if f["kind"] == "constraint"
    ]
    assert [f["answer"] for f in derived] == ["setup.py"]


def test_a_refused_edit_is_no_change():
    log = session_of(
        (
            "Edit",
            {"file_path": "exporter/job.py", "old_string": "a", "new_string": "b"},
            "String to replace not found in file.",
            True,
        ),
        (
            "swe_agent",
            {"command": "edit 3:4\n  x = 1\nend_of_edit"},
            "Your proposed edit has introduced new syntax error(s).",
            False,
        ),
        ("Write", {"file_path": "exporter/fix.py", "content": "x = 1"}, "File created.", False),
    )
    files = next(f for facts in derive(log).values() for f in facts if f["id"] == "files-changed")
    assert files["items"] == ["exporter/fix.py"]


# --- overlay facts --------------------------------------------------------------------------


def test_overlay_facts_join_the_derived_ones_and_bad_ones_are_located(tmp_path):
    overlay = tmp_path / "decisions.yaml"
    overlay.write_text(
        "facts:\n  - turn: 2\n    id: decision-key\n    kind: decision\n"
        "    probe: What is the key named in the new schema?\n    answer: currency\n"
    )
    scenario, _ = imported("claude-code", DATA / "claude_code_session.jsonl", tmp_path, overlay=overlay)
    assert facts(scenario)["decision-key"].kind == "decision"
    overlay.write_text(
        "facts:\n  - turn: 0\n    id: decision-key\n    kind: decision\n"
        "    probe: What is the key named in the new schema?\n    answer: currency\n"
    )
    with pytest.raises(InputError, match=r"decisions.yaml:6: facts\[0\].answer: 'currency' does not occur in turn 0"):
        imported("claude-code", DATA / "claude_code_session.jsonl", tmp_path, overlay=overlay)
    overlay.write_text("facts:\n  - turn: 40\n    id: x\n    kind: decision\n    probe: Which?\n    answer: currency\n")
    with pytest.raises(InputError, match=r"decisions.yaml:2: facts\[0\].turn: the scenario has turns 0 to 3"):
        imported("claude-code", DATA / "claude_code_session.jsonl", tmp_path, overlay=overlay)
    overlay.write_text("facts:\n  - turn: 1\n    id: x\n    kind: decision\n    probe: Which?\n    anwser: currency\n")
    with pytest.raises(InputError, match=r"anwser: unknown key \(did you mean `answer`\?\)"):
        imported("claude-code", DATA / "claude_code_session.jsonl", tmp_path, overlay=overlay)


# --- caps and secrets -------------------------------------------------------------------------


def test_a_cap_cuts_long_outputs_before_facts_are_derived(tmp_path):
    scenario, _ = imported("claude-code", DATA / "claude_code_session.jsonl", tmp_path, max_tool_output=40)
    traceback = calls(scenario)[1].result
    assert traceback.startswith("Traceback (most recent call last):") and "more characters cut at import" in traceback
    assert "first-error" not in facts(scenario)  # the error was in the part cut


def test_secrets_never_reach_the_scenario_and_their_count_is_printed(tmp_path, capsys):
    assert main(["import", "openai", str(DATA / "secrets.json"), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    written = (tmp_path / "secrets.yaml").read_text()
    for secret in (
        "sk-ant-api03",
        "AKIAIOSFODNN7EXAMPLE",
        "hunter2",
        "abcdef0123456789abcdef",
        "s3cretpass",
        "ghp_",
        "MIIEowIBAAKCAQEAx",
        "xoxb-",
        "sk-proj-",
    ):
        assert secret not in written, secret
    assert (
        "secrets redacted: 9 (1 anthropic-key, 1 aws-key, 1 bearer-token, 1 github-token, 1 openai-key, "
        "1 private-key, 1 secret-setting, 1 slack-token, 1 url-credentials)" in out
    )
    # No fact is derived from a redacted value; the unredacted error still is one.
    derived = facts(load_scenario(tmp_path / "secrets.yaml"))
    assert all("REDACTED" not in (f.answer or "") for f in derived.values())
    assert derived["first-error"].answer == "deploy failed: quota exceeded for project staging-7731"


def test_no_redact_keeps_the_log_as_it_was(tmp_path):
    scenario, _ = imported("openai", DATA / "secrets.json", tmp_path, redact=False)
    assert "AKIAIOSFODNN7EXAMPLE" in scenario.turns[0].user


@pytest.mark.parametrize("kind, pattern, _", PATTERNS)
def test_every_secret_shape_has_an_example_it_catches(kind, pattern, _):
    examples = {
        "private-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
        "anthropic-key": "sk-ant-admin01-" + "x" * 30,
        "openai-key": "sk-" + "A1" * 12,
        "aws-key": "ASIA" + "Z" * 16,
        "github-token": "github_pat_" + "a" * 30,
        "slack-token": "xoxp-1234-abcdefgh",
        "google-key": "AIza" + "b" * 35,
        "jwt": "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4",
        "bearer-token": "Authorization: Bearer 0123456789abcdef",
        "url-credentials": "postgres://app:pw@db.internal/x",
        "secret-setting": "export STRIPE_SECRET=whsec_123456",
        "npm-token": "npm_" + "a1" * 18,
        "pypi-token": "pypi-" + "AgEI" * 12,
        "netrc-password": "machine db.example.org login app password p4ss",
        "pgpass-password": "db.internal:5432:app:appuser:pg-P4ssw0rd!",
        "secret-json": '{"auth": "dXNlcjpwYXNz"}',
    }
    counts = Counter()
    assert "[REDACTED:" in redact_text(examples[kind], counts) and counts[kind] == 1


# --- variants ---------------------------------------------------------------------------------


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in strings(item)]


def test_variants_change_every_occurrence_of_a_value_and_nothing_else(tmp_path):
    imported("claude-code", DATA / "claude_code_session.jsonl", tmp_path)
    path = tmp_path / "out" / "claude_code_session.yaml"
    written, count, kept = generate_variants(path, 3, 0, tmp_path / "variants")
    assert kept == ["task"]  # a paraphrased fact keeps its value
    original = yaml.safe_load(path.read_text())
    planted = {f["id"]: f for t in original["turns"] for f in t.get("facts", [])}

    def values(fact):
        return [fact.get("answer"), *fact.get("aliases", []), *fact.get("items", [])]

    def body(data):  # every text of the conversation, facts aside
        return [s for t in data["turns"] for s in strings({k: v for k, v in t.items() if k != "facts"})]

    seen = set()
    for variant_path in written:
        variant = yaml.safe_load(variant_path.read_text())
        assert variant["variant_of"] == "claude_code_session"
        new = {f["id"]: f for t in variant["turns"] for f in t.get("facts", [])}
        mapping = {
            redrawn: old
            for fid in planted
            if fid != "task"
            for old, redrawn in zip(values(planted[fid]), values(new[fid]))
            if old != redrawn
        }
        assert len(mapping) == count == 5, mapping  # "pytest -q" and "1" have no word of their own: kept
        # No re-drawn value is left anywhere in the conversation...
        assert not any(
            re.search(rf"(?<!\w){re.escape(old)}(?!\w)", s) for old in mapping.values() for s in body(variant)
        )
        # ...and mapping each new value back gives the original conversation exactly.
        back = re.compile("|".join(map(re.escape, sorted(mapping, key=len, reverse=True))))
        assert [back.sub(lambda m, mapping=mapping: mapping[m[0]], s) for s in body(variant)] == body(original)
        seen.add(new["files-changed"]["items"][0])
    assert len(seen) == 3  # each variant draws its own values


def test_variants_of_a_bad_scenario_are_refused_before_anything_is_written(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: bad\ndescription: x\nturns: []\n")
    with pytest.raises(InputError, match="bad.yaml"):
        generate_variants(bad, 2, 0, tmp_path / "out")
    assert not (tmp_path / "out").exists()


# --- synthetic coding sessions ----------------------------------------------------------------


def test_generated_coding_sessions_are_long_seeded_and_probe_every_kind(tmp_path):
    first = generate_coding(CodingOptions(scenarios=2, steps=30, seed=3), tmp_path / "a")
    again = generate_coding(CodingOptions(scenarios=2, steps=30, seed=3), tmp_path / "b")
    assert [p.read_text() for p in first] == [p.read_text() for p in again]
    scenario = load_scenario(first[0])
    # The request, then a user message mid-session that changes a constraint.
    assert sum(not t.continues for t in scenario.turns) == 2 and len(calls(scenario)) == 30
    assert sum(len(t.text()) for t in scenario.turns) > 10_000 and pairs_intact(scenario)
    kinds = Counter(f.kind for f in facts(scenario).values())
    assert {"recall", "artifact", "continuation", "decision", "constraint", "plan", "identifier"} <= set(kinds)
    assert len(facts(scenario)["files-changed"].items) >= 2
    assert first[0].read_text() != first[1].read_text()
    with pytest.raises(ValueError, match="at least 25 tool steps"):
        generate_coding(CodingOptions(steps=5), tmp_path / "c")


def test_generated_sessions_vary_as_real_ones_do(tmp_path):
    """Six kinds of work in three toolchains, every pair once in 18 sessions; each with an edit refused
    and retried, a failed command, identifiers of several kinds read in output and reused, a plan whose
    items finish one by one, and a constraint changed mid-session (the earlier one stale)."""
    paths = generate_coding(CodingOptions(scenarios=18, steps=25, file_chars=300, seed=4), tmp_path)
    described = [load_scenario(p).description for p in paths]
    pairs = {re.search(r"\): (\S+) in (\S+);", d).groups() for d in described}
    assert len(pairs) == 18 and {t for _, t in pairs} == {"python", "typescript", "go"}
    errors = Counter()
    for path in paths:
        scenario = load_scenario(path)
        made = calls(scenario)
        assert any(c.tool == "Edit" and c.is_error and "String to replace not found" in c.result for c in made)
        assert any(c.tool == "Bash" and c.is_error and c.input["command"] == "make lint" for c in made)
        found = {p.fact_id.rsplit("-", 1)[0] for p in probes(scenario) if p.kind == "identifier"}
        assert {"reused-commit-hash", "reused-environment-variable", "reused-port"} <= found
        # The ticket id is an identifier where the agent read it (git log), not where the user typed it.
        assert ("reused-id" in found) == ("ticket #" not in scenario.turns[0].user)
        plan = next(p for p in probes(scenario) if p.kind == "plan")
        assert [len(v.done) for _, v in plan.values] == [1, 2, 3, 4]  # finished one by one
        changed = next(p for p in probes(scenario) if p.fact_id == "constraint-1")
        assert (
            len(changed.values) == 2
            and changed.target.stale[0].answer.endswith("_schema" + Path(changed.target.stale[0].answer).suffix)
            and "_generated" in changed.target.expected.answer
        )
        assert changed.constraint
        errors[
            next(p for p in probes(scenario) if p.fact_id == "first-error").target.expected.answer.split(":")[0]
        ] += 1
        assert "first-failures" in facts(scenario)  # pytest's, Jest's and gotestsum's summaries are read
    assert "runtime error" in errors and len(errors) >= 5  # Go's panics read as errors, not as their test's name
