"""Next-action fidelity: at each cut, the step the compacted agent takes against the full-history
agent's (twice: the noise floor) and the log's; agreement, floor and drop on crafted cases; the
action keys on real tool_use inputs of each log format."""

import json
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import anthropic
import httpx
import pandas as pd
import pytest
import yaml
from fakes import FakeClient
from loopback import Loopback

from harness import actions
from harness.analysis.compare import floor_drop
from harness.cli import main
from harness.compaction.seed import SUMMARY_PREFIX
from harness.records import read_jsonl

DATA = Path(__file__).parent / "data" / "agent_logs"
SEED = Path(__file__).parents[1] / "harness" / "prompts" / "seed.txt"


# --- action keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tool, arguments, key",
    [
        (
            "Edit",
            {"file_path": "./payments/ledger.py", "old_string": "a", "new_string": "b"},
            "Edit: payments/ledger.py",
        ),
        ("Read", {"file_path": "payments//ledger.py"}, "Read: payments/ledger.py"),
        (
            "Bash",
            {"command": "cd /repo && FOO=1 pytest -x tests/test_ledger.py", "description": "run"},
            "Bash: pytest tests/test_ledger.py",
        ),
        ("Grep", {"pattern": "def settle", "path": None}, "Grep: def settle"),
        ("shell", {"command": ["bash", "-lc", "pytest -q ingest/"]}, "shell: pytest ingest"),  # Codex
        (
            "apply_patch",
            {"input": "*** Begin Patch\n*** Update File: ingest/reader.py\n@@\n-a\n+b"},
            "apply_patch: ingest/reader.py",
        ),  # Codex
        ("swe_agent", {"command": "open src/marshmallow/fields.py 1474"}, "swe_agent: open src/marshmallow/fields.py"),
        (
            "swe_agent",
            {"command": "edit 1475:1475\n        return int(round(value.total_seconds() / base_unit))"},
            "swe_agent: edit 1475:1475",
        ),
        ("bash", {"command": "sed -i 's/a/b/' src/app.py"}, "bash: sed src/app.py"),  # mini-swe-agent
        ("lookup_order", {"email": "priya@example.com"}, "lookup_order"),  # OpenAI-style function, no target key
        ("TodoWrite", {"todos": [{"content": "x", "status": "pending"}]}, "TodoWrite: the plan"),
    ],
)
def test_action_keys_of_each_log_formats_calls(tool, arguments, key):
    assert actions.of_call(tool, arguments).key == key


def test_a_reply_is_its_first_call_a_fenced_command_or_no_tool():
    shell = [{"name": "swe_agent"}]
    assert actions.of_reply(
        [{"type": "text", "text": "Let me look.\n```\nopen src/app.py\n```"}], shell
    ) == actions.Action("swe_agent", "open src/app.py", from_text=True)
    assert actions.of_reply([{"type": "text", "text": "It is fixed."}], shell).key == actions.NO_TOOL
    used = [{"type": "tool_use", "id": "t", "name": "swe_agent", "input": {"command": "ls src"}}]
    assert actions.of_reply(used, shell, from_text=1) == actions.Action("swe_agent", "ls src", from_text=True)
    both = actions.agreement(
        actions.of_call("Read", {"file_path": "a.py"}), actions.of_call("Read", {"file_path": "b.py"})
    )
    assert both == {"exact": False, "same_tool": True, "same_target": False}


# --- next steps at each cut, on a scripted model ----------------------------------------------------


def steps_scenario(path: Path) -> None:
    """One request and six tool steps, each result naming its step (r1..r6)."""
    turns = [
        {
            "user": "Tidy the exporter.",
            "assistant": {
                "tool_calls": [{"tool": "Read", "input": {"file_path": "exporter/s0.py"}, "result": "r0 " + "x" * 200}]
            },
        }
    ]
    for n in range(1, 7):
        turns.append(
            {
                "assistant": {
                    "tool_calls": [
                        {"tool": "Read", "input": {"file_path": f"exporter/s{n}.py"}, "result": f"r{n} " + "x" * 200}
                    ]
                }
            }
        )
    turns[-1]["assistant"]["final"] = "Done."
    path.write_text(
        yaml.safe_dump(
            {
                "id": "steps",
                "description": "d",
                "tools": [
                    {"name": "Read", "description": "read a file", "result": "ok"},
                    {"name": "Bash", "description": "run a command", "result": "ok"},
                ],
                "turns": turns,
            }
        )
    )


