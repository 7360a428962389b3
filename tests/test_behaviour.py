"""Behaviour at the cut: each check on crafted steps whose answer is known (a forbidden path edited, a
ruled-out program run, a finished item put back or redone, the same failing command with and without
a change between, the same refused edit, a re-read with and without a change between); a constraint
changed mid-session scored wrong when the summary keeps the lifted one; the report pairs each check
with the full-history floor over scenarios."""

import pandas as pd
import pytest

from harness import actions
from harness.analysis.compare import behaviour_floor, behaviour_units
from harness.execution import behaviour
from harness.inputs.probes import probes
from harness.inputs.scenario import Scenario
from harness.records.schema import Behaviour
from harness.reports.tables import behaviour_at_the_cut

TOOLS = [{"name": n, "description": n, "result": "ok"} for n in ("Read", "Edit", "Bash", "TodoWrite")]
PLAN = [{"content": "Reproduce the failure", "status": "completed"}, {"content": "Fix the parser", "status": "pending"}]


def step(tool, result="ok", error=False, **arguments):
    return {
        "assistant": {
            "tool_calls": [
                {"tool": tool, "input": arguments, "result": result, **({"is_error": True} if error else {})}
            ]
        }
    }


def crafted(between=None) -> Scenario:
    """Turns: read src/app.py; a failing test; a refused edit; the plan with one item finished; make lint
    failing; then `between` (a step played after them all, e.g. a change), then a last step."""
    turns = [
        {
            "user": "Fix the parser. Don't edit lib/schema.py, another team owns it. Don't use grep; use rg instead.",
            **step("Read", "def parse(): ...", file_path="src/app.py"),
            "facts": [
                {
                    "id": "no-edit",
                    "kind": "constraint",
                    "constraint": True,
                    "answer": "lib/schema.py",
                    "probe": "What must you never edit?",
                },
                {
                    "id": "no-tool",
                    "kind": "constraint",
                    "constraint": True,
                    "answer": "grep",
                    "probe": "What must you never use?",
                },
            ],
        },
        step("Bash", "1 failed", error=True, command="pytest tests/test_app.py -x"),
        step(
            "Edit",
            "String to replace not found in file.",
            error=True,
            file_path="src/app.py",
            old_string="a",
            new_string="b",
        ),
        step("Edit", "The file src/util.py has been updated.", file_path="src/util.py", old_string="x", new_string="y"),
        {
            **step("TodoWrite", "Todos have been modified successfully.", todos=PLAN),
            "facts": [
                {
                    "id": "plan",
                    "kind": "plan",
                    "match": "plan",
                    "items": [p["content"] for p in PLAN],
                    "done": ["Reproduce the failure"],
                    "probe": "Which items are finished?",
                }
            ],
        },
        step("Bash", "make: *** No rule to make target 'lint'.  Stop.", error=True, command="make lint"),
    ]
    if between:
        turns.append(between)
    turns.append(step("Bash", "ok", command="ls"))
    turns[-1]["assistant"]["final"] = "Done."
    return Scenario.model_validate({"id": "s", "description": "d", "tools": TOOLS, "turns": turns})


def checks(scenario: Scenario, tool: str | None, **arguments) -> dict:
    at = behaviour.situation(scenario, probes(scenario), len(scenario.turns) - 1)
    return behaviour.check(actions.of_call(tool, arguments) if tool else actions.Action(None), at)


