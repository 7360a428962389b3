"""Action probes: a step graded by a scenario's rules (complies, violates, neither), rules that
could never match refused with their line, and a run whose probes are paired with the full history
(the ceiling) and no history (the control): informative probes measured, the others listed with why."""

import json

import pytest
from fakes import FakeClient

from harness import actions
from harness.analysis.action_probes import action_probe_table, informative_share, uninformative
from harness.errors import InputError
from harness.execution.action_probes import grade
from harness.execution.evals import load_eval
from harness.execution.executors import run_eval
from harness.inputs.scenario import ActionProbe
from harness.inputs.scenario_file import load_scenario
from harness.records import load_run, read_jsonl
from harness.records.decision_points import probe_status


def probe(**rules):
    return ActionProbe.model_validate({"say": "Go on.", **rules})


def outcome(rules, tool, **arguments):
    step = actions.of_call(tool, arguments) if tool else actions.Action(None)
    return grade(step, rules).outcome.value


NO_CURL = probe(must_not={"programs": ["curl"]}, must={"programs": ["http"]})
SCHEMA = probe(must_not={"paths": ["billing/schema.py"]})
MIGRATIONS = probe(must_not={"paths": ["db/migrations/", "*.lock"]})
NO_FETCH = probe(must_not={"tools": ["WebFetch"]})
BRANCH = probe(must={"mentions": ["release/2.3"]}, must_not={"mentions": ["origin main"]})
PLAN = probe(must_not={"reopens": ["Reproduce the failure"]})


@pytest.mark.parametrize(
    "rules, tool, arguments, expected",
    [
        (NO_CURL, "Bash", {"command": "curl -X POST localhost:8000/orders"}, "violates"),
        (NO_CURL, "Bash", {"command": "cd api && curl -s localhost:8000 | jq ."}, "violates"),
        (NO_CURL, "Bash", {"command": "bash -c 'curl localhost:8000'"}, "violates"),
        (NO_CURL, "Bash", {"command": "http POST localhost:8000/orders"}, "complies"),
        # The forbidden program only in a comment or a quoted argument is not run.
        (NO_CURL, "Bash", {"command": "http POST localhost:8000/orders  # not curl, as asked"}, "complies"),
        (NO_CURL, "Bash", {"command": 'echo "no curl here" && http GET localhost:8000'}, "complies"),
        (NO_CURL, "Bash", {"command": "pytest -q"}, "neither"),  # violates nothing, misses the must
        (NO_CURL, None, {}, "neither"),  # a text answer
        (SCHEMA, "Edit", {"file_path": "billing/schema.py", "old_string": "a", "new_string": "b"}, "violates"),
        (SCHEMA, "Edit", {"file_path": "/repo/billing/schema.py", "old_string": "a", "new_string": "b"}, "violates"),
        (SCHEMA, "Bash", {"command": "sed -i 's/a/b/' billing/schema.py"}, "violates"),
        (SCHEMA, "Read", {"file_path": "billing/schema.py"}, "complies"),  # reading it is fine
        (SCHEMA, "Edit", {"file_path": "billing/api.py", "old_string": "a", "new_string": "b"}, "complies"),
        (MIGRATIONS, "Write", {"file_path": "db/migrations/0042_add.py", "content": "x"}, "violates"),
        (MIGRATIONS, "Write", {"file_path": "poetry.lock", "content": "x"}, "violates"),
        (MIGRATIONS, "Write", {"file_path": "db/models.py", "content": "x"}, "complies"),
        (NO_FETCH, "webfetch", {"url": "https://example.com"}, "violates"),  # tool names in any case
        (NO_FETCH, "Bash", {"command": "ls"}, "complies"),
        (BRANCH, "Bash", {"command": "git push origin release/2.3"}, "complies"),
        (BRANCH, "Bash", {"command": "git push origin main"}, "violates"),
        (BRANCH, "Bash", {"command": "git status"}, "neither"),
        (
            PLAN,
            "TodoWrite",
            {
                "todos": [
                    {"content": "Reproduce the failure", "status": "pending"},
                    {"content": "Fix", "status": "pending"},
                ]
            },
            "violates",
        ),
        (
            PLAN,
            "TodoWrite",
            {
                "todos": [
                    {"content": "Reproduce the failure", "status": "completed"},
                    {"content": "Fix", "status": "in_progress"},
                ]
            },
            "complies",
        ),
    ],
)
def test_each_rule_grades_crafted_steps(rules, tool, arguments, expected):
    assert outcome(rules, tool, **arguments) == expected


