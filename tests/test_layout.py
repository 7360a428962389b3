"""The package layout follows the data's path, and stays that way: analysis and reports never reach
the runner or the model layer, imports go only downwards in at most five floors, and the code is
linted and formatted (ruff, configured in pyproject.toml: the line-length and complexity limits
guard against sprawl) and the whole package's types are checked (mypy, strict)."""

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "harness"


def part_of(module: str) -> str:
    """The room a module belongs to: `harness.<subpackage>`, or a top-level module."""
    return ".".join(module.split(".")[:2])


def imports(path: Path) -> set[str]:
    """Every harness module a file imports, at module level or inside functions."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            name = (
                ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
                if node.level
                else node.module
            )
            found.add(name)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] == "harness"}


@cache
def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        source = part_of(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        edges.setdefault(source, set()).update(part_of(m) for m in imports(path) if part_of(m) != source)
    edges.pop("harness.__init__", None)
    return edges


@pytest.mark.slow
def test_analysis_and_reports_import_nothing_from_execution_or_models():
    for part in ("harness.analysis", "harness.reports"):
        assert not graph()[part] & {"harness.execution", "harness.models"}, part
    # Nor through anything they import: loading every module of both leaves the runner, the model
    # layer and the SDK unloaded.
    modules = [
        ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for part in ("analysis", "reports")
        for p in (PACKAGE / part).rglob("*.py")
    ]
    code = (
        f"import importlib, sys; [importlib.import_module(m) for m in {modules!r}]; "
        "print(sorted(m for m in sys.modules if m.startswith(('harness.execution', 'harness.models', "
        "'anthropic', 'xllamacpp'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_imports_run_downwards_in_at_most_five_floors():
    edges = graph()
    floors: dict[str, int] = {}

    def floor(part: str, path: tuple[str, ...] = ()) -> int:
        assert part not in path, f"import cycle: {' > '.join(path + (part,))}"
        if part not in floors:
            floors[part] = 1 + max((floor(d, path + (part,)) for d in edges.get(part, ()) if d in edges), default=0)
        return floors[part]

    assert max(floor(part) for part in edges) <= 5, floors
    assert floors["harness.cli"] == max(floors.values())


@pytest.mark.slow
@pytest.mark.parametrize("command", [["check"], ["format", "--check"]])
def test_ruff_finds_nothing_to_fix(command):
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "harness", "tests", "scripts"],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # `make lint` fixes what it can


@pytest.mark.slow
def test_mypy_finds_no_type_errors_in_the_package():
    """Strict types over the whole package (pyproject.toml)."""
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=PACKAGE.parent, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
