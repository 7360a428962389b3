"""End to end on the default embedded model, Qwen2.5-Coder-1.5B-Instruct: what needs a model that
follows its summary prompt. (Mechanics run on the fast SmolLM2: test_e2e.py.)"""

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.models.weights import QWEN
from harness.records import read_jsonl
from harness.sources.generators.chat import Options, generate

pytestmark = pytest.mark.e2e
PROMPTS = Path(__file__).parents[1] / "harness" / "prompts"


def test_a_run_on_the_default_model_records_it_and_its_summaries_follow_the_prompt(tmp_path, capsys):
    """No --model: the run is Qwen's, named in the manifest and the report's header. The keeps-nothing
    control's summaries are the word it asks for and keep no fact; the seed prompt's state some."""
    generate(Options(scenarios=3, facts=3, filler_chars=0, seed=5), tmp_path / "gen")
    (tmp_path / "e.yaml").write_text(
        f"name: qwen\nscenarios: ['gen/*.yaml']\nbudgets: ['85%']\nprompts: ['{PROMPTS / 'seed.txt'}']\n"
        f"control_prompt: '{PROMPTS / 'keeps-nothing.txt'}'\nstrategies: [summary]\nprobes: false\n"
        "summary_max_tokens: 160\n"
    )
    assert main(["run", str(tmp_path / "e.yaml"), "--results", str(tmp_path / "r"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"eval qwen on {QWEN.identity}:")
    run_dir = next((tmp_path / "r" / "runs").iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["model"] == QWEN.identity and manifest["eval"]["summary_layout"] == QWEN.summary_layout
    summaries = read_jsonl(run_dir / "compactions.jsonl")
    control = [c for c in summaries if c["prompt"] == "keeps-nothing"]
    assert control and all(c["summary"].strip(" .").lower() == "ok" for c in control)
    retention = read_jsonl(run_dir / "retention.jsonl")
    assert not any(r["retained"] for r in retention if r["prompt"] == "keeps-nothing")
    assert any(r["retained"] for r in retention if r["prompt"] == "seed")
