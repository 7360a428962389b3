"""Gating summary-prompt changes: a candidate run against a committed baseline run.

For each metric both runs measured (retention: do the summaries state the facts; recall: do the
probe answers), a cell (summary prompt x budget, plus each prompt over all budgets) fails when
the metric drops by more than `max_drop` *and* the paired test over scenarios says the drop is
significant at `alpha`, or when it falls under `floor`. A prompt also fails when its median
summary is more than `max_summary_growth` longer than the baseline's (keeping facts by not
compressing is no gain).

When nothing fails, the gate may still be unable to *pass* a candidate (exit 1, with the reason):
when the eval cannot detect a drop of `max_drop` (the minimum detectable drop at `power`, from
the baseline), or when the baseline shows that the model is not steered by its summary prompt
(its best prompt's retention is not significantly above the keeps-nothing control's). It also
cannot judge when the baseline is missing or from another model, when nothing pairs up, or when
errors exceed `max_error_rate`.
"""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from .compare import Comparison, pair_units, recall_units, retention_units, sensitivity
from .config import GateSettings
from .inputs import InputError, describe_error
from .records import METRICS, Manifest, Run, budget_order, failed, load_run, prompted, summaries
from .render import markdown_table
from .stats import minimum_detectable_drop

EXIT_PASS, EXIT_CANNOT_JUDGE, EXIT_REGRESSION = 0, 1, 100
ALL_BUDGETS = "all"
BASELINE_FILES = ("records.jsonl", "retention.jsonl", "compactions.jsonl", "manifest.json")


class CannotJudge(Exception):
    """The gate has no sound basis for a verdict; the message says why."""


def variant(strategy: str, prompt: str) -> str:
    """How a gated variant is named: the prompt for our summary strategy, else strategy:prompt."""
    return prompt if strategy == "summary" else f"{strategy}:{prompt}"


@dataclass
class Cell:
    metric: str
    prompt: str  # the gated variant (`variant`): a summary prompt, or a custom strategy's strategy:prompt
    baseline_prompt: str
    budget: str
    comparison: Comparison
    error_rate: float
    detectable_drop: float | None = None  # from the baseline; None: too few scenarios
    failures: list[str] = field(default_factory=list)
    strategy: str = "summary"
    prompt_id: str = ""  # the prompt ids behind `prompt` and `baseline_prompt`
    baseline_prompt_id: str = ""

    @property
    def scope(self) -> str:
        return "all budgets" if self.budget == ALL_BUDGETS else f"budget {self.budget}"

    @property
    def name(self) -> str:
        return f"{self.metric}: {self.prompt} @ {self.scope}"


@dataclass
class Verdict:
    cells: list[Cell]
    size_failures: dict[str, str] = field(default_factory=dict)  # prompt -> why
    cannot_judge: list[str] = field(default_factory=list)  # reasons the gate cannot pass

    @property
    def exit_code(self) -> int:
        if self.size_failures or any(c.failures for c in self.cells):
            return EXIT_REGRESSION
        return EXIT_CANNOT_JUDGE if self.cannot_judge else EXIT_PASS


def record_baseline(run_dir: Path, baselines: Path, name: str) -> Path:
    """Copy what the gate needs from a finished run: its records, retention, compactions and manifest."""
    target = baselines / name
    target.mkdir(parents=True, exist_ok=True)
    for file in BASELINE_FILES:
        if (run_dir / file).is_file():
            shutil.copyfile(run_dir / file, target / file)
    return target


def load_baseline(path: Path) -> Run:
    if not (path / "manifest.json").is_file() or not any((path / f).is_file() for f in BASELINE_FILES[:2]):
        raise CannotJudge(f"no baseline at {path}: record one with `harness baseline RUN_DIR --name {path.name}`")
    return load_run(path)


def baseline_prompts(baseline: Run) -> list[str]:
    """The baseline's summary prompts in its eval's order, the keeps-nothing control left out."""
    # A manifest without its prompts: whatever prompts the data holds.
    listed = [p.id for p in baseline.about.prompts] or baseline.prompts()
    return [p for p in listed if p != baseline.about.control_prompt]