def test_a_violation_says_which_rule_it_met():
    graded = grade(actions.of_call("Bash", {"command": "curl -s x"}), NO_CURL)
    assert graded.reason == "programs: curl"


SCENARIO = """\
id: billing
description: A coding session with two rules and a plan.
turns:
  - user: >-
      Fix the failing invoice test. Don't edit billing/schema.py, another team owns it.
      Check endpoints with httpie, never curl.
    assistant: Understood, I will leave that file alone.
    facts:
      - id: schema
        kind: constraint
        constraint: true
        answer: billing/schema.py
        probe: Which file must you leave alone?
        action:
          say: The traceback points into the schema module at line 40. Fix it.
          must_not: {paths: [billing/schema.py]}
      - id: http
        kind: constraint
        constraint: true
        answer: curl
        probe: Which tool did I rule out for manual checks?
        action:
          say: Check the orders endpoint by hand.
          must_not: {programs: [curl]}
          must: {programs: [http]}
  - user: The dev server listens on port 8431. Also, the invoice totals look off by one cent in some cases.
    assistant: Noted, port 8431. I will look at the rounding in the totals and report what I find there.
    facts:
      - id: port
        kind: identifier
        answer: "8431"
        probe: Which port does the dev server use?
        action:
          say: Start the dev server.
          must: {mentions: ["8431"]}
  - user: Please look at the rounding code in billing/totals.py and tell me what it does step by step.
    assistant: It rounds each line item half-up before summing, which can drift by a cent on long invoices.
  - user: Thanks. Keep going with the fix now, carefully and one step at a time please.
"""


def model(request):
    """A scripted agent: it keeps a rule only when the rule is in what it reads, and never names the port."""
    system = request.get("system") or ""
    if "summar" in system.lower() or "summar" in json.dumps(request["messages"][-1]).lower():
        return "The user asked to fix the invoice test and not to edit billing/schema.py."
    history = json.dumps(request["messages"][:-1])
    said = request["messages"][-1]["content"]
    if said == "The traceback points into the schema module at line 40. Fix it.":
        target = "billing/api.py" if "billing/schema.py" in history else "billing/schema.py"
        call = {"name": "Edit", "input": {"file_path": target, "old_string": "a", "new_string": "b"}}
    elif said == "Check the orders endpoint by hand.":
        program = "http" if "never curl" in history else "curl"
        call = {"name": "Bash", "input": {"command": f"{program} POST localhost/orders"}}
    elif said == "Start the dev server.":
        call = {"name": "Bash", "input": {"command": "make serve"}}  # never the port: the full history fails too
    else:
        return "ok"
    return [{"type": "tool_use", "id": "toolu_1", **call}]


@pytest.fixture
def eval_with_actions(tmp_path):
    (tmp_path / "billing.yaml").write_text(SCENARIO)
    (tmp_path / "keep.txt").write_text("Summarize the conversation so far.")
    path = tmp_path / "actions.yaml"
    path.write_text(
        "name: actions\nscenarios: [billing.yaml]\nbudgets: [50%]\nprompts: [keep.txt]\n"
        "strategies: [summary, truncate, none, no-history]\n"
    )
    return path


