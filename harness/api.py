"""The harness from Python: load an eval, run it, compare two variants, gate a run against a baseline;
audit agent logs.

    from harness import api

    ev = api.load_eval("evals/smoke.yaml", budgets=["40%"])
    run = api.run(ev, results="results")
    for comparison in api.compare(run, a="seed", b="facts-first"):
        print(comparison.metric, comparison.rate_a, comparison.rate_b, comparison.p_value)
    api.baseline(run)                                 # once: results/baselines/smoke
    verdict = api.gate(api.run(ev), "results/baselines/smoke")
    raise SystemExit(verdict.exit_code)  # 0 pass, 100 regression, 1 cannot judge

This module and the extension contracts (`harness.compaction.context`, `harness.plugins`; see
docs/extending.md) are the public interface. Everything else in the package is internal: its
names may change in any release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import audit as _audit
from .analysis import gate as _gate
from .analysis.compare import Comparison, compare_variants
from .execution.evals import Eval, load_eval
from .execution.executors import execute
from .execution.provenance import keep_baseline, recorded_answers
from .inputs.evalfile import GateSettings
from .records import Run, load_run
from .records.audit import AuditResult

__all__ = [
    "AuditResult",
    "Comparison",
    "Eval",
    "GateSettings",
    "Outcome",
    "Run",
    "Verdict",
    "compare",
    "gate",
    "load_eval",
    "audit",
    "baseline",
    "open_run",
    "run",
]

Verdict = _gate.Verdict
Outcome = _gate.Outcome
CannotJudge = _gate.CannotJudge


def run(
    ev: Eval | str | Path,
    *,
    results: str | Path = "results",
    cache: bool = True,
    jobs: int | None = None,
    base_url: str | None = None,
    judge: str | None = None,
    progress: bool = False,
    baseline: str | Path | None = None,
    **overrides: Any,
) -> Run:
    """Run an eval (a loaded `Eval`, or a path with `load_eval`'s overrides) as `harness run` does,
    the response cache under `results`, and return the finished run. `baseline`: a baseline folder
    whose recorded responses answer the requests identical to its own (a gate's candidate, as
    `harness gate` runs it), when the model runtime is the one it was recorded with."""
    if not isinstance(ev, Eval):
        ev = load_eval(ev, **overrides)
    elif overrides:
        raise TypeError("overrides apply when the eval is given as a path; load_eval takes them")
    recorded = recorded_answers(Path(baseline)).responses if baseline and cache else None
    return load_run(
        execute(
            ev,
            Path(results),
            base_url=base_url,
            jobs=jobs,
            judge_model=judge,
            cache=cache,
            progress=progress,
            recorded=recorded,
        )
    )


def open_run(path: str | Path) -> Run:
    """A finished run folder (`results/runs/...`), read once."""
    return load_run(Path(path))


def baseline(finished: Run, results: str | Path = "results", name: str | None = None) -> Path:
    """Record a finished run as its eval's baseline (`results/baselines/NAME`), as `harness baseline`:
    its records, and the responses its requests got from the response cache under `results`."""
    if finished.path is None:
        raise ValueError("this run was not read from a folder: open it with open_run")
    return keep_baseline(finished.path, Path(results), name or finished.manifest.name).path


def compare(
    a_run: Run, b_run: Run | None = None, *, a: str | None = None, b: str | None = None, strategy: str = "summary"
) -> list[Comparison]:
    """Variant `a` of `a_run` against variant `b` of `b_run` (default: the same run), paired fact by
    fact on every metric both measured (retention, recall, next-action, behaviour), each with its n,
    interval and p over scenarios. A variant: a prompt id (`seed`), a strategy (`truncate`), or
    `summary:seed`."""
    return compare_variants(a_run, b_run if b_run is not None else a_run, a, b, strategy)


def gate(candidate: Run, baseline: str | Path, *, against: str | None = None, **thresholds: Any) -> Verdict:
    """The gate's verdict on a candidate run against a recorded baseline folder, with the thresholds
    the candidate's eval file set (its `gate:`), overridden by `thresholds` (max_drop=0.05, ...).
    Raises `CannotJudge` when the two cannot be compared at all."""
    settings = _gate.manifest_settings(candidate.manifest, **thresholds)
    return _gate.evaluate(_gate.load_baseline(Path(baseline)), candidate, settings, against)


def audit(*paths: str | Path, window: int = 10, controls: int = 4, format: str | None = None) -> AuditResult:
    """What compaction already cost in agent logs (`harness audit`, docs/audit.md): the signals after
    each recorded compaction against control windows of the same sessions. No model is called."""
    return _audit.audit([str(p) for p in paths], window, controls, format)
