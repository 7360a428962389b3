"""Batch against direct execution of one 1,000-case eval, against the loopback fake batch server
with 200 ms latency on every HTTP request. Run by hand; it prints its figures:

    .venv/bin/python benchmarks/batch_vs_direct.py               # 1,000 cases (about three minutes)
    .venv/bin/python benchmarks/batch_vs_direct.py --scenarios 25   # a quicker look

For each mode: wall time, HTTP requests the server saw, model requests (batch entries or
messages), and for batch mode the waves and batches. Both runs must give the same records
(the fake answers deterministically); the benchmark checks that too.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
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
from harness.records import load_manifest, read_jsonl  # noqa: E402
from harness.sources.generators.chat import Options, generate  # noqa: E402

LATENCY_S = 0.2


def write_eval(folder: Path, scenarios: int) -> Path:
    generate(Options(scenarios=scenarios, facts=4, filler_chars=300, filler_turns=None, seed=0,
                     supersede=0.0, distract=0.0, budget=None), folder)
    (folder.parent / "seed.txt").write_text((REPO / "harness" / "prompts" / "seed.txt").read_text())
    path = folder.parent / "bench.yaml"
    # Four cases per scenario: the summary and truncation at half the history, the ceiling, the floor.
    path.write_text(f"name: bench\nscenarios: ['{folder.name}/*.yaml']\nbudgets: ['50%']\nprompts: [seed.txt]\n"
                    "strategies: [summary, truncate, none, no-history]\nbatch_poll_seconds: 0.5\n")
    return path


def run(eval_path: Path, out: Path, batch: bool, jobs: int) -> dict:
    with BatchServer(latency_s=LATENCY_S, batch_delay_s=1.0) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="bench", max_retries=2, timeout=120)
        backend = Backend(client, "fake", "batch-server", {})
        ev = load_eval(eval_path)
        started = time.perf_counter()
        run_dir = run_eval(ev, backend, out, progress=False, jobs=jobs,
                           batch=BatchEndpoint(client) if batch else None)
        wall = time.perf_counter() - started
    manifest = load_manifest(run_dir)
    return {"wall_s": wall, "http": server.http_requests, "model_requests": backend.calls,
            "waves": manifest.waves, "batches": len(manifest.batches), "cases": len(plan_cases(ev)),
            "records": [{k: v for k, v in r.items() if k not in ("latency_s", "cached")}
                        for r in read_jsonl(run_dir / "records.jsonl")]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=250, help="4 cases each (default 250: 1,000 cases)")
    parser.add_argument("--jobs", type=int, default=8, help="direct mode's cases at once (default 8, as on remote models)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        eval_path = write_eval(Path(tmp) / "scenarios", args.scenarios)
        batch = run(eval_path, Path(tmp) / "batch", batch=True, jobs=1)
        direct = run(eval_path, Path(tmp) / "direct", batch=False, jobs=args.jobs)
    print(f"{batch['cases']:,} cases, {LATENCY_S * 1000:.0f} ms latency per HTTP request, batches end 1 s after "
          f"submission")
    print(f"{'mode':<22}{'wall time':>12}{'HTTP requests':>16}{'model requests':>16}{'waves':>8}{'batches':>9}")
    for name, figures in ((f"direct (--jobs {args.jobs})", direct), ("batch", batch)):
        print(f"{name:<22}{figures['wall_s']:>11.1f}s{figures['http']:>16,}{figures['model_requests']:>16,}"
              f"{figures['waves'] or '-':>8}{figures['batches'] or '-':>9}")
    print(f"speed-up {direct['wall_s'] / batch['wall_s']:.1f}x; HTTP requests {direct['http'] / batch['http']:.0f}x fewer; "
          f"records identical: {batch['records'] == direct['records']}")


if __name__ == "__main__":
    main()
