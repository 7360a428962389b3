"""Synthetic coding-agent sessions (`harness generate --kind coding`): one request and N tool steps,
the shape of the sessions compaction loses most in. The agent runs a test that fails, reads files,
searches, states a decision between two approaches, edits, reruns, and reads on; every path,
function, test name and error message is drawn from a seed, so nothing is guessable and the same
seed gives the same files.

A session is built as an imported log is (`importers.session.Session`) and its facts are derived
the same way (`importers.derive`): the task, the first error, the failure count, the files changed,
the commands run, the plan (written with TodoWrite, updated as items finish), what the agent did next
at points through it, the user's prohibition. The one fact a log states only in words, the decision,
is planted where the agent states it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from ..importers.derive import derive, turn_text
from ..importers.session import Call, Exchange, Session, Step, layout, to_scenario
from ..writer import write_scenarios

CONSONANTS, VOWELS = "bdfgklmnprstvz", "aeiou"
ERRORS = ("KeyError", "ValueError", "TypeError", "AttributeError", "LookupError", "RuntimeError")
APPROACHES = (("cache the {x} lookup", "retry the {x} request"), ("validate {x} at the boundary", "patch {x} at the call site"),
              ("split {x} into two passes", "rewrite {x} as one query"), ("pin the {x} version", "vendor the {x} module"))


def pronounceable(rng: random.Random, syllables: int = 3) -> str:
    """A made-up word no model knows ('kadoruvi'): what re-drawn names and paths are built of."""
    return "".join(rng.choice(CONSONANTS) + rng.choice(VOWELS) for _ in range(syllables))


@dataclass
class Options:
    scenarios: int = 6
    steps: int = 30  # tool steps after the request
    file_chars: int = 900  # size of each file the agent reads
    seed: int = 0


def _source(rng: random.Random, names: list[str], chars: int) -> str:
    """A plausible Python file of about `chars` characters that mentions the given names."""
    lines, n = ["import logging", ""], 0
    while sum(map(len, lines)) < chars:
        name = names[n % len(names)] if n < len(names) else pronounceable(rng, 2) + "_" + pronounceable(rng, 2)
        lines += [f"def {name}(record, limit={rng.randint(2, 99)}):",
                  f"    value = record.get('{pronounceable(rng, 2)}')",
                  f"    if value is None or len(value) > limit:",
                  f"        return {rng.randint(0, 9)}",
                  f"    return value", ""]
        n += 1
    return "\n".join(lines)


def session(options: Options, index: int) -> tuple[Session, dict]:
    """One session, and its decision fact (planted in the turn whose text states it)."""
    rng = random.Random(f"coding-{options.seed}-{index}")
    package = pronounceable(rng)
    modules = [f"{package}/{pronounceable(rng)}.py" for _ in range(5)]
    test_file = f"tests/test_{pronounceable(rng)}.py"
    protected = f"{package}/{pronounceable(rng)}_schema.py"
    broken = f"{pronounceable(rng, 2)}_{pronounceable(rng, 2)}"
    test_name = f"test_{broken}_{pronounceable(rng, 2)}"
    error = rng.choice(ERRORS)
    message = f"'{pronounceable(rng, 2)}_{pronounceable(rng, 2)}' missing from {broken} result"
    failed, passed = rng.randint(2, 9), rng.randint(20, 80)
    first, second = rng.choice(APPROACHES)
    subject = pronounceable(rng, 2)
    chosen, other = first.format(x=subject), second.format(x=subject)
    if rng.random() < 0.5:
        chosen, other = other, chosen
    request = (f"{test_file} started failing after the last merge; find out why and fix it. "
               f"Don't edit {protected}, another team owns it.")
    traceback = (f"{test_file}::{test_name} FAILED\nTraceback (most recent call last):\n"
                 f"  File \"{modules[0]}\", line {rng.randint(10, 90)}, in {broken}\n{error}: {message}\n"
                 f"=== {failed} failed, {passed} passed in 0.{rng.randint(10, 99)}s ===")
    steps = [Step("I'll reproduce the failure first.",
                  [Call("Bash", {"command": f"pytest {test_file} -x"}, traceback, is_error=True)])]
    edited: list[str] = []
    decision_step = options.steps // 3
    plan = [f"Reproduce the {test_name} failure", f"Find why {broken} drops its result",
            f"Fix {broken} in {modules[0]}", f"Rerun {test_file}"]

    def todo(finished: int) -> Step:  # the agent's plan as Claude Code's TodoWrite writes it
        todos = [{"content": item, "status": "completed" if i < finished else "in_progress" if i == finished
                  else "pending", "activeForm": item} for i, item in enumerate(plan)]
        return Step(None, [Call("TodoWrite", {"todos": todos}, "Todos have been modified successfully.")])
    for n in range(1, options.steps):
        path = modules[n % len(modules)]
        if n in (1, decision_step - 1, decision_step + 5):
            steps.append(todo({1: 1, decision_step - 1: 2, decision_step + 5: 3}[n]))
        elif n == decision_step:
            text = (f"There are two ways to fix this: {chosen}, or {other}. I'll {chosen}, "
                    f"because the other would hide the error in {path}.")
            steps.append(Step(text, [Call("Read", {"file_path": path}, _source(rng, [broken], options.file_chars))]))
        elif n == decision_step + 4:
            steps.append(Step("Rerunning the test.", [Call("Bash", {"command": f"pytest {test_file} -x -q"},
                                                           f"=== {failed + passed} passed in 0.51s ===")]))
        elif n in (decision_step + 1, decision_step + 3) or (n > decision_step and n % 7 == 0):
            target = path if n != decision_step + 3 else f"{package}/{pronounceable(rng)}_fix.py"
            edited.append(target)
            tool = "Edit" if n != decision_step + 3 else "Write"
            steps.append(Step(None, [Call(tool, {"file_path": target, "old_string": f"limit={n}",
                                                 "new_string": f"limit={n + 1}"},
                                          f"The file {target} has been updated.")]))
        elif n % 5 == 0:
            word = pronounceable(rng, 2)
            hits = "\n".join(f"{m}:{rng.randint(1, 200)}:    {word} = record.get('{word}')" for m in modules[:3])
            steps.append(Step(None, [Call("Bash", {"command": f"grep -rn {word} {package}/"}, hits)]))
        else:
            steps.append(Step(None, [Call("Read", {"file_path": path}, _source(rng, [], options.file_chars))]))
    final = f"Fixed: {test_name} passes again; I changed {', '.join(dict.fromkeys(edited))}."
    log = Session(f"coding-{options.seed}-{index:03d}",
                  f"Synthetic coding session (harness generate --kind coding, seed {options.seed}, {options.steps} "
                  "tool steps): one request, a failing test, a decision between two approaches, edits and reruns.",
                  [Exchange(request, steps, final)])
    turn = next(t for t, where in enumerate(layout(log)) if where.step is steps[decision_step])
    assert chosen in turn_text(log, layout(log)[turn])
    decision = {"id": "decision", "kind": "decision", "answer": chosen, "match": "f1", "f1_threshold": 0.6,
                "probe": "Of the two approaches to the fix you weighed, which one did you decide on?", "_turn": turn}
    return log, decision


def generate(options: Options, out: Path) -> list[Path]:
    if options.steps < 12:
        raise ValueError(f"--steps {options.steps}: a coding session needs at least 12 tool steps")
    data = []
    for index in range(options.scenarios):
        log, decision = session(options, index)
        facts = derive(log)
        facts.setdefault(decision.pop("_turn"), []).append(decision)
        data.append(to_scenario(log, facts))
    return [path for path, _ in write_scenarios(data, out, "harness generate --kind coding")]