def resolve_against(prompt: str, baseline: Run, against: str | None) -> str:
    """The baseline prompt a candidate prompt is compared with: `--against`, else the prompt of the
    same id, else the baseline's first prompt. Checked before a candidate run starts."""
    available = baseline_prompts(baseline)
    if against:
        if against not in available:
            raise CannotJudge(f"the baseline has no prompt {against!r} (it has {', '.join(available)})")
        return against
    if prompt in available or prompt == baseline.about.control_prompt:
        return prompt
    if not available:
        raise CannotJudge("the baseline has no summary prompts")
    return available[0]


def _units(run: Run, metric: str) -> pd.DataFrame:
    data = prompted(run.rows(metric))
    return retention_units(data) if metric == "retention" else recall_units(data)


def _errors(run: Run, metric: str, strategy: str, prompt: str) -> float:
    data = prompted(run.rows(metric))
    rows = data[(data["strategy"] == strategy) & (data["prompt"] == prompt)]
    return float(failed(rows, metric).mean()) if len(rows) else 0.0


def _median_summary_tokens(run: Run, strategy: str, prompt: str) -> float | None:
    made = prompted(summaries(run.compactions))
    mine = made[(made["strategy"] == strategy) & (made["prompt"] == prompt)]
    return float(mine["output_tokens"].median()) if len(mine) else None


def _metrics(baseline: Run, candidate: Run) -> list[str]:
    measured = [m for m in METRICS if not baseline.rows(m).empty and not candidate.rows(m).empty]
    if not measured:
        raise CannotJudge("the baseline and the candidate measured nothing in common (retention or recall)")
    return measured


def sensitivity_problem(baseline: Run, alpha: float) -> str | None:
    """Why the baseline shows the model ignoring its summary prompt, or None when it does not
    (or when the baseline has no keeps-nothing control to tell)."""
    control = baseline.about.control_prompt
    if not control or baseline.retention.empty:
        return None
    paired = [c for prompt, c in sensitivity(prompted(baseline.retention), control).items()
              if prompt in baseline_prompts(baseline) and c.n]
    if not paired:
        return None
    best = max(paired, key=lambda c: c.difference)
    if best.p_value is not None and best.p_value < alpha and best.difference > 0:
        return None
    return (f"on this model the summary prompt barely matters: in the baseline the best prompt ({best.label_b}) "
            f"retains {best.recall_b:.0%} against {best.recall_a:.0%} for the keeps-nothing control "
            f"({best.test.describe()}); prompt changes cannot be judged on it: gate on a model that follows "
            "its summary prompt")