def scripted(request: dict):
    """Summaries for compaction; for the next step before turn N (the history ends with result
    r<N-1>), what the crafted cut calls for, by whether the history was compacted and which ceiling
    sample it is."""
    if "tools" not in request:
        return "Summary: read the exporter files."
    messages = request["messages"]
    last = json.dumps(messages[-1]["content"])
    turn = next(n for n in range(7) if f"r{n} " in last) + 1
    compacted = isinstance(messages[0]["content"], str) and messages[0]["content"].startswith(SUMMARY_PREFIX)

    def call(tool, **arguments):
        return [{"type": "tool_use", "id": "t", "name": tool, "input": arguments}]

    if turn == 4 and not compacted:
        raise anthropic.BadRequestError(
            "request (9000 tokens) exceeds the available context size (8192 tokens)",
            response=httpx.Response(400, request=httpx.Request("POST", "http://x")),
            body={"error": {"type": "exceed_context_size_error"}},
        )
    if turn == 3:  # the same tool on another file; the full history samples another file the second time
        return call(
            "Read",
            file_path="exporter/other.py"
            if compacted
            else "exporter/s3.py"
            if "sample" not in request
            else "exporter/s9.py",
        )
    if turn == 5:  # no tool call at all after compaction
        return "I think the exporter is tidy now." if compacted else call("Bash", command="pytest -q exporter/")
    return call("Read", file_path=f"exporter/s{turn}.py")  # the log's own step, everywhere


def crafted_eval(folder: Path) -> Path:
    steps_scenario(folder / "s.yaml")
    (folder / "e.yaml").write_text(
        f"name: na\nscenarios: [s.yaml]\nbudgets: [300]\ncut: steps\nkeep_recent: 1\n"
        f"prompts: ['{SEED}']\nstrategies: [summary]\nprobes: false\nnext_action: true\n"
    )
    return folder / "e.yaml"


def assert_the_crafted_cuts(results: Path) -> None:
    run_dir = next((results / "runs").iterdir())
    rows = {r["before_turn"]: r for r in read_jsonl(run_dir / "actions.jsonl")}
    assert set(rows) >= {2, 3, 4, 5, 6}
    assert (rows[2]["exact"], rows[2]["floor"], rows[2]["matches_log"], rows[2]["compacted"]) == (
        True,
        True,
        True,
        "Read: exporter/s2.py",
    )
    assert (rows[3]["exact"], rows[3]["same_tool"], rows[3]["same_target"], rows[3]["floor"]) == (
        False,
        True,
        False,
        False,
    )
    assert rows[3]["ceiling_matches_log"] is True and rows[3]["matches_log"] is False
    assert rows[4]["compacted"] == "Read: exporter/s4.py" and rows[4]["ceiling"] is None and rows[4]["exact"] is None
    assert rows[4]["ceiling_error"].startswith("context window exceeded")
    assert (rows[5]["compacted"], rows[5]["ceiling"], rows[5]["exact"]) == (
        actions.NO_TOOL,
        "Bash: pytest exporter",
        False,
    )
    assert rows[6]["exact"] is True and rows[6]["log"] == "Read: exporter/s6.py"


def test_agreement_floor_and_the_log_at_each_cut_on_crafted_steps(tmp_path, monkeypatch, capsys):
    fake = FakeClient(scripted)
    monkeypatch.setattr("harness.execution.executors.open_for", lambda ev, *_, **__: fake)
    assert main(["run", str(crafted_eval(tmp_path)), "--results", str(tmp_path / "r"), "--quiet"]) == 0
    assert_the_crafted_cuts(tmp_path / "r")
    # Each next-step request carried the scenario's tools; no tool was run for them.
    asked = [r for r in fake.requests if "tools" in r]
    assert asked and all({t["name"] for t in r["tools"]} == {"Read", "Bash"} for r in asked)
    out = capsys.readouterr().out
    table = out.split("Next-action fidelity")[1]
    assert "summary: seed" in table and "context window exceeded" in table
    assert "Where the compacted agent went instead" in out


