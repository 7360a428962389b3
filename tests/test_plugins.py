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


def test_a_broken_plugin_is_an_error_naming_its_package(installed, eval_file):
    eval_file.write_text(
        eval_file.read_text().replace("strategies: [summary, truncate, none, no-history]", "strategies: [broken]")
    )
    with pytest.raises(InputError, match="userlines-compactor.*RuntimeError: this plugin is broken"):
        load_eval(eval_file)


def test_an_unknown_strategy_lists_the_installed_ones(installed, eval_file):
    eval_file.write_text(
        eval_file.read_text().replace("strategies: [summary, truncate, none, no-history]", "strategies: [user-line]")
    )
    with pytest.raises(InputError, match="unknown strategy 'user-line'.*user-lines"):
        load_eval(eval_file)
