"""Plugins: a strategy another package installs is found by its entry point, named in an eval like
ours, run and measured end to end; a broken one is an error naming its package, never a crash."""

import json
import subprocess
import sys

import pytest
from fakes import FakeClient
from test_run import oracle

from harness.errors import InputError
from harness.execution.evals import load_eval
from harness.execution.executors import run_eval
from harness.records import read_jsonl

PLUGIN = '''
from harness.compaction.custom import Compactor
from harness.messages import content_text, exchange_starts


def _keep_user_lines(messages, context):
    """Folds all but the last exchange into the user's own lines, quoted: no model call."""
    if context.size(messages) <= context.limit:
        return messages
    cut = exchange_starts(messages)[-1]
    lines = [content_text(m["content"]) for m in messages[:cut] if m["role"] == "user"]
    note = {"role": "user", "content": f"[{context.settings.prompt_id}] " + " / ".join(lines)}
    return [note, {"role": "assistant", "content": "Noted."}, *messages[cut:]]


user_lines = Compactor(function=_keep_user_lines, uses_prompt=True)


class Shouting:
    """A matcher (harness.scoring.matchers.Matcher): a value counts only in capitals."""

    def __init__(self, fact):
        self.value = fact.answer

    def states(self, text, expectation, within=False):
        return self.value.upper() in text

    def score(self, answer, expectation):
        return float(self.states(answer, expectation))

    def extras(self, answer, expectation):
        return None


def read_transcript(path):
    """An importer: one session per file, a user line then a `$ command` the agent ran, per pair of lines."""
    from harness.sources.importers.session import Call, Exchange, Session, Step

    lines = path.read_text().splitlines()
    exchanges = [
        Exchange(user=user, steps=[Step(text=None, calls=[Call(tool="bash", input={"command": cmd[2:]}, result="ok")])])
        for user, cmd in zip(lines[::2], lines[1::2])
    ]
    return [Session(id=path.stem, description=f"a transcript ({path.name})", exchanges=exchanges)]


def deployed(arguments):
    """An action key: a deploy tool's target is the environment it deploys to."""
    return f"deploy {arguments.get('env', '?')}"


def _model():
    from harness.models.weights import SMOLLM2
    import dataclasses

    return dataclasses.replace(SMOLLM2, name="tiny-twin", title="SmolLM2, registered by a plugin")


TINY_TWIN = _model()
'''

PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "userlines-compactor"
version = "1.2.3"

[tool.setuptools]
py-modules = ["userlines", "userlines_broken"]

[project.entry-points."compaction_harness.strategies"]
user-lines = "userlines:user_lines"
broken = "userlines_broken:nothing"

[project.entry-points."compaction_harness.matchers"]
shouting = "userlines:Shouting"
broken-matcher = "userlines_broken:nothing"

[project.entry-points."compaction_harness.importers"]
transcript = "userlines:read_transcript"

[project.entry-points."compaction_harness.action_keys"]
deploy = "userlines:deployed"

