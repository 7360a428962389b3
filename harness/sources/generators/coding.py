"""Synthetic coding-agent sessions (`harness generate --kind coding`): one request and N tool steps,
the shape of the sessions compaction loses most in, varied as real ones are: six kinds of work (a
failing test, a feature built from a plan, a refactor, a dependency upgrade, a flaky test, a
migration; `toolchains.ARCHETYPES`) in three toolchains (Python/pytest, TypeScript/npm/Jest, Go),
with their real output shapes: tracebacks, test summaries, install logs, lint output, diffs, search
hits. Every path, function, value and message is drawn from a seed, so nothing is guessable and the
same seed gives the same files.

Each session holds what compaction is known to lose: the task; the first error; a plan written with
TodoWrite whose items finish one by one; files changed and commands run; an edit refused and retried;
a command that failed and would fail again if rerun unchanged; identifiers read in output and typed
again (a commit hash, a ticket id, an environment variable, a port); the user's constraints, one of
them changed by a message mid-session (the later one stands, the earlier is stale); a decision
between two approaches. All of it is planted in the first half of the session, so a compaction late
in it folds something of every kind.

A session is built as an imported log is (`importers.session.Session`) and its facts are derived
the same way (`importers.derive`); the one fact a log states only in words, the decision, is planted
where the agent states it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..importers.derive import derive, turn_text
from ..importers.session import Call, Exchange, Session, Step, layout, to_scenario
from ..writer import write_scenarios
from .toolchains import ARCHETYPES, TOOLCHAINS, Archetype, Failure, Toolchain

CONSONANTS, VOWELS = "bdfgklmnprstvz", "aeiou"
MIN_STEPS = 25  # the steps every kind of fact needs; longer sessions read and search more


def pronounceable(rng: random.Random, syllables: int = 3) -> str:
    """A made-up word no model knows ('kadoruvi'): what re-drawn names and paths are built of."""
    return "".join(rng.choice(CONSONANTS) + rng.choice(VOWELS) for _ in range(syllables))


@dataclass
class Options:
    scenarios: int = 6
    steps: int = 30  # tool steps after the request
    file_chars: int = 900  # size of each file the agent reads
    seed: int = 0


def kind_of(index: int) -> tuple[Archetype, Toolchain]:
    """Session `index`'s archetype and toolchain: every pair once in 18 sessions."""
    chains = list(TOOLCHAINS.values())
    return ARCHETYPES[index % len(ARCHETYPES)], chains[(index + index // len(ARCHETYPES)) % len(chains)]


@dataclass(kw_only=True)
class Project:
    """What one session is about: its names, drawn from the session's seed in a fixed order (a
    change of order changes every generated session)."""

    package: str
    folder: str
    modules: list[str]
    test: str
    function: str
    protected: str  # the file the user first forbids, then allows
    generated: str  # the file forbidden instead
    hashes: list[str]
    culprit: str
    ticket: str
    variable: str
    port: int
    plan: list[str]
    chosen: str  # the approach the agent decides on
    other: str
    failure: Failure
    request: str
    run_tests: str


class Steps:
    """Tool steps as Claude Code logs them, with random but plausible results."""

    def __init__(self, rng: random.Random, chain: Toolchain, options: Options):
        self.rng, self.chain, self.options = rng, chain, options

    def word(self) -> str:
        return pronounceable(self.rng, 2)

    def ident(self) -> str:  # a function name in the toolchain's style
        word = self.word
        return f"{word()}_{word()}" if self.chain.name == "python" else f"{word()}{word().capitalize()}"

    def bash(self, command: str, result: str, error: bool = False) -> Step:
        return Step(None, [Call("Bash", {"command": command}, result, is_error=error)])

    def read(self, path: str, names: tuple[str, ...] = ()) -> Step:
        source = self.chain.source(self.rng, list(names), self.options.file_chars, self.word)
        return Step(None, [Call("Read", {"file_path": path}, source)])

    def todo(self, plan: list[str], finished: int) -> Step:  # the plan as Claude Code's TodoWrite writes it
        todos = [
            {
                "content": item,
                "status": "completed" if i < finished else "in_progress" if i == finished else "pending",
                "activeForm": item,
            }
            for i, item in enumerate(plan)
        ]
        return Step(None, [Call("TodoWrite", {"todos": todos}, "Todos have been modified successfully.")])

    def search(self, symbol: str, project: Project) -> Step:
        modules = self.rng.sample(project.modules, 3)
        hits = "\n".join(f"{m}:{self.rng.randint(1, 200)}:    {symbol}(record)" for m in modules)
        return self.bash(f"rg -n {symbol} {project.folder}/", hits)

    def edit(self, path: str, before: str, after: str, refused: bool = False) -> Step:
        result = (
            f"<tool_use_error>String to replace not found in file.\nString: {before}</tool_use_error>"
            if refused
            else f"The file {path} has been updated."
        )
        edit = Call("Edit", {"file_path": path, "old_string": before, "new_string": after}, result, is_error=refused)
        return Step(None, [edit])


def draw_project(steps: Steps, archetype: Archetype) -> Project:
    """The session's names, in the order the seed draws them."""
    rng, chain, word, ident = steps.rng, steps.chain, steps.word, steps.ident
    package = pronounceable(rng)
    folder = f"src/{package}" if chain.name == "typescript" else package
    modules = [f"{folder}/{pronounceable(rng)}{chain.extension}" for _ in range(5)]
    test = chain.test_path(folder, pronounceable(rng))
    function, renamed, case = (
        ident(),
        ident(),
        f"test_{word()}_{word()}" if chain.name == "python" else f"Test{word().capitalize()}{word().capitalize()}",
    )
    protected, generated = f"{folder}/{word()}_schema{chain.extension}", f"{folder}/{word()}_generated{chain.extension}"
    hashes = [f"{rng.getrandbits(28):07x}" for _ in range(6)]
    culprit, ticket = rng.choice(hashes[:3]), str(rng.randint(1000, 9899))
    variable, port = (
        f"{package.upper()}_{rng.choice(['TIMEOUT_MS', 'CACHE_DIR', 'REGION', 'POOL_SIZE'])}",
        rng.randint(3000, 9899),
    )
    major = rng.randint(1, 4)
    dependency, old, new = (
        pronounceable(rng, 2),
        f"{major}.{rng.randint(0, 9)}.{rng.randint(0, 9)}",
        f"{major + 1}.{rng.randint(0, 9)}.{rng.randint(0, 9)}",
    )
    values = dict(
        test=test,
        case=case,
        function=function,
        renamed=renamed,
        module=modules[0],
        package=package,
        dependency=dependency,
        old=old,
        new=new,
        ticket=ticket,
        flag=f"{word()}-{word()}",
        config=f"config/{word()}.yaml",
        version=str(rng.randint(3, 9)),
    )
    plan = [item.format(**values) for item in archetype.plan]
    first, second = (approach.format(x=word()) for approach in archetype.approaches)
    chosen, other = (first, second) if rng.random() < 0.5 else (second, first)
    failure = Failure(
        test,
        case,
        modules[0],
        function,
        rng.choice(chain.errors),
        f"'{word()}_{word()}' missing from {function} result",
        rng.randint(2, 9),
        rng.randint(20, 80),
    )
    request = (
        f"{archetype.request.format(**values)} Don't edit {protected}, another team owns it. "
        "Don't use grep; use rg instead."
    )
    return Project(
        package=package,
        folder=folder,
        modules=modules,
        test=test,
        function=function,
        protected=protected,
        generated=generated,
        hashes=hashes,
        culprit=culprit,
        ticket=ticket,
        variable=variable,
        port=port,
        plan=plan,
        chosen=chosen,
        other=other,
        failure=failure,
        request=request,
        run_tests=chain.test_command(test),
    )


def first_part(steps: Steps, p: Project) -> tuple[list[Step], Step]:
    """The steps before the user's second message (a failed run, the culprit found, a decision
    between two approaches, a refused edit), and the step that states the decision."""
    rng, chain, word, bash, read = steps.rng, steps.chain, steps.word, steps.bash, steps.read
    log_lines = "\n".join(
        f"{h} {word().capitalize()} {word()} {word()}" + (f" (ticket #{p.ticket})" if h == p.culprit else "")
        for h in p.hashes
    )
    install = "\n".join(
        f"{chain.install.split()[0]}: fetched {word()}-{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
        for _ in range(max(8, steps.options.file_chars // 60))
    )
    decision = Step(
        f"There are two ways to fix this: {p.chosen}, or {p.other}. I'll {p.chosen}, because the other would "
        f"hide the error in {p.modules[0]}.",
        read(p.modules[2]).calls,
    )
    return [
        bash(p.run_tests, chain.failure(p.failure, rng), error=True),
        steps.todo(p.plan, 1),
        bash(f"git log --oneline -6 -- {p.modules[0]}", log_lines),
        read(p.modules[0], (p.function,)),
        steps.search(p.function, p),
        bash(chain.install, install),
        bash(
            f"git show {p.culprit} --stat",
            f"commit {p.culprit}\n {p.modules[0]} | {rng.randint(2, 40)} "
            f"{'+' * rng.randint(1, 9)}{'-' * rng.randint(1, 9)}\n 1 file changed",
        ),
        bash("cat .env.example", f"{p.variable}={rng.randint(10, 900)}\n{p.package.upper()}_LOG_LEVEL=info"),
        bash(
            chain.serve.format(package=p.package),
            f"Listening on http://127.0.0.1:{p.port} (pid {rng.randint(2000, 60000)})",
        ),
        decision,
        steps.edit(p.modules[0], f"limit={rng.randint(2, 9)}", "limit=None", refused=True),
        read(p.modules[0], (p.function,)),
        steps.edit(p.modules[0], "return record[key]", "return record.get(key)"),
        steps.todo(p.plan, 2),
    ], decision


def second_part(steps: Steps, p: Project, before: int) -> list[Step]:
    """The steps after the user's second message: the once-forbidden file edited, a command that
    fails however often it is rerun, reads and searches up to the session's length, the fix."""
    rng, chain, bash, read = steps.rng, steps.chain, steps.bash, steps.read
    after = [
        read(p.protected),
        bash(f"{p.variable}=1 {p.run_tests}", chain.failure(p.failure, rng), error=True),
        steps.edit(p.protected, f"version = {rng.randint(1, 3)}", f"version = {rng.randint(4, 9)}"),
        steps.todo(p.plan, 3),
        bash("make lint", "make: *** No rule to make target 'lint'.  Stop.", error=True),  # fails however often rerun
        bash(chain.linter, "All checks passed!"),
    ]
    # Longer sessions read and search more, after the user's message: a compaction late in the
    # session then folds that message and the steps after it (the changed constraint, the plan's
    # third item) as well as everything before.
    for n in range(steps.options.steps - before - len(after) - 5):
        after.append(read(p.modules[1 + n % 4]) if n % 3 else steps.search(steps.ident(), p))
    return after + [
        bash(f"curl -s http://127.0.0.1:{p.port}/healthz", '{"status": "ok"}'),
        bash("git diff --stat", f" {p.modules[0]} | 2 +-\n {p.protected} | 2 +-\n 2 files changed"),
        bash(f"{p.variable}=1 {p.run_tests}", chain.passing(p.test, p.failure.failed + p.failure.passed)),
        steps.todo(p.plan, 4),
        bash(
            f"git commit -am 'Fix {p.function} (ticket #{p.ticket})'",
            f"[main {rng.getrandbits(28):07x}] Fix {p.function}",
        ),
    ]


def session(options: Options, index: int) -> tuple[Session, dict[str, Any]]:
    """One session, and its decision fact (planted in the turn whose text states it)."""
    archetype, chain = kind_of(index)
    steps = Steps(random.Random(f"coding-{options.seed}-{index}"), chain, options)
    p = draw_project(steps, archetype)
    before, decision = first_part(steps, p)
    after = second_part(steps, p, len(before))
    message = (
        f"Update from the team: {p.protected} is ours now, so you may edit it if the fix needs it. "
        f"Instead, don't edit {p.generated}: it is generated from the schema."
    )
    final = f"Done: {p.test} passes again; I changed {p.modules[0]} and {p.protected}."
    log = Session(
        f"coding-{options.seed}-{index:03d}",
        f"Synthetic coding session (harness generate --kind coding, seed {options.seed}, {options.steps} "
        f"tool steps): {archetype.name} in {chain.name}; a plan, a refused edit, a failed command, "
        "identifiers reused, a constraint changed mid-session, a decision between two approaches.",
        [Exchange(p.request, before, "Carrying on with the plan."), Exchange(message, after, final)],
    )
    turn = next(t for t, where in enumerate(layout(log)) if where.step is decision)
    assert p.chosen in turn_text(log, layout(log)[turn])
    fact = {
        "id": "decision",
        "kind": "decision",
        "answer": p.chosen,
        "match": "f1",
        "f1_threshold": 0.6,
        "probe": "Of the two approaches to the fix you weighed, which one did you decide on?",
        "_turn": turn,
    }
    return log, fact


def scenario(options: Options, index: int) -> dict[str, Any]:
    """Session `index` as scenario data: its facts derived as an imported log's are, plus its decision."""
    if options.steps < MIN_STEPS:
        raise ValueError(f"--steps {options.steps}: a coding session needs at least {MIN_STEPS} tool steps")
    log, decision = session(options, index)
    facts = derive(log)
    facts.setdefault(decision.pop("_turn"), []).append(decision)
    return to_scenario(log, facts)


def generate(options: Options, out: Path) -> list[Path]:
    data = [scenario(options, index) for index in range(options.scenarios)]
    return [path for path, _ in write_scenarios(data, out, "harness generate --kind coding")]
