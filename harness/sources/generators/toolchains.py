"""What a generated coding session is made of: the toolchain it works in (Python with pytest,
TypeScript with npm and Jest, Go) and the kind of work it does (six archetypes). A toolchain writes
the tool output a real session shows: test runs that fail as that runner prints failures, build and
install logs, lint output, source files; an archetype says what the user asked for and the plan.
Every name is drawn by the caller, so nothing here is guessable by a model.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Failure:
    """One failing run, as a toolchain prints it."""

    test: str  # the test file
    case: str  # the failing test's name
    module: str  # the source file the error is raised in
    function: str
    error: str  # exception or error kind
    message: str
    failed: int
    passed: int


@dataclass(frozen=True)
class Toolchain:
    name: str
    extension: str
    manifest: str  # where dependencies are declared
    linter: str  # the command that lints the project
    install: str  # the command that installs dependencies
    serve: str  # the command that starts the development server
    errors: tuple[str, ...]
    test_path: Callable[[str, str], str]  # (the package's folder, word) -> test file
    test_command: Callable[[str], str]  # test file -> the command that runs it
    failure: Callable[[Failure, random.Random], str]
    passing: Callable[[str, int], str]  # (test file, count) -> a green run's output
    source: Callable[[random.Random, list[str], int, Callable[[], str]], str]  # (rng, names, chars, word) -> a file
    dependency: Callable[[str, str], str]  # (name, version) -> its line in the manifest


def _python_failure(f: Failure, rng: random.Random) -> str:
    return (
        f"============================= test session starts ==============================\n"
        f"collected {f.failed + f.passed} items\n\n{f.test} {'.' * rng.randint(2, 9)}F\n\n"
        f"=================================== FAILURES ===================================\n"
        f"____________________________ {f.case} ____________________________\n"
        f'Traceback (most recent call last):\n  File "{f.test}", line {rng.randint(10, 90)}, in {f.case}\n'
        f'    result = {f.function}(record)\n  File "{f.module}", line {rng.randint(10, 200)}, in {f.function}\n'
        f"    return record[key]\n{f.error}: {f.message}\n"
        f"=========================== short test summary info ============================\n"
        f"FAILED {f.test}::{f.case} - {f.error}\n"
        f"=== {f.failed} failed, {f.passed} passed in {rng.randint(1, 9)}.{rng.randint(10, 99)}s ==="
    )


def _typescript_failure(f: Failure, rng: random.Random) -> str:
    line = rng.randint(10, 200)
    return (
        f" FAIL  {f.test}\n  ● {f.function} › {f.case}\n\n    {f.error}: {f.message}\n\n"
        f"      {line - 1} |   const entry = lookup(record);\n    > {line} |   return entry.value;\n"
        f"         |                ^\n\n      at {f.function} ({f.module}:{line}:16)\n"
        f"      at Object.<anonymous> ({f.test}:{rng.randint(5, 80)}:21)\n\n"
        f"Test Suites: 1 failed, {rng.randint(3, 12)} passed\n"
        f"Tests:       {f.failed} failed, {f.passed} passed, {f.failed + f.passed} total\n"
        f"Time:        {rng.randint(1, 9)}.{rng.randint(100, 999)} s"
    )


def _go_failure(f: Failure, rng: random.Random) -> str:
    package = f.module.rsplit("/", 1)[0]
    return (
        f"=== RUN   {f.case}\n--- FAIL: {f.case} (0.00s)\n"
        f"panic: {f.error}: {f.message} [recovered]\n\tpanic: {f.error}: {f.message}\n\n"
        f"goroutine {rng.randint(6, 40)} [running]:\ntesting.tRunner.func1.2()\n"
        f"\t/usr/local/go/src/testing/testing.go:1632 +0x2{rng.randint(10, 99)}\n"
        f"example.com/{package}.{f.function}(...)\n\t{f.module}:{rng.randint(10, 200)} +0x{rng.randint(100, 999)}\n"
        f"FAIL\texample.com/{package}\t0.0{rng.randint(10, 99)}s\n"
        f"DONE {f.failed + f.passed} tests, {f.failed} failures in {rng.randint(1, 9)}.{rng.randint(100, 999)}s"
    )


def _python_source(rng: random.Random, names: list[str], chars: int, word: Callable[[], str]) -> str:
    lines, n = ["import logging", "", "log = logging.getLogger(__name__)", ""], 0
    while sum(map(len, lines)) < chars:
        name = names[n] if n < len(names) else f"{word()}_{word()}"
        lines += [
            f"def {name}(record, limit={rng.randint(2, 99)}):",
            f"    value = record.get('{word()}')",
            "    if value is None or len(value) > limit:",
            f"        log.debug('skipped %s', '{word()}')",
            f"        return {rng.randint(0, 9)}",
            "    return value",
            "",
        ]
        n += 1
    return "\n".join(lines)


def _typescript_source(rng: random.Random, names: list[str], chars: int, word: Callable[[], str]) -> str:
    lines, n = ["import { lookup } from './lookup';", ""], 0
    while sum(map(len, lines)) < chars:
        name = names[n] if n < len(names) else f"{word()}{word().capitalize()}"
        lines += [
            f"export function {name}(record: Record<string, string>, limit = {rng.randint(2, 99)}) {{",
            f"  const value = record['{word()}'];",
            "  if (value === undefined || value.length > limit) {",
            f"    return {rng.randint(0, 9)};",
            "  }",
            "  return lookup(record).value;",
            "}",
            "",
        ]
        n += 1
    return "\n".join(lines)


def _go_source(rng: random.Random, names: list[str], chars: int, word: Callable[[], str]) -> str:
    lines, n = [f"package {word()}", "", 'import "errors"', ""], 0
    while sum(map(len, lines)) < chars:
        name = names[n] if n < len(names) else f"{word()}{word().capitalize()}"
        lines += [
            f"func {name}(record map[string]string) (string, error) {{",
            f'\tvalue, ok := record["{word()}"]',
            f"\tif !ok || len(value) > {rng.randint(2, 99)} {{",
            f'\t\treturn "", errors.New("{word()} missing")',
            "\t}",
            "\treturn value, nil",
            "}",
            "",
        ]
        n += 1
    return "\n".join(lines)


TOOLCHAINS = {
    "python": Toolchain(
        "python",
        ".py",
        "pyproject.toml",
        "ruff check .",
        "pip install -e '.[dev]'",
        "python -m {package}.serve &",
        ("KeyError", "ValueError", "TypeError", "AttributeError", "LookupError"),
        lambda folder, word: f"tests/test_{word}.py",
        lambda test: f"pytest {test} -x --tb=native",
        _python_failure,
        lambda test, count: f"{test} {'.' * min(count, 40)}\n=== {count} passed in 0.{count % 90 + 10}s ===",
        _python_source,
        lambda name, version: f'    "{name}=={version}",',
    ),
    "typescript": Toolchain(
        "typescript",
        ".ts",
        "package.json",
        "npx eslint src",
        "npm install",
        "npm run serve &",
        ("TypeError", "RangeError", "ReferenceError", "SyntaxError"),
        lambda folder, word: f"{folder}/{word}.test.ts",
        lambda test: f"npx jest {test}",
        _typescript_failure,
        lambda test, count: f" PASS  {test}\nTests:       {count} passed, {count} total",
        _typescript_source,
        lambda name, version: f'    "{name}": "{version}",',
    ),
    "go": Toolchain(
        "go",
        ".go",
        "go.mod",
        "go vet ./...",
        "go mod download",
        "go run ./cmd/serve &",
        ("runtime error", "nil map write", "index out of range"),
        lambda folder, word: f"{folder}/{word}_test.go",
        lambda test: f"gotestsum -- ./{test.rsplit('/', 1)[0]}/",
        _go_failure,
        lambda test, count: f"ok  \texample.com/{test.rsplit('/', 1)[0]}\t0.041s\nDONE {count} tests in 1.204s",
        _go_source,
        lambda name, version: f"\t{name} {version}",
    ),
}


@dataclass(frozen=True)
class Archetype:
    """A kind of coding work: the user's request and the agent's plan, with {placeholders} the
    session fills (test, case, function, module, package, dependency, old, new, ticket, config)."""

    name: str
    request: str
    plan: tuple[str, str, str, str]
    approaches: tuple[str, str]  # the two fixes the agent weighs ({x}: a drawn word)


ARCHETYPES = [
    Archetype(
        "failing-test",
        "{test} started failing after the last merge; find out why and fix it.",
        (
            "Reproduce the {case} failure",
            "Find why {function} drops its result",
            "Fix {function} in {module}",
            "Rerun {test}",
        ),
        ("cache the {x} lookup", "retry the {x} request"),
    ),
    Archetype(
        "feature",
        "Add a --{flag} option to the {package} export command; the plan is in ticket #{ticket}.",
        (
            "Add the {flag} option to {module}",
            "Pass {flag} through {function}",
            "Test {flag} in {test}",
            "Document {flag} in the README",
        ),
        ("thread {x} through the call chain", "read {x} from a global setting"),
    ),
    Archetype(
        "refactor",
        "Rename {function} to {renamed} everywhere in {package}; behaviour must not change.",
        (
            "Find every caller of {function}",
            "Rename {function} in {module}",
            "Update the callers of {renamed}",
            "Run the whole suite",
        ),
        ("keep a deprecated {x} alias", "rename {x} in one commit"),
    ),
    Archetype(
        "upgrade",
        "Upgrade {dependency} from {old} to {new}; the build must stay green.",
        (
            "Bump {dependency} to {new} in the manifest",
            "Fix what broke in {module}",
            "Adapt {function} to the {new} API",
            "Run the full test suite",
        ),
        ("adapt to the new {x} API", "pin the old {x} behaviour behind a shim"),
    ),
    Archetype(
        "flaky",
        "{test} fails about one run in five on CI (ticket #{ticket}); make it deterministic.",
        (
            "Reproduce the {case} flake",
            "Find the shared state in {function}",
            "Make {function} deterministic",
            "Run {test} fifty times",
        ),
        ("seed the {x} generator", "sort the {x} results"),
    ),
    Archetype(
        "migration",
        "Migrate {config} to schema version {version} and update the loader in {module}.",
        (
            "Write the version {version} migration",
            "Update the loader in {module}",
            "Migrate the {config} fixtures",
            "Run the migration tests",
        ),
        ("migrate {x} in place", "write {x} to a new file"),
    ),
]
