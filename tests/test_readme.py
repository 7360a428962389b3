"""The README's examples work as written: every YAML block validates (scenario or eval), every
`harness` command in its code blocks parses, and it points to nothing outside the repository."""

import re
import shlex
from pathlib import Path

import pytest
import yaml

from harness.cli import build_parser, main
from harness.inputs.importers.agent_logs import OverlayFact

ROOT = Path(__file__).parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, re.DOTALL)
YAML = [text for kind, text in BLOCKS if kind == "yaml" and not text.startswith("facts:")]
OVERLAYS = [text for kind, text in BLOCKS if kind == "yaml" and text.startswith("facts:")]
COMMANDS = [line for kind, text in BLOCKS if kind == "sh" for line in text.splitlines()
            if line.strip().startswith("harness ")]


def test_the_readme_has_examples_to_check():
    assert len(YAML) >= 2 and len(COMMANDS) >= 20


@pytest.mark.parametrize("text", YAML, ids=lambda text: text.split("\n", 1)[0][:40])
def test_every_yaml_block_validates(text, tmp_path, capsys):
    # Placed as in a clone: an eval in evals/, beside scenarios/ and the shipped prompts.
    for folder in ("scenarios", "harness"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    (tmp_path / "evals").mkdir()
    path = tmp_path / "evals" / "example.yaml"
    path.write_text(text)
    assert main(["validate", str(path), "--results", str(tmp_path / "results")]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("text", OVERLAYS)
def test_every_overlay_block_holds_valid_facts(text):
    for fact in yaml.safe_load(text)["facts"]:
        OverlayFact.model_validate(fact)


@pytest.mark.parametrize("line", COMMANDS)
def test_every_command_parses(line):
    args = shlex.split(line, comments=True)[1:]
    build_parser().parse_args(args)  # an unknown command or flag exits 2


def test_the_readme_stays_inside_the_repository_and_says_how_to_reach_the_command():
    assert not re.findall(r"\]\((?:\.\./|/)", README), "links outside the repository"
    assert "../shared" not in README
    assert "source .venv/bin/activate" in README
