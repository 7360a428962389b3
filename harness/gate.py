"""Gating summary-prompt changes: a candidate run against a committed baseline run.

A cell (summary prompt x budget, plus each prompt over all budgets) fails when recall drops by
more than `max_drop` *and* the paired test says the drop is significant at `alpha`, or when
recall falls under `floor`. The harness cannot judge (exit 1) when the baseline is missing or
was recorded on another model, when no probes pair up, or when errors exceed `max_error_rate`.
"""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .compare import Comparison, pair
from .config import GateSettings
from .report import budget_order, load_manifest, load_records, markdown_table

EXIT_PASS, EXIT_CANNOT_JUDGE, EXIT_REGRESSION = 0, 1, 100
ALL_BUDGETS = "all"


class CannotJudge(Exception):
    """The gate has no sound basis for a verdict; the message says why."""


@dataclass
class Cell:
    prompt: str
    baseline_prompt: str
    budget: str
    comparison: Comparison
    error_rate: float
    failures: list[str] = field(default_factory=list)

    @property
    def scope(self) -> str:
        return "all budgets" if self.budget == ALL_BUDGETS else f"budget {self.budget}"

    @property
    def name(self) -> str:
        return f"{self.prompt} @ {self.scope}"


def record_baseline(run_dir: Path, baselines: Path, name: str) -> Path:
    """Copy what the gate needs from a finished run: its records and manifest."""
    target = baselines / name
    target.mkdir(parents=True, exist_ok=True)
    for file in ("records.jsonl", "manifest.json"):
        shutil.copyfile(run_dir / file, target / file)
    return target


def load_baseline(path: Path) -> tuple[pd.DataFrame, dict]:
    if not (path / "records.jsonl").is_file() or not (path / "manifest.json").is_file():
        raise CannotJudge(f"no baseline at {path}: record one with `harness baseline RUN_DIR --name {path.name}`")
    return load_records(path), load_manifest(path)


def _baseline_prompt(prompt: str, available: list[str], against: str | None) -> str:
    if against:
        if against not in available:
            raise CannotJudge(f"the baseline has no prompt {against!r} (it has {', '.join(available)})")
        return against
    if prompt in available:
        return prompt
    if len(available) == 1:
        return available[0]
    raise CannotJudge(f"candidate prompt {prompt!r} is not in the baseline, which has several "
                      f"({', '.join(available)}): name one with --against")


def evaluate(baseline: pd.DataFrame, baseline_about: dict, candidate: pd.DataFrame, candidate_about: dict,
             settings: GateSettings, against: str | None = None) -> list[Cell]:
    if baseline_about["model"] != candidate_about["model"]:
        raise CannotJudge(f"the baseline was recorded on {baseline_about['model']}, the candidate ran on "
                          f"{candidate_about['model']}: gate against a baseline of the same model")
    base = baseline[baseline["strategy"] == "summary"]
    cand = candidate[candidate["strategy"] == "summary"]
    if cand.empty:
        raise CannotJudge("the candidate run has no summary-strategy records to gate")
    cells = []
    for prompt in sorted(cand["prompt"].unique()):
        base_prompt = _baseline_prompt(prompt, sorted(base["prompt"].unique()), against)
        mine, theirs = cand[cand["prompt"] == prompt], base[base["prompt"] == base_prompt]
        for budget in sorted(mine["budget"].unique(), key=budget_order) + [ALL_BUDGETS]:
            rows = mine if budget == ALL_BUDGETS else mine[mine["budget"] == budget]
            reference = theirs if budget == ALL_BUDGETS else theirs[theirs["budget"] == budget]
            comparison = pair(reference, rows, f"baseline {base_prompt}", f"candidate {prompt}")
            if comparison.n == 0:
                raise CannotJudge(f"no probes pair up for prompt {prompt!r} at budget {budget}: "
                                  "the baseline does not cover this eval; record a new one")
            cell = Cell(prompt, base_prompt, budget, comparison, float((rows["verdict"] == "error").mean()))
            if cell.error_rate > settings.max_error_rate:
                raise CannotJudge(f"{cell.name}: {cell.error_rate:.0%} of probes failed with errors "
                                  f"(limit {settings.max_error_rate:.0%}); see the run's records")
            drop = comparison.recall_a - comparison.recall_b
            if comparison.recall_b < settings.floor:
                cell.failures.append(f"recall {comparison.recall_b:.1%} is under the floor {settings.floor:.1%}")
            if drop > settings.max_drop and comparison.p_value < settings.alpha:
                cell.failures.append(f"recall dropped {drop:.1%} (more than {settings.max_drop:.1%}), "
                                     f"significant: p = {comparison.p_value:.3g} < {settings.alpha}")
            cells.append(cell)
    return cells


def exit_code(cells: list[Cell]) -> int:
    return EXIT_REGRESSION if any(c.failures for c in cells) else EXIT_PASS


def markdown_summary(cells: list[Cell], settings: GateSettings) -> str:
    rows = {}
    for c in cells:
        low, high = c.comparison.interval()
        rows[c.name] = {
            "baseline": f"{c.comparison.recall_a:.0%}", "candidate": f"{c.comparison.recall_b:.0%}",
            "difference (95% CI)": f"{c.comparison.difference:+.0%} ({low:+.0%} to {high:+.0%})",
            "p (McNemar)": f"{c.comparison.p_value:.3g}", "pairs": c.comparison.n,
            "lost / gained": f"{len(c.comparison.lost)} / {len(c.comparison.gained)}",
            "result": "FAIL: " + "; ".join(c.failures) if c.failures else "pass",
        }
    verdict = "regression" if exit_code(cells) == EXIT_REGRESSION else "pass"
    parts = [f"### Summary-prompt gate: {verdict}",
             f"Fails when recall drops more than {settings.max_drop:.0%} with p < {settings.alpha}, "
             f"or falls under {settings.floor:.0%}.",
             markdown_table(pd.DataFrame.from_dict(rows, orient="index"))]
    for c in cells:
        if c.budget == ALL_BUDGETS and len(c.comparison.lost):
            lost = c.comparison.lost
            parts.append(f"**Facts {c.prompt} lost against the baseline** ({len(lost)})\n\n" + "\n".join(
                f"- {r.scenario}/{r.fact} at {r.budget}: expected `{r.expected_a}`" for r in lost.head(30).itertuples()))
    return "\n\n".join(parts) + "\n"


def junit_xml(cells: list[Cell]) -> str:
    suite = ET.Element("testsuite", name="compaction-gate", tests=str(len(cells)),
                       failures=str(sum(bool(c.failures) for c in cells)))
    for c in cells:
        case = ET.SubElement(suite, "testcase", classname=f"prompt.{c.prompt}", name=c.scope)
        if c.failures:
            failure = ET.SubElement(case, "failure", message="; ".join(c.failures))
            failure.text = "\n".join(f"lost {r.scenario}/{r.fact} ({r.budget})" for r in c.comparison.lost.itertuples())
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def write_outputs(cells: list[Cell], settings: GateSettings, out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"junit": out_dir / "gate-junit.xml", "markdown": out_dir / "gate.md"}
    paths["junit"].write_text(junit_xml(cells), encoding="utf-8")
    paths["markdown"].write_text(markdown_summary(cells, settings), encoding="utf-8")
    return paths


def settings_with(settings: GateSettings, **overrides) -> GateSettings:
    return settings.model_copy(update={k: v for k, v in overrides.items() if v is not None})


def manifest_settings(about: dict) -> GateSettings:
    return GateSettings(**about["eval"].get("gate", {}))

