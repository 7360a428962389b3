"""Gating summary-prompt changes: a candidate run against a committed baseline run.

For each metric both runs measured (retention: do the summaries state the facts; recall: do the
probe answers), a cell (summary prompt x budget, plus each prompt over all budgets) fails when
the metric drops by more than `max_drop` *and* the paired test over scenarios says the drop is
significant at `alpha`, or when it falls under `floor`. A candidate prompt is compared with the
baseline prompt of its id (or `--against`, or the first), never with the keeps-nothing control. A
prompt also fails when its median summary is more than `max_summary_growth` longer than the
baseline's, or when its summaries stop at their token cap more often than the baseline's by more
than `max_cap_increase` (keeping facts by not compressing is no gain).

Every cell and check has a `Result`: an `Outcome` (pass, FAIL, cannot judge; a kind guard's
unguarded) with its reasons, decided by one rule (`decide`), and the verdict's outcome follows
them; the exit code, the terminal text, the markdown and the JUnit file are rendered from it.
When nothing fails, the gate may still be unable to *pass* a candidate (exit 1, with the reason):
a cell with too few scenarios to test, an eval that cannot detect a drop of `max_drop` (the
minimum detectable drop at `power`, from the baseline), or a baseline that shows the model is not
steered by its summary prompt (its best prompt's retention is not significantly above the
keeps-nothing control's). It also
cannot judge when the baseline is missing or from another model, when nothing pairs up, or when
errors exceed `max_error_rate`.

A prompt that keeps most facts but drops one kind (the files changed, the plan) barely moves the
overall rate, so each kind of fact is also guarded on its own, over all budgets: a kind fails when
its rate drops by more than `max_kind_drop` and the paired test says so at `alpha` divided by the
number of kinds tested (Bonferroni: seven kinds at 0.05 would otherwise fail an unchanged prompt
three times in ten). A kind too small to test, or kept too rarely by the baseline to lose
`max_kind_drop`, is said to be unguarded; that does not stop a pass (the overall cells carry the power).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import plural
from ..inputs.evalfile import GateSettings
from ..records import Manifest, Run, load_run
from ..records.folder import BASELINE_FILES
from ..records.load import budget_order, failed, prompted, summaries
from ..records.schema import METRICS, variant
from .compare import Comparison, pair_units, sensitivity, units
from .stats import MIN_CLUSTERS, minimum_detectable_drop

EXIT_PASS, EXIT_CANNOT_JUDGE, EXIT_REGRESSION = 0, 1, 100
ALL_BUDGETS = "all"


class CannotJudge(Exception):
    """The gate has no sound basis for a verdict; the message says why."""


class Outcome(StrEnum):
    """What a cell, a kind guard, a summary check or the whole gate decided."""

    PASS = "pass"
    FAIL = "FAIL"
    CANNOT_JUDGE = "cannot judge"  # could not be tested at the gate's margin: no pass
    UNGUARDED = "unguarded"  # a kind guard the eval cannot test: it blocks no pass


EXIT_CODES = {Outcome.PASS: EXIT_PASS, Outcome.FAIL: EXIT_REGRESSION, Outcome.CANNOT_JUDGE: EXIT_CANNOT_JUDGE}


@dataclass(frozen=True)
class Result:
    """An outcome with its reasons; its text ("FAIL: why", "cannot judge: why", "pass") is how every
    renderer shows it."""

    outcome: Outcome
    reasons: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.outcome}: {'; '.join(self.reasons)}" if self.reasons else str(self.outcome)


def decide(failures: Iterable[str], untested: str | None, guard: bool = False) -> Result:
    """The one rule: anything failed fails; else what could not be tested cannot pass (a kind guard's
    is unguarded instead, which blocks no pass); else it passes."""
    failed = tuple(failures)
    if failed:
        return Result(Outcome.FAIL, failed)
    if untested:
        return Result(Outcome.UNGUARDED if guard else Outcome.CANNOT_JUDGE, (untested,))
    return Result(Outcome.PASS)


@dataclass(kw_only=True)
class Cell:
    metric: str
    variant: str  # the gated variant, named as in every table (`schema.variant`: "summary: seed")
    baseline_variant: str
    budget: str
    comparison: Comparison
    error_rate: float
    detectable_drop: float | None = None  # from the baseline; None: too few scenarios
    failures: list[str] = field(default_factory=list)
    untested: str | None = None  # why this cell cannot pass: too few scenarios, or too little power
    strategy: str = "summary"
    prompt_id: str = ""  # the prompt ids behind `prompt` and `baseline_prompt`
    baseline_prompt_id: str = ""
    paired_because: str = ""  # why the candidate is compared with this baseline prompt (`resolve_against`)
    kind: str | None = None  # a kind guard's kind of fact; None: every fact

    @property
    def scope(self) -> str:
        return "all budgets" if self.budget == ALL_BUDGETS else f"budget {self.budget}"

    @property
    def name(self) -> str:
        of = f" of {self.kind}" if self.kind else ""
        return f"{self.metric}{of}: {self.variant} @ {self.scope}"

    @property
    def result(self) -> Result:
        return decide(self.failures, self.untested, guard=self.kind is not None)


@dataclass
class SummaryCheck:
    """A check of a prompt's summaries against the baseline's: their size, or how often they stop at
    the token cap (keeping facts by not compressing is no gain)."""

    name: str  # "summary size: seed"
    baseline: str
    candidate: str
    failure: str | None = None  # why it fails; None: it passes
    unchecked: str | None = None  # why it could not be checked (the baseline did not record it)

    @property
    def result(self) -> Result:
        return decide([self.failure] if self.failure else [], self.unchecked)


@dataclass
class Verdict:
    """The gate's decision on a candidate: a cell per prompt and budget (and over all budgets), the
    summary checks (size, cap), the per-kind guards, and why it cannot pass if it cannot
    (`exit_code`: 0 pass, 100 regression, 1 cannot judge)."""

    cells: list[Cell]
    checks: list[SummaryCheck] = field(default_factory=list)
    cannot_judge: list[str] = field(default_factory=list)  # reasons the whole gate cannot pass
    kinds: list[Cell] = field(default_factory=list)  # the kind guards: they can fail a prompt, never block a pass

    @property
    def outcome(self) -> Outcome:
        """Fail when anything fails; else cannot judge when anything could not be judged (an
        unguarded kind excepted); else pass."""
        results = [c.result for c in self.cells] + [c.result for c in self.checks] + [c.result for c in self.kinds]
        outcomes = {r.outcome for r in results}
        if Outcome.FAIL in outcomes:
            return Outcome.FAIL
        return Outcome.CANNOT_JUDGE if self.cannot_judge or Outcome.CANNOT_JUDGE in outcomes else Outcome.PASS

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]


def load_baseline(path: Path) -> Run:
    if not (path / "manifest.json").is_file() or not any((path / f).is_file() for f in BASELINE_FILES[:2]):
        raise CannotJudge(f"no baseline at {path}: record one with `harness baseline RUN_DIR --name {path.name}`")
    return load_run(path)


def baseline_prompts(baseline: Run) -> list[str]:
    """The baseline's summary prompts in its eval's order, the keeps-nothing control left out."""
    # A manifest without its prompts: whatever prompts the data holds.
    listed = [p.id for p in baseline.manifest.prompts] or baseline.prompts()
    return [p for p in listed if p != baseline.manifest.control_prompt]


def resolve_against(prompt: str, baseline: Run, against: str | None) -> tuple[str, str]:
    """The baseline prompt a candidate prompt is compared with, and why: `--against`, else the prompt
    of the same id, else the baseline's first prompt. Never the baseline's keeps-nothing control: a
    candidate that shares the control's name is compared with the first prompt, and says so.
    Checked before a candidate run starts."""
    available, control = baseline_prompts(baseline), baseline.manifest.control_prompt
    if against:
        if against == control:
            raise CannotJudge(
                f"{against!r} is the baseline's keeps-nothing control: a candidate is compared with a "
                f"summary prompt ({', '.join(available)}), never with the control"
            )
        if against not in available:
            raise CannotJudge(f"the baseline has no prompt {against!r} (it has {', '.join(available)})")
        return against, "--against"
    if prompt in available:
        return prompt, "the same id"
    if not available:
        raise CannotJudge("the baseline has no summary prompts")
    if prompt == control:
        return available[0], (
            f"the baseline's first prompt: {prompt!r} is the baseline's keeps-nothing control's "
            "id, and a candidate is never compared with the control"
        )
    return available[0], "the baseline's first prompt (no prompt of the same id)"


def _errors(run: Run, metric: str, strategy: str, prompt: str) -> float:
    data = prompted(run.rows(metric))
    rows = data[(data["strategy"] == strategy) & (data["prompt"] == prompt)]
    return float(failed(rows, metric).mean()) if len(rows) else 0.0


def _summaries(run: Run, strategy: str, prompt: str) -> pd.DataFrame:
    made = prompted(summaries(run.compactions))
    return made[(made["strategy"] == strategy) & (made["prompt"] == prompt)]


def size_check(baseline: pd.DataFrame, candidate: pd.DataFrame, name: str, growth: float) -> SummaryCheck | None:
    """Fails when the candidate's median summary is more than `growth` longer than the baseline's."""
    if baseline.empty or candidate.empty:
        return None
    before, after = float(baseline["output_tokens"].median()), float(candidate["output_tokens"].median())
    check = SummaryCheck(f"summary size: {name}", f"median {before:.0f} tokens", f"median {after:.0f} tokens")
    if before and after > (1 + growth) * before:
        check.failure = (
            f"median summary {after:.0f} tokens against the baseline's {before:.0f} "
            f"(+{after / before - 1:.0%}, more than +{growth:.0%})"
        )
    return check


def cap_check(baseline: pd.DataFrame, candidate: pd.DataFrame, name: str, margin: float) -> SummaryCheck | None:
    """Fails when the candidate's summaries stop at their token cap more often than the baseline's,
    by more than `margin` (a share): a prompt that copies the conversation runs into the cap."""
    if baseline.empty or candidate.empty:
        return None
    before, after = baseline["capped"].dropna(), candidate["capped"].dropna()
    if after.empty:
        return None
    shown = SummaryCheck(
        f"summary cap: {name}",
        "not recorded" if before.empty else f"{before.mean():.0%} of {len(before)} at the cap",
        f"{after.mean():.0%} of {len(after)} at the cap",
    )
    if before.empty:
        shown.unchecked = "the baseline does not record its summaries' stop reason: record a new baseline"
    elif after.mean() - before.mean() > margin:
        shown.failure = (
            f"{after.mean():.0%} of the summaries stop at the token cap against the baseline's "
            f"{before.mean():.0%} (more than +{margin:.0%})"
        )
    return shown


def _metrics(baseline: Run, candidate: Run) -> list[str]:
    measured = [m for m in METRICS if not baseline.rows(m).empty and not candidate.rows(m).empty]
    if not measured:
        raise CannotJudge("the baseline and the candidate measured nothing in common (retention or recall)")
    return measured


def sensitivity_problem(baseline: Run, alpha: float) -> str | None:
    """Why the baseline shows the model ignoring its summary prompt, or None when it does not
    (or when the baseline has no keeps-nothing control to tell)."""
    control = baseline.manifest.control_prompt
    if not control or baseline.retention.empty:
        return None
    paired = [
        c
        for prompt, c in sensitivity(prompted(baseline.retention), control).items()
        if prompt in baseline_prompts(baseline) and c.n
    ]
    if not paired:
        return None
    best = max(paired, key=lambda c: c.difference)
    if best.p_value is not None and best.p_value < alpha and best.difference > 0:
        return None
    return (
        f"on this model the summary prompt barely matters: in the baseline the best prompt ({best.label_b}) "
        f"retains {best.rate_b:.0%} against {best.rate_a:.0%} for the keeps-nothing control "
        f"({best.test.describe()}); prompt changes cannot be judged on it: gate on a model that follows "
        "its summary prompt"
    )


def _check_comparable(baseline: Run, candidate: Run) -> None:
    """Raise CannotJudge unless both runs are finished and measured the same model the same way."""
    for side, run in (("baseline", baseline), ("candidate", candidate)):
        if run.manifest.unfinished:
            raise CannotJudge(f"the {side} run is unfinished: resume it (`harness run EVAL --resume RUN_DIR`) first")
    if baseline.manifest.model != candidate.manifest.model:
        raise CannotJudge(
            f"the baseline was recorded on {baseline.manifest.model}, the candidate ran on "
            f"{candidate.manifest.model}: gate against a baseline of the same model"
        )
    settings: dict[str, Callable[[Manifest], object]] = {
        "sampling": lambda about: about.sampling,
        "summary layout": lambda about: about.setting("summary_layout"),
    }
    for setting, of in settings.items():
        if of(baseline.manifest) != of(candidate.manifest):
            raise CannotJudge(
                f"the baseline was recorded with {setting} {of(baseline.manifest)!r}, the candidate ran "
                f"with {of(candidate.manifest)!r}: they measure different models; record a new baseline"
            )


def _judge(cell: Cell, settings: GateSettings, kinds: int = 0) -> None:
    """Fill a cell's failures, and why it cannot pass when it could not be tested at the gate's margin.
    One rule for every cell, per budget and over all budgets, and for each kind guard (`kinds`: how
    many kinds are guarded, which divides alpha and holds the kind to `max_kind_drop`): the same
    evidence gets one verdict."""
    comparison, metric = cell.comparison, cell.metric
    guard = cell.kind is not None
    max_drop, alpha = (settings.max_kind_drop, settings.alpha / kinds) if guard else (settings.max_drop, settings.alpha)
    drop, p = -comparison.difference, comparison.p_value
    if not guard and comparison.rate_b < settings.floor:
        cell.failures.append(f"{metric} {comparison.rate_b:.1%} is under the floor {settings.floor:.1%}")
    if comparison.n and drop > max_drop and p is not None and p < alpha:
        cell.failures.append(
            f"{cell.kind} {metric} dropped {drop:.1%} (more than {max_drop:.1%}), significant: p = {p:.3g} < "
            f"{alpha:.3g} ({settings.alpha:g} over {kinds} kinds)"
            if guard
            else f"{metric} dropped {drop:.1%} (more than {max_drop:.1%}), significant: p = {p:.3g} < {alpha}"
        )
    if guard and cell.failures:
        return
    if comparison.test.judgement is None:
        under = "" if guard else f", under {MIN_CLUSTERS}"
        cell.untested = f"too few scenarios to test ({plural(comparison.test.clusters, 'scenario')}{under})"
    elif guard and comparison.rate_a <= max_drop:
        cell.untested = f"the baseline keeps {comparison.rate_a:.0%}, so it cannot lose more than {max_drop:.0%}"
    elif guard and (cell.detectable_drop is None or cell.detectable_drop > comparison.rate_a):
        cell.untested = (
            f"detects {_detectable(cell.detectable_drop, '.0%')} at alpha {alpha:.3g}, not the baseline's "
            f"{comparison.rate_a:.0%} it could lose: add scenarios"
        )
    elif not guard and (cell.detectable_drop is None or cell.detectable_drop > max_drop):
        cell.untested = (
            f"this eval can detect {_detectable(cell.detectable_drop, '.1%')} "
            f"(alpha {settings.alpha:g}, power {settings.power:.0%}), not the "
            f"{max_drop:.1%} the gate allows; add facts, scenarios or repeats"
        )


def _detectable(drop: float | None, spec: str) -> str:
    """What a check can detect, in words: the smallest drop, or nothing when the baseline is too small to size it."""
    return f"only drops of {drop:{spec}} or more" if drop is not None else "nothing: the baseline has too few scenarios"


def evaluate(baseline: Run, candidate: Run, settings: GateSettings, against: str | None = None) -> Verdict:
    _check_comparable(baseline, candidate)
    verdict = Verdict([])
    control = candidate.manifest.control_prompt
    for metric in _metrics(baseline, candidate):
        base, cand = units(prompted(baseline.rows(metric)), metric), units(prompted(candidate.rows(metric)), metric)
        if cand.empty:
            raise CannotJudge(f"the candidate run has no summary-strategy {metric} to gate")
        # Each prompt-taking strategy (ours, or a custom one that sweeps prompts) is gated prompt by
        # prompt against the same strategy in the baseline.
        gated = sorted({(s, p) for s, p in zip(cand["strategy"], cand["prompt"]) if p != control})
        for strategy, prompt in gated:
            base_prompt, because = resolve_against(prompt, baseline, against)
            mine = cand[(cand["strategy"] == strategy) & (cand["prompt"] == prompt)]
            theirs = base[(base["strategy"] == strategy) & (base["prompt"] == base_prompt)]
            for budget in sorted(mine["budget"].unique(), key=budget_order) + [ALL_BUDGETS]:
                rows = mine if budget == ALL_BUDGETS else mine[mine["budget"] == budget]
                reference = theirs if budget == ALL_BUDGETS else theirs[theirs["budget"] == budget]
                pairing = Pairing(metric, strategy, prompt, base_prompt, because, budget)
                cell = _cell(pairing, reference, rows, _errors(candidate, metric, strategy, prompt), settings)
                verdict.cells.append(cell)
                if budget == ALL_BUDGETS:
                    verdict.kinds += kind_guards(theirs, mine, cell, settings)
    for cell in {c.variant: c for c in verdict.cells}.values():
        before = _summaries(baseline, cell.strategy, cell.baseline_prompt_id)
        after = _summaries(candidate, cell.strategy, cell.prompt_id)
        verdict.checks += [
            check
            for check in (
                size_check(before, after, cell.variant, settings.max_summary_growth),
                cap_check(before, after, cell.variant, settings.max_cap_increase),
            )
            if check is not None
        ]
    if problem := sensitivity_problem(baseline, settings.alpha):
        verdict.cannot_judge.append(problem)
    return verdict


@dataclass(frozen=True)
class Pairing:
    """Which candidate variant a cell compares with which baseline variant, on what, and why."""

    metric: str
    strategy: str
    prompt: str
    baseline_prompt: str
    because: str
    budget: str


def _cell(
    pairing: Pairing, reference: pd.DataFrame, rows: pd.DataFrame, error_rate: float, settings: GateSettings
) -> Cell:
    """One judged cell: the candidate's units against the baseline's, paired; cannot judge when
    none pair or too many failed with errors."""
    name, base_name = variant(pairing.strategy, pairing.prompt), variant(pairing.strategy, pairing.baseline_prompt)
    comparison = pair_units(reference, rows, f"baseline {base_name}", f"candidate {name}", pairing.metric)
    if comparison.n == 0:
        raise CannotJudge(
            f"no {pairing.metric} units pair up for {name!r} at budget {pairing.budget}: "
            "the baseline does not cover this eval; record a new one"
        )
    drop = minimum_detectable_drop(reference["value"], reference["scenario"], settings.alpha, settings.power)
    cell = Cell(
        metric=pairing.metric,
        variant=name,
        baseline_variant=base_name,
        budget=pairing.budget,
        comparison=comparison,
        error_rate=error_rate,
        detectable_drop=drop,
        strategy=pairing.strategy,
        prompt_id=pairing.prompt,
        baseline_prompt_id=pairing.baseline_prompt,
        paired_because=pairing.because,
    )
    if cell.error_rate > settings.max_error_rate:
        raise CannotJudge(
            f"{cell.name}: {cell.error_rate:.0%} of units failed with errors "
            f"(limit {settings.max_error_rate:.0%}); see the run's records"
        )
    _judge(cell, settings)
    return cell


def kind_guards(theirs: pd.DataFrame, mine: pd.DataFrame, overall: Cell, settings: GateSettings) -> list[Cell]:
    """One guard per kind of fact in the baseline's units of a prompt (`theirs`), over all budgets;
    `overall` is the prompt's cell over all budgets, whose names and pairing the guards share."""
    kinds = sorted(set(theirs["kind"].dropna()))
    if len(kinds) < 2:  # one kind: the overall cell says it all
        return []
    alpha = settings.alpha / len(kinds)
    guards = []
    for kind in kinds:
        reference, rows = theirs[theirs["kind"] == kind], mine[mine["kind"] == kind]
        comparison = pair_units(reference, rows, overall.comparison.label_a, overall.comparison.label_b, overall.metric)
        guard = Cell(
            metric=overall.metric,
            variant=overall.variant,
            baseline_variant=overall.baseline_variant,
            budget=ALL_BUDGETS,
            comparison=comparison,
            error_rate=overall.error_rate,
            detectable_drop=minimum_detectable_drop(reference["value"], reference["scenario"], alpha, settings.power),
            strategy=overall.strategy,
            prompt_id=overall.prompt_id,
            baseline_prompt_id=overall.baseline_prompt_id,
            paired_because=overall.paired_because,
            kind=kind,
        )
        _judge(guard, settings, len(kinds))
        guards.append(guard)
    return guards


def detectable_drops(baseline: Run, settings: GateSettings) -> dict[str, float | None]:
    """Per metric the baseline measured: the smallest drop of its first prompt, over all budgets,
    that the gate detects at `alpha` with `power`."""
    drops = {}
    for metric in METRICS:
        measured = units(prompted(baseline.rows(metric)), metric)
        if measured.empty:
            continue
        mine = measured[measured["prompt"] == baseline_prompts(baseline)[0]]
        drops[metric] = minimum_detectable_drop(mine["value"], mine["scenario"], settings.alpha, settings.power)
    return drops


def manifest_settings(about: Manifest, **overrides: Any) -> GateSettings:
    """The gate's thresholds a run was made with (its eval file's `gate:`; defaults for older runs),
    each of `overrides` (a flag's, an API caller's) in place of the file's, validated as the file's are."""
    return GateSettings(**{**about.setting("gate", {}), **overrides})
