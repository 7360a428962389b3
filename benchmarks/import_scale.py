"""How importing an agent log grows with its length: wall time and peak memory of `harness import`
on generated SWE-agent trajectories and Claude Code sessions of 1,000, 10,000 and 100,000 tool steps
(each step a short command and a short output, as most steps are). A log too large for a scenario
file is refused, in seconds, before anything is written: the outcome column says which.

Run by hand (timings are noisy): .venv/bin/python benchmarks/import_scale.py
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = (1_000, 10_000, 100_000)
TASK = "Fix the off-by-one error in the pager."
# The import in a child process that reports its own peak memory (kilobytes) as its last line.
MEASURED = ("import resource, sys; from harness.cli import main; code = main(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(code)")


def swe_agent(steps: int, path: Path) -> Path:
    trajectory = [{"action": f"open src/pager_{n % 40}.py", "thought": f"Step {n}: read the next part.",
                   "observation": f"[File: src/pager_{n % 40}.py (120 lines total)]\n{n}: page = offset // size"}
                  for n in range(steps)]
    path.write_text(json.dumps({"trajectory": trajectory, "history": [{"role": "user", "content": TASK}]}))
    return path


def claude_code(steps: int, path: Path) -> Path:
    lines = [{"type": "user", "uuid": "u0", "parentUuid": None, "message": {"role": "user", "content": TASK}}]
    for n in range(steps):
        lines.append({"type": "assistant", "uuid": f"a{n}", "parentUuid": lines[-1]["uuid"], "message": {
            "role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}", "name": "Read",
                                              "input": {"file_path": f"src/pager_{n % 40}.py"}}]}})
        lines.append({"type": "user", "uuid": f"r{n}", "parentUuid": f"a{n}", "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}",
                                         "content": f"{n}: page = offset // size"}]}})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def main() -> None:
    print(f"{'format':<12} {'steps':>8} {'log MB':>7} {'seconds':>8} {'peak MB':>8}  outcome")
    with tempfile.TemporaryDirectory() as scratch:
        for fmt, make, suffix in (("swe-agent", swe_agent, ".traj"), ("claude-code", claude_code, ".jsonl")):
            for steps in STEPS:
                log = make(steps, Path(scratch) / f"log-{steps}{suffix}")
                started = time.monotonic()
                done = subprocess.run([sys.executable, "-c", MEASURED, "import", fmt, str(log), "--out",
                                       str(Path(scratch) / f"out-{fmt}-{steps}")], capture_output=True, text=True)
                seconds = time.monotonic() - started
                *said, peak = done.stderr.strip().splitlines()
                outcome = "imported" if done.returncode == 0 else "refused: " + said[0].split(": ", 2)[-1][:70]
                peak = int(peak) / 1024
                print(f"{fmt:<12} {steps:>8,} {log.stat().st_size / 1e6:>7.1f} {seconds:>8.2f} {peak:>8.0f}  {outcome}")


if __name__ == "__main__":
    main()
