"""Writing scenario files that a program made (generators, importers): each is validated exactly as
a hand-written file is before anything is written, and the set is written all or nothing."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import yaml

from ..errors import InputError
from .scenario import Scenario, load_scenario


def dump(data: dict[str, Any]) -> str:
    """A scenario as YAML, keys in the order the format documents them."""
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False, allow_unicode=True,
                     width=100)


def write_scenarios(scenarios: list[dict[str, Any]], out_dir: str | Path, origin: str | Path,
                    check: Callable[[Scenario], None] = lambda scenario: None) -> list[tuple[Path, Scenario]]:
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
                raise InputError(origin, f"the scenario {data['id']!r} made from it does not validate "
                                         f"({exc.field + ': ' if exc.field else ''}{exc.message})") from None
            check(scenario)
            staged.append((path, scenario))
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for path, scenario in staged:
            target = out_dir / path.name
            partial = target.with_suffix(".yaml.partial")
            shutil.copyfile(path, partial)
            os.replace(partial, target)  # atomic: the old file or the new one, never half of each
            written.append((target, scenario))
        return written
