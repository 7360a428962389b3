"""Writing scenario files that a program made (generators, importers): each is validated exactly as
a hand-written file is before anything is written. A generator's set is written all or nothing (a
scenario that does not validate is its bug); an import writes what it can (`write_imported`): one
bad fact is left out with a note, one bad scenario is refused while the others are written."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from ..inputs.scenario import Scenario
from ..inputs.scenario_file import load_scenario


def dump(data: dict[str, Any]) -> str:
    """A scenario as YAML, keys in the order the format documents them."""
    return yaml.dump(
        data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False, allow_unicode=True, width=100
    )


def write_scenarios(
    scenarios: list[dict[str, Any]],
    out_dir: str | Path,
    origin: str | Path,
    check: Callable[[Scenario], None] = lambda scenario: None,
) -> list[tuple[Path, Scenario]]:
    """Write each scenario (plain data) to `out_dir/<id>.yaml` and return the files with what they
    hold. A scenario that does not validate is a bug of whatever made it (`origin`, named in the
    error); `check` may refuse a valid one (raising). Either way nothing is written."""
    out_dir = Path(out_dir)
    with tempfile.TemporaryDirectory() as staging:
        staged = []
        for data in scenarios:
            path = Path(staging) / f"{data['id']}.yaml"
            path.write_text(dump(data), encoding="utf-8")
            try:
                scenario = load_scenario(path)
            except InputError as exc:
                raise InputError(
                    origin,
                    f"the scenario {data['id']!r} made from it does not validate "
                    f"({exc.field + ': ' if exc.field else ''}{exc.message})",
                ) from None
            check(scenario)
            staged.append((path, scenario))
        return [(_publish(path, out_dir), scenario) for path, scenario in staged]


@dataclass
class Written:
    """One imported scenario as written: its file, what it holds, and the facts left out of it."""

    path: Path
    scenario: Scenario
    notes: list[str]


def write_imported(
    scenarios: list[dict[str, Any]], out_dir: str | Path, origins: list[str]
) -> tuple[list[Written], list[InputError]]:
    """Write imported scenarios one by one (`origins`: where each came from, named in its error). A
    fact that does not validate is left out with a note naming it and why; a scenario that still does
    not validate is refused (its error returned) while the others are written."""
    written, refused = [], []
    with tempfile.TemporaryDirectory() as staging:
        for data, origin in zip(scenarios, origins):
            try:
                path, scenario, notes = _validated(data, Path(staging), origin)
            except InputError as exc:
                refused.append(exc)
                continue
            written.append(Written(_publish(path, Path(out_dir)), scenario, notes))
    return written, refused


def _validated(data: dict[str, Any], staging: Path, origin: str) -> tuple[Path, Scenario, list[str]]:
    """The scenario staged and validated, with every fact that would not validate left out (noted)."""
    path = staging / f"{data['id']}.yaml"
    notes: list[str] = []
    while True:
        path.write_text(dump(data), encoding="utf-8")
        try:
            return path, load_scenario(path), notes
        except InputError as exc:
            if (dropped := _drop_fact(data, exc.loc)) is None:
                raise InputError(
                    origin,
                    f"the scenario {data['id']!r} made from it does not validate "
                    f"({exc.field + ': ' if exc.field else ''}{exc.message})",
                ) from None
            notes.append(f"fact {dropped!r} left out: {exc.message}")


def _drop_fact(data: dict[str, Any], loc: tuple[str | int, ...]) -> str | None:
    """Remove the fact an error is located in (and any later value it was given); its id, or None
    when the error is not inside a fact."""
    if len(loc) < 4 or loc[0] != "turns" or loc[2] != "facts":
        return None
    fact = data["turns"][loc[1]]["facts"].pop(loc[3])
    for turn in data["turns"]:
        turn["supersedes"] = [change for change in turn.get("supersedes", []) if change.get("fact") != fact.get("id")]
        for key in ("facts", "supersedes"):
            if key in turn and not turn[key]:
                del turn[key]
    return str(fact.get("id"))


def _publish(staged: Path, out_dir: Path) -> Path:
    """Move a staged file into place atomically: the old file or the new one, never half of each."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / staged.name
    partial = target.with_suffix(".yaml.partial")
    shutil.copyfile(staged, partial)
    os.replace(partial, target)
    return target
