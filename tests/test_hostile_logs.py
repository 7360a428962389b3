"""Agent logs from the wild: every input of the hostile corpus (tests/data/hostile_logs, five
formats) is imported with what was wrong said, or refused with one line naming the file; no
traceback, no hang, no secret in anything written, nothing dropped without a word."""

import json
import sys
from pathlib import Path

import pytest
import yaml
from fakes import FakeClient

from harness.cli import main
from harness.records import read_jsonl

CORPUS = Path(__file__).parent / "data" / "hostile_logs"
EXPECTED = yaml.safe_load((CORPUS / "expected.yaml").read_text())


def test_the_corpus_covers_every_format_and_every_file_has_an_expectation():
    files = {p.name for p in CORPUS.iterdir() if p.name not in ("make.py", "expected.yaml")}
    assert files == set(EXPECTED)
    assert {e["format"] for e in EXPECTED.values()} == {"claude-code", "codex", "swe-agent", "mini-swe-agent", "openai"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_hostile_log_is_imported_with_its_problem_said_or_refused_naming_the_file(name, tmp_path, capsys):
    expected = EXPECTED[name]
    code = main(["import", expected["format"], str(CORPUS / name), "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if expected["outcome"] == "refused":
        assert code == 1 and not list(tmp_path.glob("*.yaml"))
        assert err.startswith(f"error: {CORPUS / name}") and err.count("\n") == 1, err
    else:
        assert code == 0 and list(tmp_path.glob("*.yaml")), err
        assert "(no output)" not in "".join(p.read_text() for p in tmp_path.glob("*.yaml") if "null" in name)
    for text in expected["says"]:
        assert text in out + err, (text, out + err)


def test_a_placeholder_never_becomes_the_task():
    from harness.sources.importers.derive import derive
    from harness.sources.importers.session import LOG_STARTS, Call, Exchange, Session, Step

    session = Session("s", "d", [Exchange(LOG_STARTS, [Step(None, [Call("bash", {"command": "ls -la"}, "a.py")])])])
    assert "task" not in {f["id"] for facts in derive(session).values() for f in facts}


def test_a_session_too_large_for_a_scenario_is_refused_naming_the_cap_that_fits(tmp_path, capsys):
    log = tmp_path / "huge.traj"
    steps = [
        {
            "action": f"cat part_{n}.log",
            "observation": ("x" * 6_000_000 if n == 1 else f"line {n}"),
            "thought": "read it",
        }
        for n in range(4)
    ]
    log.write_text(json.dumps({"trajectory": steps, "history": [{"role": "user", "content": "Find the bug."}]}))
    assert main(["import", "swe-agent", str(log), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "more than a scenario file holds (5,000,000 bytes): import it with `--max-tool-output" in err
    cap = int(err.split("--max-tool-output ")[1].split("`")[0])
    assert main(["import", "swe-agent", str(log), "--out", str(tmp_path / "out"), "--max-tool-output", str(cap)]) == 0
    assert "tool outputs capped: 1" in capsys.readouterr().out


def test_a_log_of_too_many_steps_is_refused_for_what_it_is(tmp_path, capsys):
    """So many steps that no cap on tool outputs could make them fit: the refusal says to split the
    log, and comes without writing a scenario (the benchmark times it: benchmarks/import_scale.py)."""
    log = tmp_path / "long.traj"
    steps = [
        {"action": f"open src/module_{n}.py", "observation": "ok", "thought": f"Step {n} of a long run."}
        for n in range(120_000)
    ]
    log.write_text(json.dumps({"trajectory": steps, "history": [{"role": "user", "content": "Find the bug."}]}))
    assert main(["import", "swe-agent", str(log), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "capping tool outputs cannot make it fit; import a part of the log (split the file)" in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_credentials_survive_nowhere_the_import_or_a_run_over_it_writes(tmp_path, capsys, monkeypatch):
    """Every credential form of the corpus (AWS credentials and config, .netrc, .pgpass, .npmrc,
    .pypirc, Docker auths, YAML, JSON and INI settings, connection strings): gone from the scenario,
    the import's own output, and a run and report over it."""
    import harness.execution.executors

    sys.path.insert(0, str(CORPUS))
    from make import CREDENTIALS

    assert main(["import", "claude-code", str(CORPUS / "cc-credentials.jsonl"), "--out", str(tmp_path / "s")]) == 0
    printed = "".join(capsys.readouterr())
    for kind in (
        "aws-key",
        "netrc-password",
        "pgpass-password",
        "npm-token",
        "pypi-token",
        "secret-json",
        "secret-setting",
        "url-credentials",
    ):
        assert kind in printed
    (tmp_path / "e.yaml").write_text(
        "name: creds\nscenarios: [s/*.yaml]\nbudgets: ['50%']\ncut: steps\n"
        "strategies: [summary, none]\nprompts: [p.txt]\n"
    )
    (tmp_path / "p.txt").write_text("Summarise.")
    # The summariser copies its whole transcript: whatever reached the history reaches every record.
    monkeypatch.setattr(
        harness.execution.executors,
        "open_model",
        lambda *a, **k: FakeClient(lambda request: json.dumps(request["messages"])),
    )
    assert main(["run", str(tmp_path / "e.yaml"), "--results", str(tmp_path / "r"), "--quiet", "--report"]) == 0
    printed += "".join(capsys.readouterr())
    run_dir = next((tmp_path / "r" / "runs").iterdir())
    assert read_jsonl(run_dir / "compactions.jsonl") and (run_dir / "report" / "report.html").is_file()
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".sqlite"]
    for _, secrets in CREDENTIALS.values():
        for secret in secrets:
            assert secret not in printed, secret
            for path in files:
                assert secret not in path.read_text(errors="replace"), (secret, path)


def test_a_compressed_log_is_bounded_by_what_it_decompresses_to(tmp_path, monkeypatch, capsys):
    import gzip

    from harness.sources.importers import logfile

    log = tmp_path / "bomb.jsonl.gz"
    log.write_bytes(gzip.compress(b"\n" * 5_000_000))  # a few kilobytes on disk
    monkeypatch.setattr(logfile, "MAX_LOG_BYTES", 1_000_000)
    assert main(["import", "claude-code", str(log), "--out", str(tmp_path / "out")]) == 1
    assert "gzip-compressed, and over the 1,000,000 bytes a log may have once decompressed" in capsys.readouterr().err