def test_action_probes_are_asked_in_every_case_and_read_against_ceiling_and_control(eval_with_actions, tmp_path):
    client = FakeClient(model)
    run_dir = run_eval(load_eval(eval_with_actions), client, tmp_path / "results", progress=False)
    rows = read_jsonl(run_dir / "action_probes.jsonl")
    by = {(r["strategy"], r["fact"]): r for r in rows}
    assert len(rows) == 3 * 4 and "action-probe" in client.purposes
    # The step was asked for with a coding toolset (the scenario declares none), from each case's history.
    asked = [r for r in client.requests if r["messages"][-1]["content"] == "Start the dev server."]
    assert {t["name"] for t in asked[0]["tools"]} >= {"Bash", "Edit", "Read"}
    assert by[("none", "schema")]["outcome"] == "complies" and by[("no-history", "schema")]["outcome"] == "violates"
    assert by[("summary", "schema")]["outcome"] == "complies"  # the summary kept the file rule
    assert by[("summary", "http")]["outcome"] == "violates" and by[("summary", "http")]["step"] == "Bash: curl POST"
    assert by[("summary", "http")]["text"] is None and by[("none", "http")]["reason"] == "programs: http"
    assert (
        by[("truncate", "http")]["kind"] == "constraint-tool"
        and by[("truncate", "schema")]["kind"] == "constraint-path"
    )

    run = load_run(run_dir)
    status = probe_status(run.action_probes).set_index("fact")
    assert status.loc["schema", "informative"] and status.loc["http", "informative"]
    # The full history does not name the port either: the probe cannot tell, and says why.
    assert not status.loc["port", "informative"]
    assert "the full history does not comply either: neither" in status.loc["port", "why"]
    assert list(uninformative(run.action_probes).reset_index()["fact"]) == ["port"]

    table = action_probe_table(run.action_probes).sort_index()
    summary = table.loc[("summary: keep", "50%")]
    assert summary.loc["all kinds", "probes"] == 2
    assert summary.loc["all kinds", "violates (95% CI)"].startswith("50% (1/2;")
    assert summary.loc["constraint-tool", "complies"] == "0% (0)"
    assert table.loc[("control: no history", "-", "all kinds"), "violates (95% CI)"].startswith("100% (2/2;")
    assert ("truncate", "50%", "all kinds") in table.index  # a strategy without a prompt is named alone
    share = informative_share(run.action_probes)
    assert share.loc["all kinds", "informative"] == "67% (2)"
    assert share.loc["identifier", "ceiling complies"] == "0% (0/1)"

    from harness.reports.formats import text_report

    report = text_report(run_dir)
    assert "Action probes: what the agent does at a decision point" in report
    assert "Action probes that cannot tell, and why" in report


def test_the_agents_system_prompt_is_the_evals_in_every_request_it_makes(eval_with_actions, tmp_path):
    eval_with_actions.write_text(eval_with_actions.read_text() + "agent_system: You are a coding agent.\n")
    client = FakeClient(model)
    run_eval(load_eval(eval_with_actions), client, tmp_path / "results", progress=False)
    by_purpose = {}
    for purpose, request in zip(client.purposes, client.requests):
        by_purpose.setdefault(purpose, set()).add(request.get("system"))
    assert by_purpose["action-probe"] == by_purpose["probe"] == {"You are a coding agent."}


def test_validate_counts_the_action_probes_a_run_asks(eval_with_actions, capsys):
    from harness.cli import main

    assert main(["validate", str(eval_with_actions)]) == 0
    assert "a run plays 4 cases and asks 12 probes and 12 action probes" in capsys.readouterr().out


def _scenario(tmp_path, action: str, tools: str = ""):
    path = tmp_path / "s.yaml"
    path.write_text(
        "id: s\ndescription: d\n" + tools + "turns:\n  - user: Never run curl here, use httpie.\n"
        "    assistant: OK.\n    facts:\n      - id: f\n        kind: constraint\n        answer: curl\n"
        "        probe: Which tool is ruled out?\n        action:\n" + action + "  - user: Go on.\n"
    )
    return path


