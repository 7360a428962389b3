"""The documentation works as written: the README fits two screens and links into the docs; the
site builds with warnings as errors (no broken link or anchor); every YAML block validates
(scenario, eval or overlay), every `harness` command in a shell block parses; the reference pages
generated from the code are up to date; nothing points outside the repository."""

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.cli import build_parser, main
from harness.sources.importers.agent_logs import OverlayFact

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
PAGES = {path: path.read_text() for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]}
BLOCKS = [
    (path, kind, text)
    for path, page in PAGES.items()
    for kind, text in re.findall(r"```(\w*)\n(.*?)```", page, re.DOTALL)
]
YAML = [(path, text) for path, kind, text in BLOCKS if kind == "yaml" and not text.startswith("facts:")]
OVERLAYS = [text for _, kind, text in BLOCKS if kind == "yaml" and text.startswith("facts:")]
COMMANDS = [
    line
    for _, kind, text in BLOCKS
    if kind == "sh"
    for line in text.splitlines()
    if line.strip().startswith("harness ")
]


def test_the_readme_fits_two_screens_and_says_how_to_start():
    assert len(README.splitlines()) <= 80
    for text in (
        "make demo",
        "make test",
        "source .venv/bin/activate",
        "docs/getting-started.md",
        "harness run",
        "harness compare",
        "harness gate",
    ):
        assert text in README, text


def test_the_docs_have_examples_to_check():
    assert len(YAML) >= 4 and len(COMMANDS) >= 30 and OVERLAYS


@pytest.mark.parametrize("path, text", YAML, ids=lambda v: v.name if isinstance(v, Path) else v.split("\n", 1)[0][:40])
def test_every_yaml_block_validates(path, text, tmp_path, capsys):
    # Placed as in a clone: an eval in evals/, beside scenarios/ and the shipped prompts.
    for folder in ("scenarios", "harness"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    (tmp_path / "evals").mkdir()
    example = tmp_path / "evals" / "example.yaml"
    example.write_text(text)
    assert main(["validate", str(example), "--results", str(tmp_path / "results")]) == 0, (
        path,
        capsys.readouterr().err,
    )


@pytest.mark.parametrize("text", OVERLAYS)
def test_every_overlay_block_holds_valid_facts(text):
    for fact in yaml.safe_load(text)["facts"]:
        OverlayFact.model_validate(fact)


@pytest.mark.parametrize("line", COMMANDS)
def test_every_command_parses(line):
    args = shlex.split(line, comments=True)[1:]
    build_parser().parse_args(args)  # an unknown command or flag exits 2


def test_nothing_points_outside_the_repository():
    for path, page in PAGES.items():
        assert not re.findall(r"\]\((?:\.\./\.\.|/)", page), f"{path}: a link outside the repository"
        assert "../shared" not in page, path


def test_every_argument_of_every_command_says_what_it_is():
    def missing(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from missing(sub, f"{path} {name}")
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                yield f"{path} {'/'.join(action.option_strings) or action.dest}"

    assert list(missing(build_parser(), "harness")) == []


@pytest.mark.slow
def test_the_reference_pages_are_generated_from_the_code_as_it_is():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "docs_reference.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr  # a flag or field changed: run `make docs`


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "agent-sessions" / "index.html").is_file()
