"""The HTML report's weight and load time in headless Chromium, for a real run and for the same run
copied up to the size of evals/full.yaml (about 750 probes). Run by hand; it prints its figures:

    .venv/bin/python benchmarks/report_page.py [RUN_DIR] [--probes 750]

RUN_DIR defaults to the newest smoke run in results/runs (make demo makes one). The scaled copy
repeats the run's scenarios under new ids, with their records, summaries and retention, so its
text is real model output, in the amount a full run has.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the headless-Chromium helper lives with the tests

from browser import CHROMIUM, inspect_page  # noqa: E402

from harness.records import read_jsonl  # noqa: E402
from harness.reports.formats import write_report  # noqa: E402

FILES = ("records.jsonl", "compactions.jsonl", "retention.jsonl", "scenarios.jsonl", "cases.jsonl")


def scaled(run: Path, copies: int, out: Path) -> Path:
    out.mkdir(parents=True)
    (out / "manifest.json").write_text((run / "manifest.json").read_text())
    for name in FILES:
        rows = read_jsonl(run / name)
        lines = []
        for copy in range(copies):
            for row in rows:
                row = dict(row)
                if "scenario" in row:
                    row["scenario"] = f"{row['scenario']}~{copy}"
                if "case" in row:
                    row["case"] = f"{row['case']}~{copy}"
                lines.append(json.dumps(row, ensure_ascii=False) + "\n")
        (out / name).write_text("".join(lines))
    return out


def measure(run: Path, work: Path) -> str:
    started = time.perf_counter()
    page = write_report(run, work / "report")["html"]
    written = time.perf_counter() - started
    probes = len(read_jsonl(run / "records.jsonl"))
    fact = read_jsonl(run / "records.jsonl")[0]["fact"]
    found = inspect_page(page, work, fact=fact)
    return (f"{probes} probes: page {page.stat().st_size / 1e6:.2f} MB, written in {written:.1f} s, "
            f"loaded in Chromium in {found['load_ms']} ms, {len(found['images'])} plots decoded "
            f"({set(found['images'])}), explorer filtered to one fact: {found['shown']}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run", nargs="?", type=Path)
    parser.add_argument("--probes", type=int, default=750)
    args = parser.parse_args()
    if CHROMIUM is None:
        sys.exit("Chromium is not installed: run scripts/install-chromium.sh")
    run = args.run or max((REPO / "results" / "runs").glob("smoke-*"), key=lambda p: p.stat().st_mtime)
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{run.name}: {measure(run, Path(tmp) / 'real')}")
        copies = math.ceil(args.probes / max(1, len(read_jsonl(run / "records.jsonl"))))
        big = scaled(run, copies, Path(tmp) / "big-run")
        print(f"{run.name} x{copies}: {measure(big, Path(tmp) / 'big')}")


if __name__ == "__main__":
    main()