class ScriptedMessages(BaseHTTPRequestHandler):
    """A Messages API server answering from `scripted`: a request it has seen before is the next
    sample of it, as a sampling server would draw one; an error becomes the API's error reply."""

    seen: Counter = Counter()

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path.startswith("/v1/messages/count_tokens"):
            return self.reply(200, {"input_tokens": len(body) // 4})
        request, self.seen[body] = json.loads(body), self.seen[body] + 1
        if self.seen[body] > 1:
            request["sample"] = self.seen[body] - 1
        try:
            content = scripted(request)
        except anthropic.BadRequestError as exc:
            return self.reply(
                400, {"type": "error", "error": {"type": "invalid_request_error", "message": exc.message}}
            )
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        self.reply(
            200,
            {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": blocks,
                "stop_reason": "tool_use" if blocks[0]["type"] == "tool_use" else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": len(body) // 4, "output_tokens": 9},
            },
        )

    def reply(self, status: int, data: dict) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def test_the_crafted_cuts_through_the_sdk_against_a_scripted_messages_server(tmp_path):
    """The same cuts over HTTP: the anthropic SDK of a remote model, a server answering from a script."""
    ScriptedMessages.seen = Counter()
    with Loopback(ScriptedMessages) as server:
        assert (
            main(
                [
                    "run",
                    str(crafted_eval(tmp_path)),
                    "--base-url",
                    server.url,
                    "--model",
                    "m",
                    "--results",
                    str(tmp_path / "r"),
                    "--quiet",
                ]
            )
            == 0
        )
    assert_the_crafted_cuts(tmp_path / "r")


def test_the_drop_from_the_floor_is_paired_over_scenarios_on_crafted_cuts():
    """Six scenarios, four cuts each: the full-history agent agrees with itself at every cut; the
    compacted agent at 3 of 4 in five scenarios and 1 of 4 in one: a drop of 1/3 of cuts."""
    rows = []
    for s in range(6):
        for c in range(4):
            rows.append(
                {
                    "scenario": f"s{s}",
                    "fact": f"cut-{c}",
                    "budget": "50%",
                    "strategy": "summary",
                    "repeat": 0,
                    "prompt": "seed",
                    "ceiling": "Read: a.py",
                    "compacted": "Read: a.py",
                    "exact": c > 0 if s else c == 0,
                    "floor": True,
                    "error": None,
                    "ceiling_error": None,
                }
            )
    test = floor_drop(pd.DataFrame(rows)).test
    assert test.mean_a == 1.0 and test.mean_b == pytest.approx(16 / 24) and test.clusters == 6
    assert test.difference == pytest.approx(-1 / 3) and test.p_value < 0.05


def test_plan_counts_the_next_action_requests(tmp_path, capsys):
    """Three more requests a cut: the compacted step and two full-history samples."""
    steps_scenario(tmp_path / "s.yaml")
    base = (
        f"name: na\nscenarios: [s.yaml]\nbudgets: [300]\ncut: steps\nkeep_recent: 1\nprompts: ['{SEED}']\n"
        "strategies: [summary]\nprobes: false\n"
    )
    counts = {}
    for setting in ("false", "true"):
        (tmp_path / "e.yaml").write_text(base + f"next_action: {setting}\nmodel: claude-x\n")
        assert main(["plan", str(tmp_path / "e.yaml"), "--chars", "--results", str(tmp_path / "r")]) == 0
        line = next(row for row in capsys.readouterr().out.splitlines() if row.startswith("direct"))
        counts[setting] = int(line.split()[1].replace(",", ""))
    extra = counts["true"] - counts["false"]
    assert extra >= 3 and extra % 3 == 0  # one case: no full-history request is shared