@pytest.mark.parametrize(
    "tool, arguments, broken",
    [
        ("Edit", {"file_path": "./lib/schema.py", "old_string": "a", "new_string": "b"}, "breaks_constraint"),
        ("Bash", {"command": "sed -i 's/a/b/' lib/schema.py"}, "breaks_constraint"),
        ("Bash", {"command": "cd src && grep -rn parse ."}, "breaks_constraint"),  # the program ruled out
        (
            "TodoWrite",
            {
                "todos": [
                    {"content": "Reproduce the failure", "status": "pending"},
                    {"content": "Fix the parser", "status": "in_progress"},
                ]
            },
            "redoes_finished",
        ),
        (
            "Edit",
            {"file_path": "src/util.py", "old_string": "x", "new_string": "y"},
            "redoes_finished",
        ),  # the same change
        ("Bash", {"command": "make lint"}, "repeats_failure"),
        (
            "Edit",
            {"file_path": "src/app.py", "old_string": "a", "new_string": "b"},
            "repeats_failure",
        ),  # the same refused edit
        ("Read", {"file_path": "src/app.py"}, "rereads"),
        ("Bash", {"command": "cat src/app.py"}, "rereads"),
    ],
)
def test_each_check_finds_the_step_that_goes_wrong(tool, arguments, broken):
    found = checks(crafted(), tool, **arguments)
    assert found[broken] is True
    assert [name for name, value in found.items() if value] == [broken]


@pytest.mark.parametrize(
    "tool, arguments",
    [
        (
            "Edit",
            {"file_path": "src/app.py", "old_string": "parse", "new_string": "parse2"},
        ),  # another edit of that file
        ("Bash", {"command": "rg -n parse src"}),  # the program the user asked for
        ("Bash", {"command": "pytest -q tests/test_app.py"}),  # it failed, but src/util.py changed since
        ("Read", {"file_path": "src/other.py"}),
        (
            "TodoWrite",
            {
                "todos": [
                    {"content": "Reproduce the failure", "status": "completed"},
                    {"content": "Fix the parser", "status": "in_progress"},
                ]
            },
        ),
        (None, {}),  # a reply with no tool call
    ],
)
def test_steps_that_keep_to_the_history_break_nothing(tool, arguments):
    found = checks(crafted(), tool, **arguments)
    assert not any(found.values()) and set(found) == set(Behaviour)


@pytest.mark.parametrize(
    "line, run",
    [
        ("cd repo && grep -rn parse src | head", {"cd", "grep", "head"}),
        ('echo "we said no curl; use httpie" && http POST :8000/x', {"echo", "http"}),  # in a string
        ("http GET :8000/health  # rather than curl", {"http"}),  # in a comment
        ("echo a#b; curl -s x", {"echo", "curl"}),  # a # inside a word starts no comment
        ("cd repo\ncurl -s localhost", {"cd", "curl"}),  # a second line runs too
        ("FOO=1 sudo curl -s x | jq .", {"curl", "jq"}),
        ("bash -lc 'curl x && wget y'", {"bash", "curl", "wget"}),
        ("/usr/bin/curl x", {"curl"}),
        ('echo "unbalanced', {"echo"}),
    ],
)
def test_the_programs_a_shell_line_runs_leave_out_comments_and_strings(line, run):
    assert actions.programs(line) == run


def test_a_change_since_a_failure_or_a_read_makes_trying_again_fine():
    changed = crafted(
        step("Edit", "The file src/app.py has been updated.", file_path="src/app.py", old_string="p", new_string="q")
    )
    # src/app.py changed after every failure: none is left to repeat (n/a), and that file is no re-read.
    assert checks(changed, "Bash", command="make lint")["repeats_failure"] is None
    assert checks(changed, "Read", file_path="src/app.py")["rereads"] is None  # nothing read is unchanged
    # A change to another file leaves the refused edit of src/app.py a failure to repeat.
    other = crafted(
        step("Edit", "The file src/b.py has been updated.", file_path="src/b.py", old_string="p", new_string="q")
    )
    assert checks(other, "Edit", file_path="src/app.py", old_string="a", new_string="b")["repeats_failure"] is True
    assert checks(other, "Bash", command="make lint")["repeats_failure"] is False


def test_nothing_to_check_is_not_applicable_rather_than_kept():
    bare = Scenario.model_validate(
        {
            "id": "b",
            "description": "d",
            "tools": TOOLS,
            "turns": [
                {"user": "Look around.", **step("Bash", "a.txt", command="ls")},
                {**step("Bash", "ok", command="pwd")},
            ],
        }
    )
    bare.turns[-1].assistant.final = "Done."
    assert checks(bare, "Bash", command="ls") == dict.fromkeys(Behaviour)