[project.entry-points."compaction_harness.models"]
tiny-twin = "userlines:TINY_TWIN"
"""


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The plugin package built and installed (pip, no network) into a folder put on sys.path."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "userlines.py").write_text(PLUGIN)
    (source / "userlines_broken.py").write_text("raise RuntimeError('this plugin is broken')\n")
    (source / "pyproject.toml").write_text(PYPROJECT)
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"] + ["--target", str(site), str(source)],
        check=True,
        capture_output=True,
    )
    monkeypatch.syspath_prepend(str(site))
    yield site
    for name in ("userlines", "userlines_broken"):
        sys.modules.pop(name, None)


@pytest.mark.slow
def test_a_strategy_from_an_installed_package_runs_by_its_name(installed, eval_file, tmp_path):
    eval_file.write_text(
        eval_file.read_text().replace(
            "strategies: [summary, truncate, none, no-history]", "strategies: [summary, user-lines]"
        )
    )
    ev = load_eval(eval_file)
    assert ev.strategy("user-lines").uses_prompt  # declared as data by the package
    run_dir = run_eval(ev, FakeClient(oracle), tmp_path / "results", progress=False)
    mine = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["strategy"] == "user-lines"]
    assert mine and all(c["summary"].startswith(f"[{c['prompt']}] ") for c in mine)  # it swept the prompts
    retained = [r for r in read_jsonl(run_dir / "retention.jsonl") if r["strategy"] == "user-lines"]
    assert retained and all(r["retained"] is not None for r in retained)  # scored against what it kept
    assert all(r["retained"] for r in retained if r["fact"] == "locker")  # the user said it: a user line kept
    about = json.loads((run_dir / "manifest.json").read_text())["strategies"]["user-lines"]
    assert about["module"] == "userlines" and about["packages"]["userlines-compactor"] == "1.2.3"


@pytest.mark.slow
def test_a_broken_plugin_is_an_error_naming_its_package(installed, eval_file):
    eval_file.write_text(
        eval_file.read_text().replace("strategies: [summary, truncate, none, no-history]", "strategies: [broken]")
    )
    with pytest.raises(InputError, match="userlines-compactor.*RuntimeError: this plugin is broken"):
        load_eval(eval_file)


@pytest.mark.slow
def test_an_unknown_strategy_lists_the_installed_ones(installed, eval_file):
    eval_file.write_text(
        eval_file.read_text().replace("strategies: [summary, truncate, none, no-history]", "strategies: [user-line]")
    )
    with pytest.raises(InputError, match="unknown strategy 'user-line'.*user-lines"):
        load_eval(eval_file)


SCENARIO = """
id: plugged
description: a fact scored by a plugin's matcher
turns:
  - user: "The release tag is HELIOS."
    facts:
      - id: tag
        kind: name
        answer: helios
        probe: "What is the release tag?"
        match: {match}
  - user: "Thanks."
"""


@pytest.mark.slow
def test_matchers_importers_action_keys_and_models_come_from_an_installed_package(installed, tmp_path, capsys):
    from harness.actions import target
    from harness.cli import main
    from harness.inputs.scenario_file import load_scenario
    from harness.models.weights import MODELS
    from harness.scoring.matchers import states

    # A matcher, by its name in a scenario; a near miss is blamed on the line with a suggestion.
    (tmp_path / "s.yaml").write_text(SCENARIO.format(match="shouting"))
    fact = load_scenario(tmp_path / "s.yaml").turns[0].facts[0]
    expectation = fact.target_expectation()
    assert states("It is HELIOS.", expectation) and not states("It is helios.", expectation)
    for name, message in (("shoutin", "did you mean `shouting`"), ("broken-matcher", "userlines-compactor")):
        (tmp_path / "s.yaml").write_text(SCENARIO.format(match=name))
        with pytest.raises(InputError, match=message) as caught:
            load_scenario(tmp_path / "s.yaml")
        assert caught.value.line == 11
    # An importer, by its name on the command line.
    (tmp_path / "log.txt").write_text("Build it.\n$ make\nNow test.\n$ make test\n")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe not text")  # its reader raises: that file is refused, not the rest
    files = [str(tmp_path / "bad.txt"), str(tmp_path / "log.txt")]
    assert main(["import", "transcript", *files, "--out", str(tmp_path / "out")]) == 0
    assert "bad.txt: the transcript reader failed: UnicodeDecodeError" in capsys.readouterr().err
    imported = load_scenario(tmp_path / "out" / "log.yaml")
    assert [t.user for t in imported.turns if t.user][:2] == ["Build it.", "Now test."]
    # An action key, for a tool of that name (any case).
    assert target("Deploy", {"env": "prod"}) == "deploy prod"
    # An embedded model, listed with ours.
    assert MODELS["tiny-twin"].title.endswith("by a plugin") and "tiny-twin" in list(MODELS)
    capsys.readouterr()
    assert main(["models"]) == 0
    assert "tiny-twin" in capsys.readouterr().out
