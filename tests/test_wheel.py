"""The distribution works outside this repository: the wheel holds every subpackage, the shipped
prompts and templates; installed into a fresh virtual environment, `harness init` in an empty
folder writes a starter that validates and runs on the embedded model."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import test_plugins

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return next(out.glob("compaction_harness-*.whl"))


def test_the_wheel_holds_every_subpackage_prompt_and_template(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {str(p.relative_to(ROOT)) for p in (ROOT / "harness").rglob("*.py")}
    assert packages <= names, packages - names
    shipped = {
        str(p.relative_to(ROOT)) for folder in ("prompts", "templates") for p in (ROOT / "harness" / folder).iterdir()
    }
    shipped.add("harness/scoring/corpus.yaml")  # the labelled answers judge-check measures a judge on
    assert shipped and shipped <= names, shipped - names
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/", "evals/", "scenarios/"))]


@pytest.mark.e2e
def test_installed_into_a_fresh_venv_init_validate_and_run_outside_the_repository(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run(pip + [str(wheel)], check=True, capture_output=True)
    repo = tmp_path / "their-repo"
    repo.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    harness = str(venv / "bin" / "harness")

    def run(*args: str) -> str:
        done = subprocess.run([harness, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout

    # The default model's weights live in the user's cache, shared by every environment: verified, not fetched again.
    assert "SHA-256 verified" in run("models", "install", "--quiet")

    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import harness; print(harness.__path__[0])"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(venv) in where and str(ROOT) not in where  # the installed package, not this checkout
    assert "Next, record the first baseline" in run("init")
    workflow = (repo / ".github" / "workflows" / "compaction-gate.yml").read_text()
    assert "harness models install qwen2.5-coder-1.5b" in workflow and "actions/cache" in workflow
    assert "evals/compaction-gate.yaml: ok (64 scenarios, 2 prompts" in run("validate", "evals/compaction-gate.yaml")
    out = run("run", "evals/compaction-gate.yaml", "--limit", "2", "--quiet")
    assert "Summary retention by prompt and budget" in out
    run_dir = next((repo / "results" / "runs").iterdir())
    assert "baseline recorded" in run("baseline", str(run_dir))
    assert (repo / "results" / "baselines" / "compaction-gate" / "retention.jsonl").is_file()

    # An eval copied from this repository with its scenarios validates there: its prompts are named.
    shutil.copytree(ROOT / "scenarios" / "agent-gate", repo / "scenarios" / "agent-gate")
    shutil.copy(ROOT / "evals" / "agent-gate.yaml", repo / "evals" / "agent-gate.yaml")
    assert "evals/agent-gate.yaml: ok (12 scenarios, 2 prompts" in run("validate", "evals/agent-gate.yaml")

    # A package of plugins installed into that environment: its strategy, matcher and importer are
    # found by entry point and run, the strategy and matcher on the embedded model.
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "userlines.py").write_text(test_plugins.PLUGIN)
    (plugin / "userlines_broken.py").write_text("raise RuntimeError('this plugin is broken')\n")
    (plugin / "pyproject.toml").write_text(test_plugins.PYPROJECT)
    subprocess.run(pip + ["--no-deps", str(plugin)], check=True, capture_output=True)
    (repo / "scenarios" / "plugged.yaml").write_text(test_plugins.SCENARIO.format(match="shouting"))
    (repo / "evals" / "plugged.yaml").write_text(
        "name: plugged\nscenarios: [../scenarios/plugged.yaml]\nbudgets: [10]\nprompts: [seed]\n"
        "strategies: [user-lines]\nreply_max_tokens: 24\nprobe: {max_tokens: 16}\n"
    )
    run("run", "evals/plugged.yaml", "--quiet", "--results", "plugged")
    run_dir = next((repo / "plugged" / "runs").iterdir())
    compactions = [json.loads(line) for line in (run_dir / "compactions.jsonl").read_text().splitlines()]
    assert compactions and all(c["strategy"] == "user-lines" for c in compactions)
    assert any("HELIOS" in (c["summary"] or "") for c in compactions)  # the user's line, kept by the plugin
    retained = [json.loads(line) for line in (run_dir / "retention.jsonl").read_text().splitlines()]
    assert [r["retained"] for r in retained] == [True] * len(retained) and retained  # scored by `shouting`
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]
    assert records and not any(r["error"] for r in records)
    (repo / "log.txt").write_text("Build it.\n$ make\nNow test.\n$ make test\n")
    assert "wrote 1 scenario" in run("import", "transcript", "log.txt", "--out", "scenarios/imported")


@pytest.mark.slow
def test_a_release_takes_its_version_from_the_tag(tmp_path):
    """What the release workflow relies on: a clone tagged v9.8.7 builds compaction_harness-9.8.7."""
    clone = tmp_path / "clone"
    git = ["git", "-c", "user.name=release", "-c", "user.email=release@example.com"]
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    subprocess.run(git + ["-C", str(clone), "tag", "v9.8.7"], check=True)
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(clone)],
        check=True,
        capture_output=True,
    )
    assert [p.name for p in out.glob("*.whl")] == ["compaction_harness-9.8.7-py3-none-any.whl"]
    workflow = (ROOT / ".github" / "workflows" / "release.yml").read_text()
    assert "fetch-depth: 0" in workflow and "id-token: write" in workflow  # the tag's history; trusted publishing