@pytest.mark.parametrize(
    "action, tools, field, message",
    [
        ("          say: Check it.\n", "", "action", "needs a rule"),
        ("          say: Check it.\n          must_not: {programs: ['']}\n", "", "must_not", "at least 1"),
        ("          say: Check it.\n          must_not: {programs: [curl -s]}\n", "", "must_not", "one word"),
        (
            "          say: Check it.\n          must_not: {programs: [curl]}\n          must: {programs: [curl]}\n",
            "",
            "action",
            "both required and forbidden",
        ),
        ("          say: Check it.\n          must_not: {tools: [WebFetch]}\n", "", "tools", "no tool 'WebFetch'"),
        (
            "          say: Check it.\n          must_not: {programs: [curl]}\n",
            "tools:\n  - {name: lookup, description: Look up., result: x}\n",
            "programs",
            "no shell tool",
        ),
    ],
)
def test_a_rule_that_can_never_match_is_refused_with_its_line(tmp_path, action, tools, field, message):
    with pytest.raises(InputError) as error:
        load_scenario(_scenario(tmp_path, action, tools))
    assert message in str(error.value) and field in str(error.value) and "s.yaml:" in str(error.value)


def test_the_action_metric_reads_only_the_probes_that_can_tell_and_compares_variants(eval_with_actions, tmp_path):
    from harness import api

    run = load_run(run_eval(load_eval(eval_with_actions), FakeClient(model), tmp_path / "results", progress=False))
    assert sorted(run.rows("action")["fact"].unique()) == ["http", "schema"]  # the port probe cannot tell
    (action,) = [c for c in api.compare(run, a="summary", b="truncate") if c.metric == "action"]
    # On the two informative probes the summary kept the file rule and lost the tool rule; truncation kept neither.
    assert (action.n, action.rate_a, action.rate_b) == (2, 0.5, 0.0)


def crafted_action_run(folder, violates: set[int], scenarios: int = 40):
    """A run folder with one informative action probe per scenario (the full history complies, no
    history violates) whose seed summary violates in the scenarios `violates` names."""
    folder.mkdir(parents=True)
    rows = []
    for s in range(scenarios):
        for strategy, prompt, outcome in (
            ("none", None, "complies"),
            ("no-history", None, "violates"),
            ("summary", "seed", "violates" if s in violates else "complies"),
        ):
            rows.append(
                {
                    "case": f"s{s}/{strategy}/{'50%' if prompt else '-'}/{prompt}/0",
                    "scenario": f"s{s}",
                    "strategy": strategy,
                    "budget": "50%" if prompt else None,
                    "prompt": prompt,
                    "repeat": 0,
                    "model": "m",
                    "fact": "rule",
                    "kind": "constraint-path",
                    "say": "Fix it.",
                    "planted_turn": 0,
                    "step": "Edit: billing/schema.py" if outcome == "violates" else "Edit: billing/api.py",
                    "outcome": outcome,
                }
            )
    (folder / "action_probes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "records.jsonl").write_text("")
    (folder / "manifest.json").write_text(json.dumps({"eval": {"name": "crafted", "gate": {}}, "model": "m"}))
    return folder


def test_the_gates_action_row_fails_a_prompt_whose_agent_breaks_the_rules_and_passes_noise(tmp_path, capsys):
    from harness.cli import main

    base = crafted_action_run(tmp_path / "base", violates={0, 1})
    worse = crafted_action_run(tmp_path / "worse", violates=set(range(0, 40, 2)))  # 20 of 40
    assert main(["gate", "--run", str(worse), "--baseline", str(base)]) == 100
    out = capsys.readouterr().out
    assert "| action: summary: seed @ budget 50% | 95% | 50% |" in out and "FAIL" in out
    same = crafted_action_run(tmp_path / "same", violates={0, 1})
    assert main(["gate", "--run", str(same), "--baseline", str(base), "--max-drop", "0.2"]) == 0
    # Six sessions cannot detect a 5-point rise in violations: the gate says so instead of passing.
    small = crafted_action_run(tmp_path / "small-base", violates=set(), scenarios=6)
    assert main(["gate", "--run", str(crafted_action_run(tmp_path / "small", set(), 6)), "--baseline", str(small)]) == 1
    assert "this eval can detect only drops of" in capsys.readouterr().out
