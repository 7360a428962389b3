"""How fast `harness audit` reads a folder of agent logs: wall time, sessions a second and peak
memory on 1,000 generated sessions of typical size, in the mix a team has (Claude Code 60%, Codex CLI
30%, chat messages 10%). A session: a task, then a tool loop whose length is drawn long-tailed
(median 80 steps, 10 to 600), reads, edits, test runs (a third failing) and plan updates, tool
outputs of 200 to 6,000 characters, a user's line every 40 steps and a recorded compaction every 60.
The target: 1,000 sessions in under a minute on 2 cores.

Run by hand (timings are noisy; it prints its figures):

    .venv/bin/python benchmarks/audit_scale.py                 # 1,000 sessions
    .venv/bin/python benchmarks/audit_scale.py --sessions 200  # a quick look
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the log writers live with the tests

from auditlogs import WRITERS, Compact, Edit, Event, Plan, Read, Run, User  # noqa: E402

MIX = [("claude-code", 0.6), ("codex", 0.3), ("openai", 0.1)]


def session(rng: random.Random) -> list[Event]:
    steps = min(600, max(10, int(rng.lognormvariate(4.4, 0.8))))
    files = [f"src/pkg/module_{n}.py" for n in range(rng.randint(5, 40))]
    events: list[Event] = [User("Fix the failing tests in tests/test_core.py. Never edit setup.cfg.")]
    items = [f"step {n}" for n in range(6)]
    for n in range(steps):
        if n and n % 60 == 0:
            events.append(Compact("Summary: " + " ".join(rng.choices(files, k=8))))
        if n and n % 40 == 0:
            events.append(User("Keep going; as I said, never edit setup.cfg."))
        kind = rng.random()
        if kind < 0.45:
            events.append(Read(rng.choice(files)))
        elif kind < 0.65:
            events.append(Edit(rng.choice(files)))
        elif kind < 0.9:
            events.append(Run(f"pytest tests/test_{rng.randint(0, 9)}.py", fails=rng.random() < 0.33))
        else:
            done = rng.randint(0, len(items))
            events.append(Plan(tuple((i, "completed" if k < done else "pending") for k, i in enumerate(items))))
    return events


def padded(text: str, rng: random.Random) -> str:
    """A log whose tool outputs are 200 to 6,000 characters, as real ones are."""
    return text.replace("3 passed", "3 passed" + " ." * (rng.randint(100, 3000)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        logs = Path(folder) / "logs"
        logs.mkdir()
        size = 0
        for n in range(args.sessions):
            fmt = rng.choices([f for f, _ in MIX], [w for _, w in MIX])[0]
            write, suffix = WRITERS[fmt]
            path = logs / f"{fmt}-{n:04d}{suffix}"
            path.write_text(padded(write(session(rng)), rng))
            size += path.stat().st_size
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "audit", str(logs), "--out", str(Path(folder) / "out"), "--quiet"],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if done.returncode != 0:
            sys.exit(done.stderr)
        headline = next(line for line in done.stdout.splitlines() if "log files" in line)
        print(f"{args.sessions:,} sessions, {size / 1e6:,.0f} MB of logs: {wall:.1f} s wall "
              f"({args.sessions / wall:,.0f} sessions/s, {size / 1e6 / wall:,.1f} MB/s), "
              f"peak memory of a process {peak:,.0f} MB")  # fmt: skip
        print(headline)


if __name__ == "__main__":
    main()
