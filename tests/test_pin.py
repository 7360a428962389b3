"""The pinning arm (`+pin`): the user's rules from what a strategy folded, put back verbatim."""

import json
from pathlib import Path

import pytest
from fakes import FakeClient

from harness.compaction.context import CompactionContext, CompactionSettings
from harness.compaction.seed import SUMMARY_PREFIX, compact, truncate
from harness.errors import InputError
from harness.execution.evals import load_eval
from harness.execution.executors import run_eval
from harness.execution.pin import PIN_PREFIX, pinned, user_rules
from harness.records import load_run

RULE = "Do not edit billing/schema.py, the payments team owns it; make any change in billing/invoice.py."
CONTRAST = "Use httpie, not curl."
LIFT = "billing/schema.py is ours now, so you may edit it."


def tool_turn(command: str, result: str) -> list[dict]:
    call = {"type": "tool_use", "id": f"t-{command}", "name": "Bash", "input": {"command": command}}
    return [
        {"role": "assistant", "content": [{"type": "text", "text": "Running it."}, call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": result}]},
        {"role": "assistant", "content": "Done."},
    ]


def session() -> list[dict]:
    return [
        {"role": "user", "content": f"The totals test fails. Find out why and fix it. {RULE}"},
        # A tool's output and the agent's words are not the user's: never pinned.
        *tool_turn("cat NOTES", "Never run the migrations by hand."),
        {"role": "user", "content": f"Check the endpoint later. {CONTRAST}\nThanks."},
        {"role": "assistant", "content": "I won't use curl; I'll never touch the schema."},
        {"role": "user", "content": f"Good news. {LIFT}"},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "What is left?"},
        {"role": "assistant", "content": "The fix itself."},
    ]


def test_the_users_rules_and_lifts_are_read_verbatim_in_order_and_nothing_else():
    assert user_rules(session()) == [RULE, CONTRAST, LIFT]
    # An earlier pin's rules are read back from its block; a summary's own sentences never are.
    summary = f"{SUMMARY_PREFIX}The user said never to use grep.]"
    block = f"{PIN_PREFIX}- {RULE}\n- {CONTRAST}\n(end of the user's rules)]"
    assert user_rules([{"role": "user", "content": f"{summary}\n\n{block}"}]) == [RULE, CONTRAST]


def context(events: list, limit: int = 200) -> CompactionContext:
    settings = CompactionSettings(summary_prompt="Summarise.", keep_recent=1, summary_max_tokens=50)
    return CompactionContext(
        client=FakeClient(lambda request: "They fixed nothing yet."), limit=limit, settings=settings, events=events
    )


def test_a_summary_gets_the_rules_it_folded_back_and_says_what_they_cost():
    events: list = []
    history = pinned(compact)(session(), context(events))
    opening = history[0]["content"]
    assert opening.startswith(f"{SUMMARY_PREFIX}They fixed nothing yet.]\n\n{PIN_PREFIX}")
    assert [line for line in opening.splitlines() if line.startswith("- ")] == [
        f"- {RULE}",
        f"- {CONTRAST}",
        f"- {LIFT}",
    ]
    assert history[-2:] == session()[-2:]  # the recent exchange stays verbatim
    (event,) = events
    assert event.pinned in opening and event.pinned_size == len(event.pinned) + 2  # chars: the block and its blank line
    assert event.size_after == sum(len(json.dumps(m["content"])) for m in history) or event.size_after > 0
    # Compacted again, the block is folded and its rules come back; the summary's words do not.
    again = pinned(compact)(history + session()[-2:], context(events, limit=50))
    assert [line for line in again[0]["content"].splitlines() if line.startswith("- ")] == [
        f"- {RULE}",
        f"- {CONTRAST}",
        f"- {LIFT}",
    ]


def test_after_a_truncation_the_rules_come_as_a_turn_of_their_own_and_roles_alternate():
    events: list = []
    history = pinned(truncate)(session(), context(events))
    assert history[0]["role"] == "user" and history[0]["content"].startswith(PIN_PREFIX)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[2:] == session()[-2:] and events[0].pinned == history[0]["content"]


def test_nothing_folded_or_no_rule_folded_leaves_the_history_as_the_strategy_left_it():
    events: list = []
    short = session()[-2:]
    assert pinned(compact)(short, context(events, limit=10_000)) == short and not events
    plain = [{"role": "user", "content": "Hello there."}, {"role": "assistant", "content": "Hi."}] * 3
    history = pinned(compact)(plain, context(events, limit=10))
    assert PIN_PREFIX not in json.dumps(history) and events[0].pinned is None and events[0].pinned_size == 0


def write_eval(tmp_path: Path, strategies: str) -> Path:
    scenario = Path(__file__).parents[1] / "scenarios" / "actions" / "billing-schema.yaml"
    (tmp_path / "prompt.txt").write_text("Summarise.")
    path = tmp_path / "pin.yaml"
    path.write_text(
        f"name: pin\nscenarios: [{scenario}]\nbudgets: ['50%']\nprompts: [prompt.txt]\n"
        f"strategies: {strategies}\nprobes: false\n"
    )
    return path


def test_the_arm_keeps_the_rule_a_summary_dropped_and_names_the_arm_in_its_rows(tmp_path):
    ev = load_eval(write_eval(tmp_path, "[summary, summary+pin, summary+pin+recovery]"))
    assert ev.strategy("summary+pin").pin and not ev.strategy("summary").pin
    assert ev.strategy("summary+pin+recovery").pin and ev.strategy("summary+pin+recovery").recovery
    run = load_run(run_eval(ev, FakeClient(lambda request: "Work is under way."), tmp_path / "results", progress=False))
    rule = run.retention[run.retention["fact"] == "schema-rule"].groupby("strategy")["retained"].agg(list)
    assert rule["summary"] and not any(rule["summary"]) and all(rule["summary+pin"])
    pinned_size = run.compactions.groupby("strategy")["pinned_size"].agg(list)
    assert set(pinned_size["summary"]) == {0} and all(size > 0 for size in pinned_size["summary+pin"])


@pytest.mark.parametrize(
    ("strategies", "message"),
    [
        ("[none+pin]", r"pin.yaml:5: strategies\[0\]: none\+pin: none never compacts, so there is nothing to pin back"),
        ("[summary+recovery+pin]", r"optionally \+pin and then \+recovery"),
    ],
)
def test_a_pin_on_what_never_compacts_or_in_the_wrong_order_is_refused(tmp_path, strategies, message):
    with pytest.raises(InputError, match=message):
        load_eval(write_eval(tmp_path, strategies))
