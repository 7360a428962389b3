"""Eval files: resolution, overrides, and located errors."""

from pathlib import Path

import pytest

from harness.budget import Budget
from harness.cli import main
from harness.cli.common import EVAL_FLAGS
from harness.errors import InputError
from harness.execution.evals import load_eval

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "tests" / "data" / "tiny.yaml"


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "a.yaml").write_text(SCENARIO.read_text())
    (tmp_path / "p.txt").write_text("Summarise.")
    return tmp_path


def write(folder: Path, text: str) -> Path:
    path = folder / "e.yaml"
    path.write_text(text)
    return path


BASE = "name: e\nscenarios: [s/*.yaml]\nbudgets: [1200, 50%]\nprompts: [p.txt]\n"


def test_paths_resolve_relative_to_the_eval_file(folder, monkeypatch):
    monkeypatch.chdir(REPO)
    ev = load_eval(write(folder, BASE))
    assert [s.id for s in ev.scenarios] == ["tiny"]
    assert ev.spec.budgets == [Budget("1200"), Budget("50%")] and ev.prompts[0].text == "Summarise."
    assert ev.spec.strategies == ["summary", "none", "no-history"]


def test_command_line_overrides(folder, monkeypatch):
    monkeypatch.chdir(folder)
    (folder / "other.txt").write_text("Other prompt.")
    ev = load_eval(write(folder, BASE), prompts=["other.txt"], model="claude-x", budgets=["10%"], repeats=3)
    assert [p.id for p in ev.prompts] == ["other"] and ev.spec.model == "claude-x"
    assert ev.spec.budgets == [Budget("10%")] and ev.spec.repeats == 3


def test_a_bad_flag_is_blamed_on_the_flag_not_the_file(folder, monkeypatch):
    monkeypatch.chdir(folder)
    path = write(folder, BASE)
    for overrides, flag in (
        (dict(budgets=["0"]), "--budget"),
        (dict(budgets=["40%", "abc"]), "--budget"),
        (dict(prompts=["missing.txt"]), "--prompt"),
    ):
        with pytest.raises(InputError) as caught:
            load_eval(path, flags=EVAL_FLAGS, **overrides)
        assert caught.value.path == flag and caught.value.line is None, overrides
    # Called from Python, the keyword is blamed.
    with pytest.raises(InputError) as caught:
        load_eval(path, budgets=["0"])
    assert caught.value.path == "budgets="
    # The same value in the file is the file's: its line and field.
    with pytest.raises(InputError) as caught:
        load_eval(write(folder, BASE.replace("[1200, 50%]", "[0]")), budgets=None)
    assert (caught.value.path, caught.value.line) == (str(folder / "e.yaml"), 3)


def test_shipped_prompts_are_named_by_name_so_a_copied_eval_still_finds_them(folder, monkeypatch):
    monkeypatch.chdir(folder)  # outside this clone's layout: no ../harness/prompts beside the eval
    ev = load_eval(
        write(folder, BASE.replace("prompts: [p.txt]", "prompts: [seed, p.txt]\ncontrol_prompt: keeps-nothing"))
    )
    shipped = REPO / "harness" / "prompts"
    assert [p.id for p in ev.prompts] == ["seed", "p", "keeps-nothing"]
    assert ev.prompts[0].text == (shipped / "seed.txt").read_text().strip()
    assert load_eval(write(folder, BASE), prompts=["facts-first"]).prompts[0].id == "facts-first"
    # A file of the same name beside the eval wins; an unknown name lists the shipped ones.
    (folder / "seed").write_text("My own seed.")
    assert load_eval(write(folder, BASE.replace("[p.txt]", "[seed]"))).prompts[0].text == "My own seed."
    with pytest.raises(InputError, match="name a shipped prompt: .*facts-first.*seed"):
        load_eval(write(folder, BASE.replace("[p.txt]", "[sed]")))


@pytest.mark.parametrize(
    "text, line, field, message",
    [
        (BASE.replace("[1200, 50%]", "[1200, 150%]"), 3, "budgets[1]", "a budget is a positive number"),
        (BASE.replace("[1200, 50%]", "[0]"), 3, "budgets[0]", "a budget is a positive number"),
        (BASE.replace("prompts: [p.txt]", "prompts: [missing.txt]"), 4, "prompts[0]", "'missing.txt' not found"),
        (BASE.replace("prompts: [p.txt]", "prompts: []"), 4, "prompts", "needs at least one prompt"),
        (BASE.replace("s/*.yaml", "nothing/*.yaml"), 2, "scenarios[0]", "no scenario file matches"),
        (BASE + "strategies: [summary, magic]\n", 5, "strategies", "unknown strategy 'magic'"),
        (BASE + "strategies: [summary, no_such_module:fn]\n", 5, "strategies[1]", "cannot import strategy"),
        (BASE + "repeats: 0\n", 5, "repeats", "greater than or equal to 1"),
        (BASE + "budget: [1]\n", 5, "budget", "unknown key"),
        (BASE.replace("name: e\n", ""), 1, "name", "missing"),
    ],
)
def test_eval_errors_are_located(folder, text, line, field, message):
    path = write(folder, text)
    with pytest.raises(InputError) as caught:
        load_eval(path)
    assert (caught.value.line, caught.value.field) == (line, field)
    assert message in caught.value.message


