"""The gate's verdict, written out: a markdown summary (printed, and appended to
$GITHUB_STEP_SUMMARY) and a JUnit file with one test case per metric x prompt x budget."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from ..analysis.gate import ALL_BUDGETS, EXIT_CANNOT_JUDGE, EXIT_PASS, EXIT_REGRESSION, Verdict
from ..inputs.evalfile import GateSettings
from .comparisons import test_cells
from .render import markdown_table


def markdown_summary(verdict: Verdict, settings: GateSettings) -> str:
    rows = {}
    for c in verdict.cells:
        t = c.comparison.test
        rows[c.name] = {
            "baseline": f"{t.mean_a:.0%}", "candidate": f"{t.mean_b:.0%}",
            **test_cells(t, "difference (95% CI)", ".0%", "too few scenarios"),
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
