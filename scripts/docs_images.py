"""Regenerate the documentation's pictures from real runs: docs/images/report.png (the top of the
HTML report: the headline, the tables, the paired comparison) from a run whose comparison is
decided, such as the agent gate's baseline run; docs/images/explorer.png (the fact explorer with
one fact opened) and docs/images/compaction.png (a diagram of one case's compaction drawn with
matplotlib: which turns were folded, which stayed verbatim, where each fact was) from a run with
probes, such as the one `make demo` writes. Screenshots in headless Chromium (Debian's; see
scripts/install-chromium.sh).

Usage: python scripts/docs_images.py [--report RUN_DIR] [--probes RUN_DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--virtual-time-budget=5000",
]
# Shows only the explorer, filtered to one fact with its first probe opened.
EXPLORER = """<script>window.addEventListener('load', () => {
  const select = document.getElementById('filter-fact');
  select.value = FACT; select.dispatchEvent(new Event('change'));
  const details = document.querySelector('#facts details');
  details.open = true; details.dispatchEvent(new Event('toggle'));
  document.body.replaceChildren(...['explorer', 'filters', 'shown', 'facts'].map(i => document.getElementById(i)));
});</script></body>"""


def shoot(page: Path, png: Path, size: str, work: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("chromium is not installed: run scripts/install-chromium.sh")
    subprocess.run(
        [
            chromium,
            *FLAGS,
            f"--user-data-dir={work / 'profile'}",
            f"--window-size={size}",
            f"--screenshot={png}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )


def pick_case(records: list[dict]) -> list[dict]:
    """The probes of the summary case that shows most: folded facts both kept and dropped, then the
    most facts (the seed prompt first, then by name, so the same run always gives the same case)."""
    cases: dict[str, list[dict]] = {}
    for record in records:
        if record["strategy"] == "summary" and record["compactions"] and record["location"]:
            cases.setdefault(record["case"], []).append(record)
    return max(
        cases.values(),
        key=lambda probes: (
            len({p["location"] for p in probes}),
            len(probes),
            probes[0]["prompt"] == "seed",
            probes[0]["case"],
        ),
    )


def draw_compaction(run_dir: Path, png: Path) -> None:
    """The scripted turns above; below, the history its probes saw: one summary in place of the
    folded turns, then the turns kept verbatim; each fact at its turn, and where it was at probe time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle

    from harness.records import read_jsonl

    probes = pick_case(read_jsonl(run_dir / "records.jsonl"))
    case = probes[0]["case"]
    compactions = [c for c in read_jsonl(run_dir / "compactions.jsonl") if c["case"] == case]
    scenario = next(s for s in read_jsonl(run_dir / "scenarios.jsonl") if s["scenario"] == probes[0]["scenario"])
    turns, verbatim = len(scenario["turns"]), compactions[-1]["first_verbatim_turn"]
    colour = {"summary": "#2e7d32", "gone": "#c62828", "verbatim": "#1565c0"}
    mark = {"summary": "✓ stated", "gone": "✗ dropped", "verbatim": "said again in a verbatim turn"}

    folded = [p for p in probes if p["planted_turn"] < verbatim]
    planted = {turn: [p for p in probes if p["planted_turn"] == turn] for turn in range(turns)}
    # Heights in text lines: above, a line a fact; below, a line a folded fact, two a verbatim one.
    upper = 0.55 + 0.3 * max(3, *map(len, planted.values()))
    lower = 0.55 + 0.3 * max([len(folded)] + [2 * len(planted[turn]) for turn in range(verbatim, turns)])
    top = upper + lower + 1.7  # the two rows, the arrow between them and the rows' titles
    figure, axes = plt.subplots(figsize=(9, 0.7 * top + 0.4))
    axes.set(xlim=(-0.2, turns + 0.2), ylim=(0, top))
    axes.axis("off")

    def box(x: float, y: float, width: float, height: float, face: str, text: str) -> None:
        axes.add_patch(Rectangle((x, y), width, height, facecolor=face, edgecolor="#424242"))
        axes.text(x + width / 2, y + height - 0.12, text, ha="center", va="top", fontsize=10)

    def facts(x: float, y: float, chosen: list[dict], label) -> None:
        for row, probe in enumerate(chosen):
            axes.text(
                x, y - 0.3 * row, label(probe), ha="center", va="top", fontsize=9, color=colour[probe["location"]]
            )

    axes.text(-0.1, top - 0.15, "The conversation as scripted", fontsize=11, weight="bold", va="top")
    upper_y = top - 0.45 - upper
    for turn in range(turns):
        box(turn + 0.05, upper_y, 0.9, upper, "#eeeeee" if turn < verbatim else "#e3f2fd", f"turn {turn}")
        facts(turn + 0.5, upper_y + upper - 0.45, planted[turn], lambda p: p["fact"])
    axes.add_artist(
        FancyArrowPatch(
            (verbatim / 2, upper_y - 0.05), (verbatim / 2, upper_y - 0.55), arrowstyle="-|>", mutation_scale=14
        )
    )
    axes.text(
        verbatim / 2 + 0.1,
        upper_y - 0.28,
        f"turns 0-{verbatim - 1} folded by the summary prompt "
        f"({len(compactions)} compaction{'s' if len(compactions) > 1 else ''})",
        fontsize=10,
        va="center",
    )

    axes.text(-0.1, lower + 0.45, "The history the probes saw", fontsize=11, weight="bold", va="top")
    box(0.05, 0, verbatim - 0.1, lower, "#fff8e1", "[Conversation summary: ...]")
    facts(verbatim / 2, lower - 0.45, folded, lambda p: f"{p['fact']}  {mark[p['location']]}, probe: {p['verdict']}")
    for turn in range(verbatim, turns):
        box(turn + 0.05, 0, 0.9, lower, "#e3f2fd", f"turn {turn}")
        facts(turn + 0.5, lower - 0.45, planted[turn], lambda p: f"{p['fact']}\nprobe: {p['verdict']}")
    axes.set_title(
        f"{probes[0]['scenario']}: summary prompt {probes[0]['prompt']}, budget {probes[0]['budget']}, "
        f"{probes[0]['model'].split(':')[0]}",
        fontsize=11,
    )
    figure.tight_layout()
    figure.savefig(png, dpi=110)
    plt.close(figure)


