"""Regenerate the documentation's pictures from a real run, in headless Chromium (Debian's; see
scripts/install-chromium.sh): docs/images/report.png (the top of the HTML report: the headline, the
tables and the first plot) and docs/images/explorer.png (the fact explorer with one fact opened).

Usage: python scripts/screenshots.py RUN_DIR   (a run with probes, e.g. the one `make demo` writes)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--virtual-time-budget=5000"]
# Shows only the explorer, filtered to one fact with its first probe opened.
EXPLORER = """<script>window.addEventListener('load', () => {
  const select = document.getElementById('filter-fact'); select.value = FACT; select.dispatchEvent(new Event('change'));
  const details = document.querySelector('#facts details'); details.open = true; details.dispatchEvent(new Event('toggle'));
  document.body.replaceChildren(...['explorer', 'filters', 'shown', 'facts'].map(i => document.getElementById(i)));
});</script></body>"""


def shoot(page: Path, png: Path, size: str, work: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("chromium is not installed: run scripts/install-chromium.sh")
    subprocess.run([chromium, *FLAGS, f"--user-data-dir={work / 'profile'}", f"--window-size={size}",
                    f"--screenshot={png}", page.as_uri()], capture_output=True, timeout=120, check=True)


def main(run_dir: Path) -> None:
    from harness.records import read_jsonl
    from harness.reports.formats import write_report

    report = write_report(run_dir)["html"]
    record = next(r for r in read_jsonl(run_dir / "records.jsonl") if r["strategy"] == "summary" and r["compactions"])
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        shoot(report, IMAGES / "report.png", "1100,1500", work)
        explorer = work / "explorer.html"
        explorer.write_text(report.read_text().replace("</body>", EXPLORER.replace("FACT", json.dumps(record["fact"]))))
        shoot(explorer, IMAGES / "explorer.png", "1100,1100", work)
    for name in ("report.png", "explorer.png"):
        print(f"{IMAGES / name}: {(IMAGES / name).stat().st_size:,} bytes")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
