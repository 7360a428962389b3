"""A corpus of malformed scenario and eval files: each is rejected before any model call with
one line naming the file, the line and the field. The expectation is the file's first line."""

import re
from pathlib import Path

import pytest

from harness.cli import main
from harness.inputs.files import MAX_FILE_BYTES

CORPUS = sorted((Path(__file__).parent / "data" / "malformed").glob("*.yaml"))


def test_the_corpus_is_large_enough():
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_rejected_with_file_line_and_field(path, capsys, monkeypatch):
    monkeypatch.setattr("harness.execution.executors.open_model", lambda *a, **k: pytest.fail("a model was opened"))
    line, field, message = re.fullmatch(
        r"# expect: line=(\d+) field=(\S*) message=(.+)", path.read_text().splitlines()[0]
    ).groups()
    command = "run" if path.name.startswith("e") else "validate"
    assert main([command, str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"error: {path}:{line}: " + (f"{field}: " if field else ""))
    assert message in err


def test_a_huge_file_is_refused_before_parsing(tmp_path, capsys):
    huge = tmp_path / "huge.yaml"
    huge.write_text("id: s\ndescription: " + "x" * MAX_FILE_BYTES + "\n")
    assert main(["validate", str(huge)]) == 1
    assert capsys.readouterr().err.strip() == f"error: {huge}: file is larger than {MAX_FILE_BYTES:,} bytes"


def test_a_missing_file(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nowhere.yaml")]) == 1
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'nowhere.yaml'}: file not found"