def main(report_run: Path | None, probes_run: Path | None) -> None:
    from harness.records import read_jsonl
    from harness.reports.formats import write_report

    IMAGES.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        if report_run:
            shoot(write_report(report_run, work / "report")["html"], IMAGES / "report.png", "1100,1100", work)
            written.append("report.png")
        if probes_run:
            report = write_report(probes_run, work / "probes")["html"]
            records = read_jsonl(probes_run / "records.jsonl")
            record = next(r for r in records if r["strategy"] == "summary" and r["compactions"])
            explorer = work / "explorer.html"
            explorer.write_text(
                report.read_text().replace("</body>", EXPLORER.replace("FACT", json.dumps(record["fact"])))
            )
            shoot(explorer, IMAGES / "explorer.png", "1100,1100", work)
            draw_compaction(probes_run, IMAGES / "compaction.png")
            written += ["explorer.png", "compaction.png"]
    for name in written:
        print(f"{IMAGES / name}: {(IMAGES / name).stat().st_size:,} bytes")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, metavar="RUN_DIR", help="the run whose report becomes report.png")
    parser.add_argument("--probes", type=Path, metavar="RUN_DIR", help="a run with probes: explorer and diagram")
    args = parser.parse_args()
    if not (args.report or args.probes):
        parser.error("give --report, --probes or both")
    main(args.report and args.report.resolve(), args.probes and args.probes.resolve())