def test_a_broken_scenario_is_reported_in_its_own_file(folder):
    bad = folder / "s" / "b.yaml"
    bad.write_text(SCENARIO.read_text().replace("kind: number", "kind: 5 5"))
    with pytest.raises(InputError) as caught:
        load_eval(write(folder, BASE))
    assert caught.value.path == str(bad) and caught.value.field.endswith("kind")


def test_duplicate_scenario_ids_are_rejected(folder):
    (folder / "s" / "b.yaml").write_text(SCENARIO.read_text())
    with pytest.raises(InputError, match="scenario id 'tiny' is also used by"):
        load_eval(write(folder, BASE))


def test_custom_strategy_is_imported_only_when_named(folder, monkeypatch):
    (folder / "mycompact.py").write_text("def keep_last(messages, client, out, limit):\n    return messages[-2:]\n")
    monkeypatch.syspath_prepend(str(folder))
    ev = load_eval(write(folder, BASE + "strategies: [mycompact:keep_last]\n"))
    assert ev.custom["mycompact:keep_last"].function.__name__ == "keep_last"


@pytest.mark.parametrize("name", ["smoke.yaml", "full.yaml"])
def test_shipped_evals_load(name):
    ev = load_eval(REPO / "evals" / name)
    assert ev.scenarios and ev.prompts


def test_validate_counts_what_a_run_would_do(eval_file, capsys):
    assert main(["validate", str(eval_file)]) == 0
    # locker: 2 summary + 2 truncate + none + no-history cases, 2 facts each
    assert "ok (1 scenario, 1 prompt; a run plays 6 cases and asks 12 probes)" in capsys.readouterr().out
    eval_file.write_text(eval_file.read_text() + "max_turns: 1\n")
    assert main(["validate", str(eval_file)]) == 0
    assert "a run plays 6 cases and asks 6 probes" in capsys.readouterr().out


def test_summary_layout_defaults_by_model_and_shapes_the_request(folder):
    from harness.compaction.context import CompactionSettings
    from harness.compaction.seed import summary_request
    from harness.models.weights import DEFAULT, SMOLLM2

    # Each embedded model gets the layout measured best on it; any other model the seed's.
    assert load_eval(write(folder, BASE)).spec.summary_layout == DEFAULT.summary_layout
    assert load_eval(write(folder, BASE + "model: smollm2-135m\n")).spec.summary_layout == "transcript-first"
    assert SMOLLM2.summary_layout == "transcript-first"
    assert load_eval(write(folder, BASE + "model: claude-x\n")).spec.summary_layout == "system"
    assert load_eval(write(folder, BASE + "summary_layout: system\n")).spec.summary_layout == "system"
    seed = summary_request("user: hi", CompactionSettings(summary_prompt="Summarise.", layout="system"))
    assert seed == {"system": "Summarise.", "messages": [{"role": "user", "content": "user: hi"}]}
    after = summary_request("user: hi", CompactionSettings(summary_prompt="Summarise.", layout="transcript-first"))
    assert after == {
        "messages": [{"role": "user", "content": "<conversation>\nuser: hi\n</conversation>\n\nSummarise."}]
    }


def test_sampling_settings_and_the_control_prompt(folder):
    (folder / "ok.txt").write_text("Reply OK.")
    ev = load_eval(write(folder, BASE + "sampling: {repeat_penalty: 1.3}\ncontrol_prompt: ok.txt\n"))
    assert ev.spec.sampling == {"repeat_penalty": 1.3}
    assert [p.id for p in ev.prompts] == ["p", "ok"] and ev.control == "ok"
    assert load_eval(folder / "e.yaml", control=False).control is None
    with pytest.raises(InputError, match=r"e.yaml:\d+: control_prompt: summary prompt file 'nope.txt' not found"):
        load_eval(write(folder, BASE + "control_prompt: nope.txt\n"))


def test_a_budget_is_parsed_once_and_resolves_to_a_limit_per_scenario():
    assert Budget.parse(1200).limit(50) == 1200 and str(Budget.parse(" 1200 ")) == "1200"
    assert Budget.parse("40%").limit(1000) == 400 and Budget.parse("0.01%").limit(10) == 1  # never 0
    assert Budget.parse(Budget("40%")) == Budget("40%")
    for bad in ("0", "abc", "101%", "-5", "1e3", True, 1.5, None, [1200]):
        with pytest.raises(ValueError, match="a budget is a positive number"):
            Budget.parse(bad)
    written = ["50%", "1200", "5%", "300"]
    assert sorted(written, key=lambda b: Budget(b).sort_key()) == ["300", "1200", "5%", "50%"]
