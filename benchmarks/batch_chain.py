"""Batch execution's cost against the length of a case's chain of calls: cases whose every turn is
live (the agent's reply is the model's), so a case of L turns waits for L waves in a row. Prints,
for each L, the waves, the requests, the response-cache lookups (a case replayed from its start
looks up every request it made before again) and the wall time, against the loopback fake batch
server (batches end at once). Run by hand:

    .venv/bin/python benchmarks/batch_chain.py                 # L = 4, 8, 16, 32; 40 cases each
    .venv/bin/python benchmarks/batch_chain.py --turns 8 64 --cases 10

Linear cost: lookups equal requests, and the wall time per request stays flat as L grows.
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

from harness.execution.evals import load_eval  # noqa: E402
from harness.execution.executors import run_eval  # noqa: E402
from harness.models.backends import Backend  # noqa: E402
from harness.models.batch import BatchEndpoint  # noqa: E402
from harness.models.cache import ResponseCache  # noqa: E402
from harness.records import load_manifest  # noqa: E402


class CountingCache(ResponseCache):
    """The response cache, counting its lookups."""

    lookups = 0

    def get(self, key: str):  # type: ignore[no-untyped-def]
        CountingCache.lookups += 1
        return super().get(key)


def write_eval(folder: Path, turns: int, cases: int) -> Path:
    """`cases` scenarios of `turns` live turns each (one fact in the first), run without compaction."""
    for case in range(cases):
        lines = [
            f"  - user: My code for case {case} is {1000 + case}.\n"
            f"    facts:\n      - {{id: code, kind: number, answer: '{1000 + case}', probe: 'What is my code?'}}\n"
        ]
        lines += [f"  - user: Step {turn} of case {case}, carry on.\n" for turn in range(1, turns)]
        (folder / f"chain-{case:03d}.yaml").write_text(
            f"id: chain-{case:03d}\ndescription: A chain of live turns.\nturns:\n" + "".join(lines)
        )
    path = folder / "chain.yaml"
    path.write_text("name: chain\nscenarios: ['chain-*.yaml']\nbudgets: ['100%']\nstrategies: [none]\n")
    return path


def measure(turns: int, cases: int, scratch: Path) -> dict[str, float]:
    folder = scratch / f"turns-{turns}"
    folder.mkdir()
    ev = load_eval(write_eval(folder, turns, cases), batch=True, control=False)
    ev.spec.batch_poll_seconds = 0.01
    with BatchServer(batch_delay_s=0.0, max_http=10_000_000) as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="bench", max_retries=2)
        cache = CountingCache(folder / "cache.sqlite")
        backend = Backend(client, "fake", "batch-server", {}, cache=cache)
        CountingCache.lookups = 0
        started = time.perf_counter()
        run_dir = run_eval(ev, backend, folder / "results", progress=False, batch=BatchEndpoint(client))
        wall = time.perf_counter() - started
    return {
        "turns": turns,
        "waves": load_manifest(run_dir).waves or 0,
        "requests": backend.calls,
        "lookups": CountingCache.lookups,
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[4, 8, 16, 32], help="chain lengths to measure")
    parser.add_argument("--cases", type=int, default=40, help="cases at each length")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        rows = [measure(turns, args.cases, Path(scratch)) for turns in args.turns]
    print(f"{args.cases} cases each")
    print(f"{'turns':>6}{'waves':>7}{'requests':>10}{'cache lookups':>15}{'wall time':>11}{'ms a request':>14}")
    for r in rows:
        print(
            f"{r['turns']:>6}{r['waves']:>7}{r['requests']:>10,}{r['lookups']:>15,}{r['wall_s']:>10.1f}s"
            f"{1000 * r['wall_s'] / max(r['requests'], 1):>14.1f}"
        )


if __name__ == "__main__":
    main()