def evaluate(baseline: Run, candidate: Run, settings: GateSettings, against: str | None = None) -> Verdict:
    for side, run in (("baseline", baseline), ("candidate", candidate)):
        if run.about.unfinished:
            raise CannotJudge(f"the {side} run is unfinished: resume it (`harness run EVAL --resume RUN_DIR`) first")
    if baseline.about.model != candidate.about.model:
        raise CannotJudge(f"the baseline was recorded on {baseline.about.model}, the candidate ran on "
                          f"{candidate.about.model}: gate against a baseline of the same model")
    for setting, of in (("sampling", lambda about: about.sampling),
                        ("summary layout", lambda about: about.setting("summary_layout"))):
        if of(baseline.about) != of(candidate.about):
            raise CannotJudge(f"the baseline was recorded with {setting} {of(baseline.about)!r}, the candidate ran "
                              f"with {of(candidate.about)!r}: they measure different models; record a new baseline")
    verdict = Verdict([])
    control = candidate.about.control_prompt
    for metric in _metrics(baseline, candidate):
        base, cand = _units(baseline, metric), _units(candidate, metric)
        if cand.empty:
            raise CannotJudge(f"the candidate run has no summary-strategy {metric} to gate")
        # Each prompt-taking strategy (ours, or a custom one that sweeps prompts) is gated prompt by
        # prompt against the same strategy in the baseline.
        gated = sorted({(s, p) for s, p in zip(cand["strategy"], cand["prompt"]) if p != control})
        for strategy, prompt in gated:
            base_prompt = resolve_against(prompt, baseline, against)
            mine = cand[(cand["strategy"] == strategy) & (cand["prompt"] == prompt)]
            theirs = base[(base["strategy"] == strategy) & (base["prompt"] == base_prompt)]
            name, base_name = variant(strategy, prompt), variant(strategy, base_prompt)
            for budget in sorted(mine["budget"].unique(), key=budget_order) + [ALL_BUDGETS]:
                rows = mine if budget == ALL_BUDGETS else mine[mine["budget"] == budget]
                reference = theirs if budget == ALL_BUDGETS else theirs[theirs["budget"] == budget]
                comparison = pair_units(reference, rows, f"baseline {base_name}", f"candidate {name}", metric)
                if comparison.n == 0:
                    raise CannotJudge(f"no {metric} units pair up for {name!r} at budget {budget}: "
                                      "the baseline does not cover this eval; record a new one")
                cell = Cell(metric, name, base_name, budget, comparison, _errors(candidate, metric, strategy, prompt),
                            minimum_detectable_drop(reference["value"], reference["scenario"],
                                                    settings.alpha, settings.power),
                            strategy=strategy, prompt_id=prompt, baseline_prompt_id=base_prompt)
                if cell.error_rate > settings.max_error_rate:
                    raise CannotJudge(f"{cell.name}: {cell.error_rate:.0%} of units failed with errors "
                                      f"(limit {settings.max_error_rate:.0%}); see the run's records")
                drop = -comparison.difference
                if comparison.recall_b < settings.floor:
                    cell.failures.append(f"{metric} {comparison.recall_b:.1%} is under the floor {settings.floor:.1%}")
                if drop > settings.max_drop and comparison.p_value is not None and comparison.p_value < settings.alpha:
                    cell.failures.append(f"{metric} dropped {drop:.1%} (more than {settings.max_drop:.1%}), "
                                         f"significant: p = {comparison.p_value:.3g} < {settings.alpha}")
                verdict.cells.append(cell)
                if budget == ALL_BUDGETS and not cell.failures and (
                        cell.detectable_drop is None or cell.detectable_drop > settings.max_drop):
                    can = (f"only drops of {cell.detectable_drop:.1%} or more" if cell.detectable_drop is not None
                           else f"nothing: it has fewer than 5 scenarios ({comparison.test.clusters})")
                    verdict.cannot_judge.append(
                        f"{cell.name}: this eval can detect {can} (alpha {settings.alpha:g}, power "
                        f"{settings.power:.0%}), not the {settings.max_drop:.1%} the gate allows; add facts, "
                        "scenarios or repeats")
    for cell in {c.prompt: c for c in verdict.cells}.values():
        before = _median_summary_tokens(baseline, cell.strategy, cell.baseline_prompt_id)
        after = _median_summary_tokens(candidate, cell.strategy, cell.prompt_id)
        if before and after and after > (1 + settings.max_summary_growth) * before:
            verdict.size_failures[cell.prompt] = (
                f"median summary {after:.0f} tokens against the baseline's {before:.0f} "
                f"(+{after / before - 1:.0%}, more than +{settings.max_summary_growth:.0%})")
    if problem := sensitivity_problem(baseline, settings.alpha):
        verdict.cannot_judge.append(problem)
    return verdict


def detectable_drops(baseline: Run, settings: GateSettings) -> dict[str, float | None]:
    """Per metric the baseline measured: the smallest drop of its first prompt, over all budgets,
    that the gate detects at `alpha` with `power`."""
    drops = {}
    for metric in ("retention", "recall"):
        units = _units(baseline, metric)
        if units.empty:
            continue
        mine = units[units["prompt"] == baseline_prompts(baseline)[0]]
        drops[metric] = minimum_detectable_drop(mine["value"], mine["scenario"], settings.alpha, settings.power)
    return drops


