"""A run's report in every format, from the same sections (`sections.TABLES`): text for the
terminal, markdown (fits a pull-request comment or $GITHUB_STEP_SUMMARY), CSV of the records, and
one self-contained HTML page with each plot (PNG, embedded) under its table and the fact explorer.
Also the index of runs (`harness runs`)."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import InputError, plural
from ..records import Run, load_run
from ..records.folder import run_folders
from .comparisons import best_variant, ranked
from .explorer import explorer_data, explorer_html
from .render import html_table, markdown_table
from .sections import tables
from .tables import next_steps

if TYPE_CHECKING:  # matplotlib is imported when a plot is drawn
    from matplotlib.figure import Figure


def _headline(run: Run) -> str:
    about = run.manifest
    played = f" (first {plural(turns, 'turn')} of each)" if (turns := about.setting("max_turns")) else ""
    scenarios = pd.concat([run.records["scenario"], run.retention["scenario"]]).nunique()
    partial = (
        "UNFINISHED RUN, the figures cover only its finished cases (`harness run EVAL --resume RUN_DIR` completes it): "
        if about.unfinished
        else ""
    )
    lines = [
        f"{partial}eval {about.name} on {about.model}: {plural(len(run.records), 'probe')}, "
        f"{plural(len(run.retention), 'retention check')}, {plural(scenarios, 'scenario')}{played}; "
        "retention = for each fact of each case, the share of its summaries that state it; recall = probe "
        "answers that state it (errors excluded; 95% Wilson interval, each fact counted once)"
    ]
    if about.judge:
        judged = int((run.records["judge"] == True).sum())  # noqa: E712 (a column that may hold NaN)
        calibration = about.judge_calibration
        trust = (
            f"on labelled answers it accepts wrong ones {calibration['accepts_wrong']} and rejects right ones "
            f"{calibration['rejects_right']}"
            if calibration
            else "not measured on labelled answers"
        )
        lines.append(
            f"Judge {about.judge}: {plural(judged, 'answer')} the matcher scored `forgot` judged recalled; {trust}"
        )
    if best := best_variant(run):
        lines.append(best)
    return "\n".join(lines)


def text_report(run_dir: str | Path) -> str:
    run = load_run(run_dir)
    sections = [
        _headline(run),
        *(f"{table.title}\n{data.to_string()}" for table, data in tables(run)),
        f"Run folder: {run_dir}",
    ]
    return "\n\n".join(sections)


def _title(run: Run) -> str:
    """What the run measured: recall needs probes; without them it measured what summaries retained."""
    return f"Compaction {'recall' if not run.records.empty else 'retention'}: {run.manifest.name}"


def markdown_report(run_dir: str | Path) -> str:
    return _markdown(load_run(run_dir))


def _markdown(run: Run) -> str:
    parts = [f"### {_title(run)}", _headline(run)]
    for table, data in tables(run):
        parts += [f"**{table.title}**", markdown_table(data)]
    return "\n\n".join(parts) + "\n"


def _png(figure: Figure) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode()


def html_report(run_dir: str | Path) -> str:
    return _html(load_run(run_dir))


def _html(run: Run) -> str:
    e = html.escape
    name = e(run.manifest.name)
    sections = [f"<h1>{e(_title(run))}</h1>", *(f"<p>{e(line)}</p>" for line in _headline(run).splitlines())]
    for table, data in tables(run):
        sections += [f"<h2>{e(table.title)}</h2>", f'<div class="wide">{html_table(data)}</div>']
        if table.plot and (figure := table.plot(run)) is not None:
            sections.append(f'<img alt="{e(table.title)}" src="data:image/png;base64,{_png(figure)}">')
    if not run.actions.empty:  # the three next steps side by side, at every cut of every case
        sections += [
            f'<h2 id="steps">Next steps at each cut ({plural(len(run.actions), "cut")})</h2>',
            f'<div class="wide">{html_table(next_steps(run.actions))}</div>',
        ]
    if not run.records.empty:  # a run without probes has no answers to explore
        sections.append(explorer_html(explorer_data(run.records, run.compactions, run.retention, run.turns)))
    return html_page(f"{name} report", "".join(sections))


def html_page(title: str, body: str) -> str:
    """A self-contained HTML page (`title` already escaped) around sections of a report."""
    style = (
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
        "table.t{border-collapse:collapse;font-size:13px;margin-bottom:1em}"
        "table.t td,table.t th{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}"
        "img{max-width:100%}p{overflow-wrap:anywhere}.wide{overflow-x:auto}"
        "pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{style}</style></head><body>{body}</body></html>"
    )


def run_index(runs: Path) -> pd.DataFrame:
    """One row per run folder, newest first: eval, model, when, status, size, and its best variant."""
    rows: dict[str, dict[str, Any]] = {}
    for folder in run_folders(runs):
        try:
            run = load_run(folder)
        except (InputError, FileNotFoundError) as exc:
            rows[folder.name] = {"eval": "?", "status": f"unreadable: {exc}"}
            continue
        metric, units = ranked(run)
        best = next(iter(units), None)
        rows[folder.name] = {
            "eval": run.manifest.name,
            "model": run.manifest.model.split(":")[0],
            "started": run.manifest.started or "",
            "status": "unfinished" if run.manifest.unfinished else "finished",
            "probes": len(run.records),
            "retention checks": len(run.retention),
            "best": f"{best} {metric} {units[best]['value'].mean():.0%}" if best else "",
            "size": f"{sum(f.stat().st_size for f in folder.rglob('*') if f.is_file()) / 1e6:.1f} MB",
        }
    return pd.DataFrame.from_dict(rows, orient="index").fillna("")


def write_report(run_dir: str | Path, out_dir: str | Path | None = None) -> dict[str, Path]:
    """Write report.md, records.csv and report.html; return their paths."""
    out = Path(out_dir or Path(run_dir) / "report")
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / "report.md", "csv": out / "records.csv", "html": out / "report.html"}
    run = load_run(run_dir)
    paths["markdown"].write_text(_markdown(run), encoding="utf-8")
    run.records.to_csv(paths["csv"], index=False)
    paths["html"].write_text(_html(run), encoding="utf-8")
    return paths
