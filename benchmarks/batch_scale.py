"""Batch execution at scale: peak threads, peak memory and wall time of a batch run of 1,000 and of
50,000 cases against the loopback fake batch server (run in its own process, so the figures are
the harness's alone). Run by hand; it prints its figures:

    .venv/bin/python benchmarks/batch_scale.py                  # 1,000 then 50,000 cases (about 20 minutes)
    .venv/bin/python benchmarks/batch_scale.py --sizes 1000     # the small one only

Both evals play 250 generated scenarios (4 facts each): 1,000 cases are the seed prompt, truncation,
the ceiling and the no-history control at one budget; 50,000 are 19 prompts and truncation at 10
budgets plus both controls (202 cases a scenario: 50,500).
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import anthropic

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the fake batch server lives with the tests

from batch_server import BatchServer  # noqa: E402

from harness.execution.cases import plan_cases  # noqa: E402
from harness.execution.evals import load_eval  # noqa: E402
from harness.execution.executors import run_eval  # noqa: E402
from harness.models.backends import Backend  # noqa: E402
from harness.models.batch import BatchEndpoint  # noqa: E402
from harness.records import load_manifest  # noqa: E402
from harness.sources.generators.chat import Options, generate  # noqa: E402

SHAPES = {1000: (1, 1), 50000: (19, 10)}  # cases -> (prompts, budgets), over 250 scenarios


def write_eval(folder: Path, prompts: int, budgets: int) -> Path:
    seed = (REPO / "harness" / "prompts" / "seed.txt").read_text()
    for i in range(prompts):  # variants of the seed prompt, so each has its own requests
        (folder / f"prompt-{i:02d}.txt").write_text(seed + ("" if i == 0 else f" (variant {i})"))
    shares = [f"{30 + 5 * i}%" for i in range(budgets)] if budgets > 1 else ["50%"]
    path = folder / f"scale-{prompts}x{budgets}.yaml"
    path.write_text(f"name: scale\nscenarios: ['scenarios/*.yaml']\nbudgets: {shares}\n"
                    f"prompts: {[f'prompt-{i:02d}.txt' for i in range(prompts)]}\n"
                    "strategies: [summary, truncate, none, no-history]\nbatch_poll_seconds: 0.5\n")
    return path


def serve(pipe) -> None:
    """The fake batch server, in its own process; batches end 1 s after submission."""
    with BatchServer(batch_delay_s=1.0, max_http=10_000_000) as server:
        pipe.send(server.url)
        pipe.recv()  # until the benchmark is done


class Peaks:
    """Samples this process's live threads and resident memory every 20 ms."""

    def __init__(self) -> None:
        self.threads = self.rss_mb = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            self.threads = max(self.threads, threading.active_count() - 1)  # not this sampler
            rss_kb = int(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmRSS")))
            self.rss_mb = max(self.rss_mb, rss_kb / 1024)

    def __enter__(self) -> Peaks:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()


def measure(cases: int, scratch: Path) -> dict:
    prompts, budgets = SHAPES[cases]
    folder = scratch / f"size-{cases}"
    folder.mkdir()
    generate(Options(scenarios=250, facts=4, filler_chars=300, seed=0, supersede=0.0, distract=0.0),
             folder / "scenarios")
    ev = load_eval(write_eval(folder, prompts, budgets), batch=True)
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=serve, args=(child,), daemon=True)
    server.start()
    url = parent.recv()
    client = anthropic.Anthropic(base_url=url, api_key="bench", max_retries=2, timeout=600)
    backend = Backend(client, "fake", "batch-server", {})
    started = time.perf_counter()
    with Peaks() as peaks:
        run_dir = run_eval(ev, backend, folder / "results", progress=False, jobs=8, batch=BatchEndpoint(client))
    wall = time.perf_counter() - started
    parent.send("done")
    server.join(timeout=10)
    manifest = load_manifest(run_dir)
    records = sum(1 for _ in open(run_dir / "records.jsonl"))
    return {"cases": len(plan_cases(ev)), "wall_s": wall, "threads": peaks.threads, "rss_mb": peaks.rss_mb,
            "waves": manifest.waves, "batches": len(manifest.batches), "requests": backend.calls, "records": records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", choices=sorted(SHAPES), default=sorted(SHAPES))
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as scratch:
            rows.append(measure(size, Path(scratch)))
            print(f"measured {rows[-1]['cases']:,} cases", file=sys.stderr)
    print(f"{'cases':>8}{'wall time':>11}{'peak threads':>14}{'peak RSS':>11}{'waves':>7}{'batches':>9}"
          f"{'requests':>10}{'probe records':>15}")
    for r in rows:
        print(f"{r['cases']:>8,}{r['wall_s']:>10.1f}s{r['threads']:>14}{r['rss_mb']:>8.0f} MB{r['waves']:>7}"
              f"{r['batches']:>9}{r['requests']:>10,}{r['records']:>15,}")
    print(f"(process peak RSS, getrusage: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)")


if __name__ == "__main__":
    main()
