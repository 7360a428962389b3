"""Scenario validation: every rejection names the file, the line and the field."""

import glob
import json
import textwrap
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import InputError
from harness.inputs.probes import probes
from harness.inputs.scenario_file import load_scenario

REPO = Path(__file__).resolve().parent.parent

VALID = """\
id: demo
description: A small scenario.
tools:
  - name: lookup
    description: Look something up.
    result: nothing
turns:
  - user: My locker code is 4471 and my name is Ana.
    assistant: Noted, locker 4471.
    facts:
      - id: locker
        kind: number
        answer: "4471"
        probe: What is my locker code?
  - user: Look up my booking.
    assistant:
      text: Looking.
      tool_calls:
        - tool: lookup
          input: {ref: X}
          result: Booking QX-19 confirmed.
      final: Your booking QX-19 is confirmed.
    facts:
      - id: booking
        kind: identifier
        answer: QX-19
        probe: What is my booking reference?
  - user: Change my locker to 4480.
    supersedes:
      - fact: locker
        answer: "4480"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def rejection(tmp_path: Path, text: str) -> InputError:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    assert caught.value.path == str(path)
    return caught.value


def test_valid_scenario_loads_with_final_values(tmp_path):
    scenario = load_scenario(write(tmp_path, VALID))
    locker, booking = probes(scenario)
    assert (locker.fact_id, locker.planted_turn, locker.changed_turn) == ("locker", 0, 2)
    assert locker.target.expected.answer == "4480"
    assert [s.answer for s in locker.target.stale] == ["4471"]
    assert booking.target.stale == () and booking.changed_turn == 1


@pytest.mark.parametrize(
    "old, new, line, field, message",
    [
        (
            "    assistant: Noted, locker 4471.\n",
            "    asistant: Noted, locker 4471.\n",
            9,
            "turns[0].asistant",
            "unknown key",
        ),
        ("        kind: number\n", "        kind: [number]\n", 12, "turns[0].facts[0].kind", "valid string"),
        ("        probe: What is my locker code?\n", "", 11, "turns[0].facts[0].probe", "missing"),
        ("      - id: booking\n", "      - id: locker\n", 24, "turns[1].facts[0].id", "duplicate fact id"),
        (
            "        probe: What is my locker code?\n",
            "        probe: Is my locker code 4471?\n",
            14,
            "turns[0].facts[0].probe",
            "contains its own answer",
        ),
        ('        answer: "4471"\n', '        answer: "4472"\n', 13, "turns[0].facts[0].answer", "does not occur"),
        ("      - fact: locker\n", "      - fact: lockr\n", 30, "turns[2].supersedes[0].fact", "no fact 'lockr'"),
        (
            '        answer: "4480"\n',
            '        answer: "4490"\n',
            31,
            "turns[2].supersedes[0].answer",
            "does not occur in the user line",
        ),
        (
            "        - tool: lookup\n",
            "        - tool: lokup\n",
            19,
            "turns[1].assistant.tool_calls[0].tool",
            "unknown tool",
        ),
        ("      final: Your booking QX-19 is confirmed.\n", "", 16, "turns[1].assistant", "needs `final`"),
        ("  - name: lookup\n", "  - name: lookup\n    name: again\n", 5, "tools[0]", "duplicate key"),
        # Both an empty `turns` and an unknown key: the unknown key (likely the typo) is named first.
        ("turns:\n  - user: My locker", "turns: []\nx:\n  - user: My locker", 8, "x", "unknown key"),
        (
            "    assistant: Noted, locker 4471.\n",
            "    assistant: Noted, locker 4471.\n  user: [\n",
            10,
            "",
            "invalid YAML",
        ),
    ],
)
def test_each_rejection_names_line_and_field(tmp_path, old, new, line, field, message):
    assert old in VALID
    error = rejection(tmp_path, VALID.replace(old, new, 1))
    assert (error.line, error.field) == (line, field)
    assert message in error.message
    assert str(error).startswith(f"{tmp_path / 'scenario.yaml'}:{line}: ")


def test_a_fact_planted_by_a_live_turn_must_be_in_the_user_line(tmp_path):
    error = rejection(
        tmp_path,
        """\
        id: live
        description: d
        turns:
          - user: Please pick a colour for me.
            facts:
              - {id: c, kind: preference, answer: teal, probe: "Which colour?"}
        """,
    )
    assert "does not occur in the user line" in error.message and error.line == 6


def test_non_mapping_and_empty_files_are_rejected(tmp_path):
    assert "a scenario is a mapping" in rejection(tmp_path, "- just\n- a list\n").message
    assert "a scenario is a mapping" in rejection(tmp_path, "").message


def test_python_tags_are_not_constructed(tmp_path):
    error = rejection(tmp_path, VALID.replace("id: demo", "id: !!python/object/apply:os.system [echo hi]"))
    assert "invalid YAML" in error.message and error.line == 1


@pytest.mark.parametrize("path", sorted(glob.glob(str(REPO / "scenarios" / "*.yaml"))))
def test_shipped_scenarios_validate(path):
    assert probes(load_scenario(path))


def test_shipped_scenarios_cover_every_fact_kind_and_feature():
    scenarios = [load_scenario(p) for p in glob.glob(str(REPO / "scenarios" / "*.yaml"))]
    facts = [f for s in scenarios for t in s.turns for f in t.facts]
    assert len(scenarios) >= 8
    assert {"number", "name", "identifier", "date", "decision", "preference"} <= {f.kind for f in facts}
    assert any(t.supersedes for s in scenarios for t in s.turns)
    assert any(f.distractors for f in facts)
    assert any(t.assistant is None for s in scenarios for t in s.turns)  # live turns
    in_tool_results = [
        f
        for s in scenarios
        for t in s.turns
        if t.assistant and t.assistant.tool_calls
        for f in t.facts
        if any(f.answer in c.result for c in t.assistant.tool_calls)
    ]
    assert in_tool_results


def test_cli_validate_and_schema(tmp_path, capsys):
    assert main(["validate", str(write(tmp_path, VALID))]) == 0
    assert "ok (3 turns, 2 facts)" in capsys.readouterr().out
    assert main(["schema", "scenario"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert {"id", "description", "tools", "turns"} <= set(schema["properties"])
    bad = write(tmp_path, VALID.replace("kind: number", "kind: [number]"))
    assert main(["validate", str(bad)]) == 1
    assert capsys.readouterr().err.strip() == f"error: {bad}:12: turns[0].facts[0].kind: Input should be a valid string"


SET_RULE = """\
id: secrets
description: A set constraint.
turns:
  - user: Never paste API keys or passwords into the chat.
    assistant: Understood.
    facts:
      - id: secrets
        kind: constraint
        match: set
        constraint: true
        items: [API keys, passwords]
        probe: PROBE
"""


@pytest.mark.parametrize(
    "probe, item",
    [("What is the rule about API keys and passwords?", "API keys"), ("Which passwords rule?", "passwords")],
)
def test_a_probe_that_names_an_item_of_its_own_answer_is_refused(tmp_path, probe, item):
    error = rejection(tmp_path, SET_RULE.replace("PROBE", probe))
    assert (error.line, error.field) == (12, "turns[0].facts[0].probe")
    assert f"contains {item!r}, an item of its own answer" in error.message


def test_a_probe_that_names_no_item_is_accepted(tmp_path):
    scenario = load_scenario(write(tmp_path, SET_RULE.replace("PROBE", "What must never go into the chat?")))
    assert probes(scenario)[0].constraint