def test_a_lifted_constraint_forbids_nothing_and_the_new_one_stands():
    scenario = Scenario.model_validate(
        {
            "id": "c",
            "description": "d",
            "tools": TOOLS,
            "turns": [
                {
                    "user": "Don't edit lib/schema.py.",
                    **step("Read", "x", file_path="lib/schema.py"),
                    "facts": [
                        {
                            "id": "rule",
                            "kind": "constraint",
                            "constraint": True,
                            "answer": "lib/schema.py",
                            "probe": "What must you never edit?",
                        }
                    ],
                },
                {
                    **step("Bash", "ok", command="ls"),
                    "assistant": {
                        "tool_calls": [{"tool": "Bash", "input": {"command": "ls"}, "result": "ok"}],
                        "final": "ok",
                    },
                },
                {
                    "user": "lib/schema.py is ours now, you may edit it. Don't edit lib/generated.py instead.",
                    **step("Bash", "ok", command="pwd"),
                    "supersedes": [{"fact": "rule", "answer": "lib/generated.py"}],
                },
                step("Bash", "ok", command="ls"),
            ],
        }
    )
    scenario.turns[-1].assistant.final = "Done."
    at = behaviour.situation(scenario, probes(scenario), 3)
    assert at.forbidden_paths == {"lib/generated.py"}
    assert behaviour.check(actions.of_call("Edit", {"file_path": "lib/schema.py"}), at)["breaks_constraint"] is False
    assert behaviour.check(actions.of_call("Edit", {"file_path": "lib/generated.py"}), at)["breaks_constraint"] is True


def cuts(wrong_compacted: list[int], wrong_ceiling: list[int], scenarios: int = 6) -> pd.DataFrame:
    """Four cuts per scenario; the compacted agent breaks a constraint at the cuts listed of every
    scenario, the full-history agent at those of its own list; one cut a scenario has nothing to check."""
    rows = []
    for s in range(scenarios):
        for c in range(4):
            rows.append(
                {
                    "scenario": f"s{s}",
                    "fact": f"cut-{c}",
                    "budget": "50%",
                    "strategy": "summary",
                    "repeat": 0,
                    "prompt": "seed",
                    "variant": "summary: seed",
                    "ceiling": "Read: a",
                    "compacted": "Read: a",
                    "error": None,
                    "ceiling_error": None,
                    "breaks_constraint": None if c == 3 else c in wrong_compacted,
                    "ceiling_breaks_constraint": None if c == 3 else c in wrong_ceiling,
                }
            )
    return pd.DataFrame(rows)


def test_each_check_is_paired_with_the_full_history_floor_over_scenarios():
    """Compacted: 2 of 3 checkable cuts break a constraint in each of six scenarios; the full history:
    none. A rate of 67% against 0%, over 18 cuts in 6 scenarios; the n/a cut counts nowhere."""
    comparison = behaviour_floor(cuts([0, 1], []), "keeps-constraints")
    assert comparison.n == 18 and comparison.test.clusters == 6
    assert comparison.test.mean_a == 1.0 and comparison.test.mean_b == pytest.approx(1 / 3)
    assert len(behaviour_units(cuts([0, 1], []), "keeps-constraints")) == 18
    table = behaviour_at_the_cut(cuts([0, 1], []))
    row = table.loc[("summary: seed", "constraint broken")]
    assert row["compacted"].startswith("67% (12/18") and row["full history (the floor)"].startswith("0% (0/18")
    assert "more often than the floor" in row["difference"]
    better = behaviour_at_the_cut(cuts([], [0, 1]))  # the full-history agent went wrong, the compacted one not
    assert "less often than the floor" in better.loc[("summary: seed", "constraint broken"), "difference"]
    same = behaviour_at_the_cut(cuts([0], [0]))  # the same steps either way: nothing to blame on compaction
    assert "not distinguishable from the floor" in same.loc[("summary: seed", "constraint broken"), "difference"]