def markdown_summary(verdict: Verdict, settings: GateSettings) -> str:
    rows = {}
    for c in verdict.cells:
        t = c.comparison.test
        rows[c.name] = {
            "baseline": f"{t.mean_a:.0%}", "candidate": f"{t.mean_b:.0%}",
            "difference (95% CI)": (f"{t.difference:+.0%} ({t.low:+.0%} to {t.high:+.0%})" if t.judged
                                    else f"{t.difference:+.0%} (too few scenarios)"),
            "p": f"{t.p_value:.3g}" if t.judged else "n/a",
            "pairs (scenarios)": f"{t.pairs} ({t.clusters})",
            "detectable drop": f"{c.detectable_drop:.0%}" if c.detectable_drop is not None else "n/a",
            "lost / gained": f"{len(c.comparison.lost)} / {len(c.comparison.gained)}",
            "result": "FAIL: " + "; ".join(c.failures) if c.failures else "pass",
        }
    titles = {EXIT_PASS: "pass", EXIT_REGRESSION: "regression", EXIT_CANNOT_JUDGE: "cannot judge"}
    parts = [f"### Summary-prompt gate: {titles[verdict.exit_code]}",
             f"Fails when retention or recall drops more than {settings.max_drop:.0%} with p < {settings.alpha} "
             f"(paired test over scenarios), falls under {settings.floor:.0%}, or when summaries grow more than "
             f"{settings.max_summary_growth:.0%}; cannot pass an eval unable to detect a {settings.max_drop:.0%} "
             f"drop with {settings.power:.0%} power.",
             markdown_table(pd.DataFrame.from_dict(rows, orient="index"))]
    parts += [f"**Summary size: {prompt} FAILS**: {why}" for prompt, why in verdict.size_failures.items()]
    parts += [f"**Cannot judge**: {why}" for why in verdict.cannot_judge]
    for c in verdict.cells:
        if c.budget == ALL_BUDGETS and len(c.comparison.lost):
            lost = c.comparison.lost
            parts.append(f"**Facts {c.prompt} kept less than the baseline ({c.metric}, {len(lost)})**\n\n" + "\n".join(
                f"- {r.scenario}/{r.fact} at {r.budget}: expected `{r.expected_a}`" for r in lost.head(30).itertuples()))
    return "\n\n".join(parts) + "\n"


def junit_xml(verdict: Verdict) -> str:
    cells = verdict.cells
    suite = ET.Element("testsuite", name="compaction-gate", tests=str(len(cells) + len(verdict.size_failures)),
                       failures=str(sum(bool(c.failures) for c in cells) + len(verdict.size_failures)))
    for c in cells:
        case = ET.SubElement(suite, "testcase", classname=f"{c.metric}.{c.prompt}", name=c.scope)
        if c.failures:
            failure = ET.SubElement(case, "failure", message="; ".join(c.failures))
            failure.text = "\n".join(f"lost {r.scenario}/{r.fact} ({r.budget})" for r in c.comparison.lost.itertuples())
    for prompt, why in verdict.size_failures.items():
        ET.SubElement(ET.SubElement(suite, "testcase", classname=f"size.{prompt}", name="summary size"),
                      "failure", message=why)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def write_outputs(verdict: Verdict, settings: GateSettings, out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"junit": out_dir / "gate-junit.xml", "markdown": out_dir / "gate.md"}
    paths["junit"].write_text(junit_xml(verdict), encoding="utf-8")
    paths["markdown"].write_text(markdown_summary(verdict, settings), encoding="utf-8")
    return paths


def settings_with(settings: GateSettings, **overrides) -> GateSettings:
    """The settings with the command line's flags applied, validated as the eval file's are."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return GateSettings(**{**settings.model_dump(), **given})
    except ValidationError as exc:
        error = exc.errors()[0]
        raise InputError(f"--{str(error['loc'][0]).replace('_', '-')}", describe_error(error)) from None


def manifest_settings(about: Manifest) -> GateSettings:
    return GateSettings(**about.setting("gate", {}))
