"""`harness audit` (docs/audit.md): the signals after each recorded compaction in agent logs, against
the same sessions' other moments, with no model call. Generated logs of every format carry planted
events of each signal and planted non-events; the windows, controls and statistics are checked on
crafted timelines whose answer is known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from auditlogs import NO_COMPACTION_WRITERS, WRITERS, Compact, Edit, Plan, Read, Run, User, swe_agent

from harness import api
from harness.analysis.audit import signal_rows, verdict
from harness.audit import audit, log_files, read_log
from harness.audit.windows import compare, mentioned
from harness.cli import main
from harness.records.audit import SIGNALS, Compaction, CompactionAudit, Occurrence, Timeline, Window

SECRET = "sk-ant-api03-" + "x" * 40

# Positions in comments: each event but a Compact is one.
SESSION = [
    User(
        "Fix the failing test in tests/test_app.py. Never edit config/settings.py, and don't touch legacy/old.py."
    ),  # 0
    Read("src/app.py"),  # 1
    Run("pytest tests/test_app.py", fails=True),  # 2
    Plan((("fix the parser", "completed"), ("run the tests", "pending"))),  # 3
    Read("README.md"),  # 4
    Read("docs/guide.md"),  # 5
    Compact(f"Working on tests/test_app.py; the key is {SECRET}."),  # the moment before 6
    Read("src/app.py"),  # 6: re-read (read at 1, not changed since)
    Run("pytest tests/test_app.py", fails=True),  # 7: repeated failure (failed at 2, nothing changed since)
    Edit("config/settings.py"),  # 8: constraint broken (forbidden at 0)
    User("As I said, never edit config/settings.py."),  # 9: the user repeats (said at 0)
    Plan((("fix the parser", "pending"), ("run the tests", "pending"))),  # 10: plan regressed (finished at 3)
    Read("src/util.py"),  # 11
    Edit("src/util.py"),  # 12
    Read("src/util.py"),  # 13: not a re-read: changed since the last read
    Run("make lint", fails=True),  # 14
    Edit("src/lint.py"),  # 15
    Run("make lint", fails=True),  # 16: not a repeated failure: a change in between
    User("You may edit legacy/old.py now, it is ours."),  # 17: lifts the rule
    Edit("legacy/old.py"),  # 18: no constraint broken: lifted
    *(Read(f"src/{name}.py") for name in "abcde"),  # 19-23
    Read("src/app.py"),  # 24: a re-read with no compaction before it
    Run("make build", fails=True, output="Error: foo.h: No such file or directory"),  # 25
    Run("make build", fails=True, output="Error: undefined reference to `bar'"),  # 26: failing another way
]
PLANTED = [
    ("rereads", 6, 1),
    ("repeats_failure", 7, 2),
    ("breaks_constraint", 8, 0),
    ("user_repeats", 9, 0),
    ("redoes_finished", 10, 3),
    ("rereads", 24, 1),
]


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_every_planted_signal_and_no_planted_non_event_is_found_in_each_format(tmp_path, fmt):
    write, suffix = WRITERS[fmt]
    path = tmp_path / f"session{suffix}"
    path.write_text(write(SESSION))
    (timeline,), problem = read_log(path)  # the format detected
    assert problem is None and timeline.format == fmt
    assert [(o.signal, o.position, o.since) for o in timeline.occurrences] == PLANTED
    assert [c.position for c in timeline.compactions] == [6]
    assert SECRET not in timeline.compactions[0].summary  # redacted before it is shown
    assert len(timeline.steps) == 24 and timeline.positions == 27
    if fmt != "openai":  # formats with lines say where: the log's file and line
        assert all(o.where.startswith("session.jsonl:") for o in timeline.occurrences)


@pytest.mark.parametrize("fmt", sorted(NO_COMPACTION_WRITERS))
def test_the_signals_of_a_shell_only_agent_whose_format_records_no_compaction(tmp_path, fmt):
    """The same session as SWE-agent or mini-swe-agent writes it: the task, then a shell command a
    step (reads as `cat`, edits as redirections), with no plan, no later user line and no compaction.
    The lifting line is not in the log, so the edit of legacy/old.py breaks the rule here."""
    write, suffix = NO_COMPACTION_WRITERS[fmt]
    path = tmp_path / f"run{suffix}"
    path.write_text(write(SESSION))
    (timeline,), problem = read_log(path)
    assert problem is None and timeline.format == fmt and timeline.compactions == []
    assert [(o.signal, o.position, o.since) for o in timeline.occurrences] == [
        ("rereads", 5, 1),
        ("repeats_failure", 6, 2),
        ("breaks_constraint", 7, 0),
        ("breaks_constraint", 14, 0),
        ("rereads", 20, 1),
    ]


def test_the_window_after_a_compaction_and_its_controls_matched_by_position():
    """Positions 0-11 (a user's line, then steps), a compaction before 5, windows of 3 steps, 2
    controls: the after-window is 5-7; the nearest windows of 3 steps that neither hold nor overlap
    it start at 2 and at 8 (both 3 away; 1 and 9 are 4 away)."""
    occurrences = [
        Occurrence("rereads", 6, 2, "f:6", "f:2", "a.py"),  # counts after the compaction
        Occurrence("rereads", 7, 5, "f:7", "f:5", "b.py"),  # what it repeats is not before the moment
        Occurrence("repeats_failure", 3, 1, "f:3", "f:1", "make"),  # in the control window at 2
        Occurrence("user_repeats", 9, 0, "f:9", "f:0", "as I said"),  # in the control window at 8
    ]
    line = Timeline("s", "f", "claude-code", 12, list(range(1, 12)), [Compaction(5, "f:5", "a.py")], occurrences)
    (audited,), unmatched = compare(line, steps=3, controls=2)
    assert unmatched == []
    assert (audited.after.moment, audited.after.steps) == (5, 3)
    assert audited.after.counts == {**dict.fromkeys(SIGNALS, 0), "rereads": 1}
    assert [w.moment for w in audited.controls] == [2, 8]
    assert audited.control_share("repeats_failure") == 0.5 and audited.control_share("user_repeats") == 0.5
    assert audited.control_share("rereads") == 0
    assert audited.dropped == []  # the summary names a.py


def test_a_summary_names_a_file_by_its_path_or_its_name_as_a_whole_word():
    assert mentioned("Read src/app.py first.", "src/app.py") and mentioned("app.py is done", "src/app.py")
    assert not mentioned("tests/test_app.py fails", "src/app.py") and not mentioned("anything", "")


def test_a_compaction_with_no_step_after_it_or_no_free_window_is_not_compared():
    at_end = Timeline("s", "f", "codex", 4, [1, 2, 3], [Compaction(4, "f:9", "")], [])
    assert compare(at_end, 3, 2) == ([], ["f:9: no agent step after it"])
    crowded = Timeline("s", "f", "codex", 4, [0, 1, 2, 3], [Compaction(1, "f:3", "")], [])
    assert compare(crowded, 3, 2)[1] == ["f:3: no window of 3 steps without a compaction elsewhere in its session"]


def _audit(session: str, after: dict[str, int], controls: list[dict[str, int]]) -> CompactionAudit:
    def window(moment: int, counts: dict[str, int]) -> Window:
        return Window(moment, 3, {s: counts.get(s, 0) for s in SIGNALS})

    return CompactionAudit(
        session, "f", Compaction(10, "f:10", ""), window(10, after), [window(m, c) for m, c in enumerate(controls)]
    )


def test_the_difference_is_paired_by_compaction_and_tested_over_sessions():
    """Six sessions: every after-window re-reads; control windows re-read in 1 of 2 (share 0.5) in
    three sessions and never in the others, so after 100% vs control 25%: +75%. Sessions, not
    compactions, are the unit: a second compaction of one session does not add a session."""
    audits = [_audit(f"s{n}", {"rereads": 1}, [{"rereads": n % 2}, {}]) for n in range(6)]
    audits.append(_audit("s0", {"rereads": 1}, [{"rereads": 0}, {}]))
    row = next(r for r in signal_rows(audits) if r.signal == "rereads")
    assert (row.compactions, row.sessions) == (7, 6)
    assert row.after == 1.0 and row.control == pytest.approx(1.5 / 7)
    assert row.difference == pytest.approx(1 - 1.5 / 7)
    assert row.low is not None and row.low > 0 and row.p_value is not None and row.p_value < 0.01
    assert verdict(signal_rows(audits), 7, 6).endswith("re-read")
    few = signal_rows(audits[:4])
    assert all(r.low is None for r in few)
    assert verdict(few, 4, 4).startswith("too few compactions to tell: 4 compared compactions in 4 sessions")


@pytest.mark.slow
def test_the_audit_of_a_folder_of_mixed_formats_names_and_skips_a_bad_file(tmp_path, capsys):
    for fmt, (write, suffix) in WRITERS.items():
        (tmp_path / f"{fmt}{suffix}").write_text(write(SESSION))
    (tmp_path / "run.traj").write_text(swe_agent(SESSION))  # no compaction in this format
    (tmp_path / "broken.jsonl").write_text("not json\n")
    (tmp_path / "notes.txt").write_text("not a log")  # not a log's name: not read
    files, missing = log_files([str(tmp_path), str(tmp_path / "nothing-*.jsonl")])
    assert len(files) == 5 and missing == [f"{tmp_path}/nothing-*.jsonl: no such file or folder"]
    result = audit([str(tmp_path)], window=4, controls=4, jobs=2)
    assert (result.files, result.sessions, result.sessions_without_compactions) == (5, 4, 1)
    assert len(result.skipped) == 1 and "broken.jsonl" in result.skipped[0]
    assert len(result.compactions) == 3
    for audited in result.compactions:
        assert audited.after.counts == dict.fromkeys(SIGNALS, 1)  # positions 6-10: one of each
        assert len(audited.controls) == 4
        # The summary names tests/test_app.py only: each thing the agent went back to is not in it.
        assert [o.what for o in audited.dropped] == [
            "src/app.py",
            "pytest tests/test_app.py",
            "config/settings.py",
            "As I said, never edit config/settings.py.",
            "fix the parser",
        ]
    out = tmp_path / "out"
    assert main(["audit", str(tmp_path), "--window", "4", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "too few compactions to tell" in printed and "re-read" in printed and SECRET not in printed
    assert api.audit(tmp_path, window=4).compactions == result.compactions  # the same from Python
    data = json.loads((out / "audit.json").read_text())
    assert data["sessions"] == 4 and len(data["compactions"]) == 3
    assert SECRET not in (out / "audit.html").read_text() + (out / "audit.md").read_text()


def test_the_real_logs_are_audited(capsys):
    real = Path(__file__).parent / "data" / "agent_logs" / "real"  # copies of ../shared/data/agent-sessions
    result = audit([str(real)], jobs=1)
    assert result.skipped == [] and result.sessions == result.files > 0
    assert result.sessions_without_compactions == result.sessions  # these logs hold no compaction
    assert result.verdict.startswith("no recorded compaction")


def test_a_rule_on_a_folder_named_in_words_covers_the_files_under_it(tmp_path):
    write, suffix = WRITERS["claude-code"]
    events = [User("Fix the ledger. Don't touch the migrations folder."), Edit("payments/ledger.py")]
    events += [Edit("app/migrations/0002_currency.py"), Edit("app/mymigrations/notes.py")]
    (tmp_path / f"s{suffix}").write_text(write(events))
    (timeline,), _ = read_log(tmp_path / f"s{suffix}")
    assert [(o.signal, o.position, o.what) for o in timeline.occurrences] == [
        ("breaks_constraint", 2, "migrations folder")
    ]


def test_reading_another_part_of_a_file_is_no_re_read():
    from harness.sources.importers.session import Call
    from harness.sources.trail import Trail

    trail = Trail()
    trail.see(Call("Read", {"file_path": "big.py", "offset": 1, "limit": 100}, "..."), 0)
    assert trail.reread_since("Read", {"file_path": "big.py", "offset": 101, "limit": 100}) is None
    assert trail.reread_since("Read", {"file_path": "big.py", "offset": 1, "limit": 100}) == 0
    trail.see(Call("bash", {"command": "sed -n 1,40p big.py"}, "..."), 1)
    assert trail.reread_since("bash", {"command": "sed -n 41,80p big.py"}) is None
    assert trail.reread_since("bash", {"command": "sed -n 1,40p big.py"}) == 1


@pytest.mark.parametrize(
    ("written", "rule", "broken"),
    [
        ("/home/me/repo/src/config.py", "src/config.py", True),  # Claude Code writes absolute paths
        ("src/myconfig.py", "config.py", False),
        ("app/migrations/0001.py", "migrations/", True),
        ("app/mymigrations/0001.py", "migrations/", False),
        ("/opt/etc/hosts", "/etc/", False),  # an absolute rule holds where it says
    ],
)
def test_a_relative_rule_holds_wherever_its_path_sits(written, rule, broken):
    from harness.sources.trail import breaks, touches

    edit = touches("Edit", {"file_path": written, "old_string": "a", "new_string": "b"})
    assert breaks(edit, {rule}, set()) is broken


def test_a_change_by_absolute_path_makes_a_relative_read_worth_repeating():
    from harness.sources.importers.session import Call
    from harness.sources.trail import Trail

    trail = Trail()
    trail.see(Call("bash", {"command": "cat src/a.py"}, "x = 1"), 0)
    trail.see(Call("Edit", {"file_path": "/repo/src/a.py", "old_string": "1", "new_string": "2"}, "ok"), 1)
    assert trail.reread_since("bash", {"command": "cat src/a.py"}) is None


# A session as held-out logs have it: a rule given as a contrast, a file read by its absolute path and
# again by its relative one (the agent runs in /repo), and the user's complaint as the session's last line.
HELD_OUT = [
    User("Check the endpoints by hand. Use httpie, not curl."),  # 0
    Read("/repo/src/app.py"),  # 1
    Run("make build"),  # 2
    Run("make lint"),  # 3
    Compact("Working on src/app.py."),  # the moment before 4
    Read("src/app.py"),  # 4: a re-read of 1: /repo/src/app.py
    Run("curl -s localhost:8000/health"),  # 5: the rule broken ("not curl")
    User("I already told you not to use curl."),  # 6: the user repeats; no step follows
]


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_a_contrast_rule_a_relative_read_and_a_last_line_complaint_are_each_found_and_counted(tmp_path, fmt):
    write, suffix = WRITERS[fmt]
    path = tmp_path / f"session{suffix}"
    path.write_text(write(HELD_OUT, cwd="/repo"))
    (timeline,), problem = read_log(path)
    assert problem is None
    assert [(o.signal, o.position, o.since) for o in timeline.occurrences] == [
        ("rereads", 4, 1),
        ("breaks_constraint", 5, 0),
        ("user_repeats", 6, 0),
    ]
    (audited,), unmatched = compare(timeline, steps=2, controls=1)
    assert unmatched == [] and audited.after.counts["user_repeats"] == 1  # the last line is in the window
    assert audited.after.counts["rereads"] == audited.after.counts["breaks_constraint"] == 1


@pytest.mark.parametrize(
    "said, forbidden",
    [
        ("Use httpie, not curl.", "curl"),
        ("Please use httpie instead of curl to hit the API.", "curl"),
        ("Use rg rather than grep for searching.", "grep"),
        ("Prefer pnpm over npm here.", "npm"),
        ("Don't use curl.", "curl"),
    ],
)
def test_a_rule_said_as_a_contrast_forbids_the_tool_named_second(said, forbidden):
    from harness.sources.rules import prohibitions
    from harness.sources.trail import forbids

    assert any(forbidden in forbids(obj, verb)[1] for verb, obj in prohibitions(said))
