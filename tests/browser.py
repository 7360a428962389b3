"""Headless Chromium for report tests: load a page with a probe script, read back what it found."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium")

# After load: whether every image decoded; with `fact`, the explorer filtered to that fact and its
# first probe opened, and what that shows.
PROBE = """
window.addEventListener('load', () => {
  const found = {images: [...document.images].map(i => i.complete && i.naturalWidth > 0 ? 'ok' : 'broken'),
                 load_ms: Math.round(performance.timing.loadEventStart - performance.timing.navigationStart)};
  const fact = FACT;
  if (fact !== null) {
    const select = document.getElementById('filter-fact');
    select.value = fact; select.dispatchEvent(new Event('change'));
    const details = document.querySelector('#facts details');
    details.open = true; details.dispatchEvent(new Event('toggle'));
    document.body.prepend(...['explorer', 'filters', 'shown', 'facts'].map(i => document.getElementById(i)));
    found.shown = document.getElementById('shown').textContent;
    found.opened = details.textContent;
    found.summaries = [...details.querySelectorAll('.sum')].map(e => e.textContent);
    found.marks = details.querySelectorAll('mark').length;
    found.scripts = document.scripts.length;
  }
  document.body.dataset.found = JSON.stringify(found);
});
"""


def inspect_page(page: Path, work: Path, fact: str | None = None, screenshot: Path | None = None) -> dict:
    probe = work / "probe.html"
    script = PROBE.replace("FACT", json.dumps(fact))
    probe.write_text(page.read_text().replace("</body>", f"<script>{script}</script></body>"))
    flags = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={work / 'profile'}",
        "--virtual-time-budget=5000",
    ]
    result = subprocess.run([*flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    if screenshot:
        subprocess.run(
            [*flags, "--window-size=1200,1400", f"--screenshot={screenshot}", probe.as_uri()],
            capture_output=True,
            timeout=120,
            check=True,
        )
    raw = result.stdout.split('data-found="')[1].split('"')[0]
    return json.loads(raw.replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
