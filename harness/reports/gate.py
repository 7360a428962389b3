"""The gate's verdict, written out: a markdown summary (printed, and appended to
$GITHUB_STEP_SUMMARY) and a JUnit file with one test case per metric x prompt x budget."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from ..analysis.gate import ALL_BUDGETS, Cell, Outcome, Result, Verdict
from ..errors import plural
from ..inputs.evalfile import GateSettings
from ..records import load_manifest
from .comparisons import test_cells
from .render import markdown_table

LISTED = 30  # lost facts listed per cell in the markdown; all of them are in the JUnit file


def _cells_table(cells: list[Cell]) -> str:
    rows = {}
    for c in cells:
        t = c.comparison.test
        rows[c.name] = {
            "baseline": f"{t.mean_a:.0%}",
            "candidate": f"{t.mean_b:.0%}",
            **test_cells(t, "candidate minus baseline (95% CI)", ".0%", "too few scenarios"),
            "detectable drop": f"{c.detectable_drop:.1%}" if c.detectable_drop is not None else "n/a",
            "lost / gained": f"{len(c.comparison.lost)} / {len(c.comparison.gained)}",
            "result": str(c.result),
        }
    return markdown_table(pd.DataFrame.from_dict(rows, orient="index"))


def markdown_summary(verdict: Verdict, settings: GateSettings, run_dir: Path, baseline: Path) -> str:
    titles = {Outcome.PASS: "pass", Outcome.FAIL: "regression", Outcome.CANNOT_JUDGE: "cannot judge"}
    floor = f", falls under {settings.floor:.0%}" if settings.floor > 0 else ""
    parts = [
        f"### Summary-prompt gate: {titles[verdict.outcome]}",
        f"Fails when retention or recall drops more than {settings.max_drop:.0%} with p < {settings.alpha} "
        f"(paired test over scenarios){floor}, when summaries grow more than {settings.max_summary_growth:.0%}, "
        f"or when more of them stop at the token cap (by more than {settings.max_cap_increase:.0%}); cannot "
        f"pass an eval unable to detect a {settings.max_drop:.0%} drop with {settings.power:.0%} power.",
        _cells_table(verdict.cells),
    ]
    if verdict.kinds:
        parts += [
            f"Each kind of fact on its own: fails when it drops more than {settings.max_kind_drop:.0%}, "
            f"significantly at {settings.alpha} over the number of kinds; a kind the eval cannot test is "
            "unguarded, which does not stop a pass.",
            _cells_table(verdict.kinds),
        ]
    parts += [
        f"Candidate `{c.variant}` is compared with baseline `{c.baseline_variant}` ({c.paired_because})."
        for c in {c.variant: c for c in verdict.cells}.values()
    ]
    if reused := load_manifest(run_dir).answered_by_baseline:
        parts.append(
            f"{plural(reused, 'request')} of the candidate's run, identical to the baseline's (the same prompt, "
            "scenario, model, runtime and settings), were answered by the baseline's recorded responses: "
            "their facts repeat the baseline's figures, they are not measured again (`--no-cache` sends them)."
        )
    if verdict.checks:
        parts.append(
            markdown_table(
                pd.DataFrame.from_dict(
                    {
                        c.name: {"baseline": c.baseline, "candidate": c.candidate, "result": str(c.result)}
                        for c in verdict.checks
                    },
                    orient="index",
                )
            )
        )
    parts += [f"**{c.name[0].upper()}{c.name[1:]} FAILS**: {c.failure}" for c in verdict.checks if c.failure]
    parts += [f"**Cannot judge**: {why}" for why in verdict.cannot_judge]
    for c in verdict.cells:
        if c.budget == ALL_BUDGETS and len(c.comparison.lost):
            lost = c.comparison.lost
            more = f"\n- ... and {len(lost) - LISTED} more (all in gate-junit.xml)" if len(lost) > LISTED else ""
            parts.append(
                f"**Facts {c.variant} kept less than the baseline ({c.metric}, {len(lost)})**\n\n"
                + "\n".join(
                    f"- {r.scenario}/{r.fact} at {r.budget}: expected `{r.expected_a}`"
                    for r in lost.head(LISTED).itertuples()
                )
                + more
            )
    parts.append(
        f"Next: `harness report {run_dir}` shows every summary and answer (the fact explorer in "
        f"report.html); `harness compare {baseline} {run_dir}` lists each fact that flipped."
    )
    return "\n\n".join(parts) + "\n"


def junit_xml(verdict: Verdict) -> str:
    """One test case per cell, kind guard and summary check, each rendered from its `Result`."""
    cells, checks = [*verdict.cells, *verdict.kinds], verdict.checks
    results = [c.result for c in cells] + [c.result for c in checks]
    suite = ET.Element(
        "testsuite",
        name="compaction-gate",
        tests=str(len(results)),
        failures=str(sum(r.outcome == Outcome.FAIL for r in results)),
        skipped=str(sum(r.outcome in (Outcome.CANNOT_JUDGE, Outcome.UNGUARDED) for r in results)),
    )
    for c in cells:
        case = ET.SubElement(
            suite, "testcase", classname=f"{c.metric}.{c.variant}", name=f"{c.kind} @ {c.scope}" if c.kind else c.scope
        )
        failure = _junit_result(case, c.result)
        if failure is not None:
            failure.text = "\n".join(f"lost {r.scenario}/{r.fact} ({r.budget})" for r in c.comparison.lost.itertuples())
    for check in checks:
        case = ET.SubElement(suite, "testcase", classname=check.name.replace(": ", "."), name=check.name.split(":")[0])
        _junit_result(case, check.result)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def _junit_result(case: ET.Element, result: Result) -> ET.Element | None:
    """A failure or a skip under the test case, as its result says; the failure element, if any."""
    if result.outcome == Outcome.PASS:
        return None
    tag = "failure" if result.outcome == Outcome.FAIL else "skipped"
    return ET.SubElement(case, tag, message="; ".join(result.reasons))


def write_outputs(verdict: Verdict, settings: GateSettings, run_dir: Path, baseline: Path) -> dict[str, Path]:
    out_dir = run_dir / "gate"
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"junit": out_dir / "gate-junit.xml", "markdown": out_dir / "gate.md"}
    paths["junit"].write_text(junit_xml(verdict), encoding="utf-8")
    paths["markdown"].write_text(markdown_summary(verdict, settings, run_dir, baseline), encoding="utf-8")
    return paths
