"""What the harness itself costs, next to the model. Run by hand; it prints its figures:

    .venv/bin/python benchmarks/harness_overhead.py            # all five (about four minutes)
    .venv/bin/python benchmarks/harness_overhead.py --skip-embedded

1. harness time per case with an instant fake client, and the harness's share of an embedded
   smoke run's wall time (target under 3%);
2. the share of probe prompt tokens the embedded model served from its prompt cache (target 80%+);
3. 256 cases at --jobs 32 against a loopback server with 200 ms latency: wall time / ideal (target 1.25 or less);
4. an unchanged re-run: model calls made (target 0) and wall time;
5. harness time for a 2,000-turn scenario against a 200-turn one (target: linear, about 10x).
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import threading
import time
from pathlib import Path

import anthropic
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the fake client and the loopback server live with the tests

from fakes import FakeAnthropic, FakeClient  # noqa: E402
from fault_server import FaultServer  # noqa: E402

from harness.execution.cases import plan_cases  # noqa: E402
from harness.execution.evals import load_eval  # noqa: E402
from harness.execution.executors import run_eval  # noqa: E402
from harness.models.backends import Backend, open_model  # noqa: E402
from harness.models.cache import ResponseCache  # noqa: E402
from harness.records import read_jsonl  # noqa: E402


class Timed:
    """Wraps a client and adds up the time spent inside model calls."""

    def __init__(self, inner):
        self.inner, self.model_seconds, self.lock = inner, 0.0, threading.Lock()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def _timed(self, method, **request):
        started = time.perf_counter()
        try:
            return method(**request)
        finally:
            with self.lock:
                self.model_seconds += time.perf_counter() - started

    def create(self, **request):
        return self._timed(self.inner.create, **request)

    def count_tokens(self, **request):
        return self._timed(self.inner.count_tokens, **request)


def instant(request):
    return "SUMMARY of the facts" if request.get("system", "").startswith(("Summar", "You compress")) else "Okay."


def write_eval(folder: Path, scenarios: list[dict], budgets=("40%",), strategies=("summary", "none", "no-history")):
    (folder / "s").mkdir()
    for scenario in scenarios:
        (folder / "s" / f"{scenario['id']}.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    (folder / "seed.txt").write_text((REPO / "harness/prompts/seed.txt").read_text())
    (folder / "e.yaml").write_text(yaml.safe_dump({
        "name": "bench", "scenarios": ["s/*.yaml"], "budgets": list(budgets), "prompts": ["seed.txt"],
        "strategies": list(strategies), "summary_max_tokens": 64, "probe": {"max_tokens": 16}}))
    return folder / "e.yaml"


def long_scenario(turns: int, sid: str = "long") -> dict:
    rows = [{"user": f"Turn {i}: my note number {i} is {1000 + i}.", "assistant": f"Noted {1000 + i}."}
            for i in range(turns)]
    rows[0]["facts"] = [{"id": "first", "kind": "number", "answer": "1000", "probe": "What was note number 0?"}]
    return {"id": sid, "description": "generated", "turns": rows}


def figure_1_and_2(skip_embedded: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ev = load_eval(REPO / "evals/smoke.yaml")
        fake = Timed(FakeClient(instant))
        started = time.perf_counter()
        run_eval(ev, fake, Path(tmp), progress=False)
        cases = len(plan_cases(ev))
        per_case = (time.perf_counter() - started - fake.model_seconds) / cases
        print(f"1a. harness time per case, instant fake client: {per_case * 1000:.1f} ms ({cases} smoke cases)")
        if skip_embedded:
            return
        local = Timed(open_model("local"))
        started = time.perf_counter()
        run_dir = run_eval(ev, local, Path(tmp), progress=False)
        wall = time.perf_counter() - started
        share = (wall - local.model_seconds) / wall
        print(f"1b. harness share of an embedded smoke run: {share:.2%} of {wall:.0f} s (target < 3%)")
        records = read_jsonl(run_dir / "records.jsonl")
        cached = sum(r.get("cache_read_tokens", 0) for r in records)
        fresh = sum(r.get("input_tokens", 0) for r in records)
        print(f"2.  probe prompt tokens from the prompt cache: {cached / (cached + fresh):.0%} "
              f"({cached:,} of {cached + fresh:,}; target >= 80%)")


def figure_3() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        scenarios = [{"id": f"s{i:02d}", "description": "generated",
                      "turns": [{"user": f"My code is {4000 + i}.", "assistant": "Noted.",
                                 "facts": [{"id": "code", "kind": "number", "answer": str(4000 + i),
                                            "probe": "What is my code?"}]},
                                {"user": "Tell me something."}]} for i in range(64)]
        ev = load_eval(write_eval(Path(tmp), scenarios, strategies=("summary", "truncate", "none", "no-history")))
        latency = 0.2
        # The server runs in its own process, as a real API would: it must not share our GIL.
        urls = multiprocessing.Queue()
        process = multiprocessing.Process(target=_serve, args=(latency, urls), daemon=True)
        process.start()
        try:
            client = anthropic.Anthropic(base_url=urls.get(timeout=30), api_key="bench", max_retries=0)
            backend = Backend(client, "fake", "bench-server", {})
            started = time.perf_counter()
            run_eval(ev, backend, Path(tmp), progress=False, jobs=32)
            wall = time.perf_counter() - started
        finally:
            process.terminate()
        # Ideal: every call waits its latency, 32 at a time, and nothing else costs time.
        ideal = backend.calls / 32 * latency
        print(f"3.  {len(plan_cases(ev))} cases at --jobs 32, 200 ms latency: {wall:.1f} s, ideal {ideal:.1f} s, "
              f"ratio {wall / ideal:.2f} (target <= 1.25)")


def _serve(latency: float, urls) -> None:
    with FaultServer(0.0, latency_s=latency, max_requests=100_000) as server:
        urls.put(server.url)
        time.sleep(600)  # bounded: the benchmark terminates it long before


def figure_4() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ev = load_eval(REPO / "evals/smoke.yaml")
        cache = ResponseCache(Path(tmp) / "cache.sqlite")
        first = Backend(FakeAnthropic(instant), "m", "bench", {}, cache)
        run_eval(ev, first, Path(tmp), progress=False)
        second = Backend(FakeAnthropic(instant), "m", "bench", {}, cache)
        started = time.perf_counter()
        run_eval(ev, second, Path(tmp), progress=False)
        print(f"4.  unchanged re-run of the smoke eval: {second.calls} model calls (target 0), "
              f"{time.perf_counter() - started:.2f} s (first run made {first.calls})")


def figure_5() -> None:
    times = {}
    for turns in (200, 2000):
        with tempfile.TemporaryDirectory() as tmp:
            ev = load_eval(write_eval(Path(tmp), [long_scenario(turns)], budgets=("5%",), strategies=("summary",)))
            fake = Timed(FakeClient(instant))
            started = time.perf_counter()
            run_eval(ev, fake, Path(tmp), progress=False)
            times[turns] = time.perf_counter() - started - fake.model_seconds
    print(f"5.  harness time, 200 turns: {times[200]:.2f} s; 2,000 turns: {times[2000]:.2f} s; "
          f"ratio {times[2000] / times[200]:.1f} (linear: about 10)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-embedded", action="store_true", help="skip the embedded smoke run (figures 1b, 2)")
    args = parser.parse_args()
    figure_1_and_2(args.skip_embedded)
    figure_3()
    figure_4()
    figure_5()


if __name__ == "__main__":
    main()
