"""Commands that read finished runs: `report`, `runs` and `compare`."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InputError
from .common import EXIT_OK, at_least


def run_folder(path: Path, results: str) -> Path:
    """`path` if it is a run folder; else an error that lists the recent runs to choose from."""
    from ..records.folder import run_folders

    if (path / "manifest.json").is_file():
        return path
    runs = Path(results) / "runs"
    known = [p.name for p in run_folders(runs)][:8]
    listing = f"recent runs in {runs}: {', '.join(known)}" if known else f"there are no runs in {runs}"
    raise InputError(path, f"not a run folder (no manifest.json); {listing}")


def cmd_runs(args: argparse.Namespace) -> int:
    from ..reports.formats import run_index

    index = run_index(Path(args.results) / "runs")
    print(index.to_string() if len(index) else f"no runs in {Path(args.results) / 'runs'}")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from ..records import load_run
    from ..reports.formats import text_report, write_report

    if args.run_dir is None:  # no run named: the index of runs to choose from
        return cmd_runs(args)
    run_dir = run_folder(args.run_dir, args.results)
    run = load_run(run_dir)
    if run.records.empty and run.retention.empty and run.actions.empty:
        raise InputError(
            run_dir,
            "no finished case to report: the run has no records yet (`harness run EVAL --resume RUN_DIR` finishes it)",
        )
    print(text_report(run_dir))
    out = args.out or run_dir / "report"
    try:
        paths = write_report(run_dir, out)
    except OSError as exc:  # the tables are printed already; only the files are missing
        raise InputError(
            out, f"cannot write the report files here ({exc.strerror}); the tables are above, or give --out DIR"
        ) from None
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from ..analysis.compare import PAIR_KEY, VARIANT_KEY, pair_units, units
    from ..records import load_run
    from ..records.schema import METRICS
    from ..reports.comparisons import describe

    run_a = load_run(run_folder(args.run_a, args.results))
    run_b = load_run(run_folder(args.run_b, args.results)) if args.run_b else run_a
    if args.run_b is None and not (args.a and args.b):
        raise InputError(args.run_a, "to compare prompts within one run, name them with --a and --b")

    def resolve(run, flag: str, named: list[str] | None) -> tuple[str, str | None]:
        """A side as (strategy, prompt): `--a seed` (a prompt of --strategy), `--a truncate` or
        `--a mymodule:compact` (a strategy), `--a summary:seed` or `--a mymodule:compact:seed`."""
        strategies = set(run.records["strategy"]) | set(run.retention["strategy"])
        spec = named[0] if named else None
        strategy, prompt = (args.strategy, spec)
        if spec in strategies:
            strategy, prompt = spec, None
        elif spec and spec.rpartition(":")[0] in strategies:
            strategy, _, prompt = spec.rpartition(":")
        if strategy not in strategies:
            raise InputError(flag, f"no strategy {strategy!r} in this run (it has: {', '.join(sorted(strategies))})")
        existing = run.prompts(strategy)
        if not existing:  # a strategy without prompts
            return strategy, None
        if prompt is None and len(existing) == 1:
            prompt = existing[0]
        if prompt not in existing:
            raise InputError(
                flag if spec else args.run_a,
                (
                    f"no prompt {prompt!r} with strategy {strategy} in this run"
                    if prompt
                    else f"strategy {strategy} ran with several prompts; name one"
                )
                + f" (it has: {', '.join(existing)})",
            )
        return strategy, prompt

    (strategy_a, prompt_a), (strategy_b, prompt_b) = resolve(run_a, "--a", args.a), resolve(run_b, "--b", args.b)

    def label(side: str, strategy: str, prompt: str | None) -> str:
        name = prompt if strategy == args.strategy else f"{strategy}:{prompt}" if prompt else strategy
        return f"{side}:{name}" if name and name != args.strategy else side

    def rows(run, metric: str, strategy: str, prompt: str | None):
        data = run.rows(metric)
        data = data[data["strategy"] == strategy]
        return data[data["prompt"] == prompt] if prompt is not None else data

    # Within one strategy units pair on the strategy too; across strategies on fact and budget.
    key = PAIR_KEY if strategy_a == strategy_b else VARIANT_KEY
    comparisons = [
        pair_units(
            units(rows(run_a, metric, strategy_a, prompt_a), metric),
            units(rows(run_b, metric, strategy_b, prompt_b), metric),
            label("A", strategy_a, prompt_a),
            label("B", strategy_b, prompt_b),
            metric,
            key,
        )
        for metric in METRICS
        if not run_a.rows(metric).empty and not run_b.rows(metric).empty
    ]
    if not any(c.n for c in comparisons):
        raise InputError(
            args.run_b or args.run_a,
            "nothing pairs up: the two sides share no scenario, fact and budget measured on the same metric",
        )
    print("\n\n".join(describe(c, flips=args.flips) for c in comparisons))
    return EXIT_OK


def register(commands) -> None:
    compare = commands.add_parser("compare", help="paired comparison of two runs, or of two prompts in one run")
    compare.add_argument("run_a", type=Path, help="a run folder")
    compare.add_argument("run_b", type=Path, nargs="?", help="omit to compare prompts within RUN_A")
    compare.add_argument(
        "--a",
        action="append",
        metavar="VARIANT",
        help="side A: a prompt id of --strategy, a strategy, or strategy:prompt (summary:seed)",
    )
    compare.add_argument("--b", action="append", metavar="VARIANT", help="side B, as --a")
    compare.add_argument("--strategy", default="summary", help="which strategy's records to pair (default summary)")
    compare.add_argument("--flips", type=at_least(0), default=20, help="flipped facts listed each way (default 20)")
    compare.add_argument("--results", default="results", help="where runs/ lives (to list runs)")
    compare.set_defaults(handler=cmd_compare)

    report = commands.add_parser("report", help="print a run's tables; write markdown, CSV and HTML")
    report.add_argument("run_dir", type=Path, nargs="?", help="a run folder (none: list the runs)")
    report.add_argument("--results", default="results", help="where runs/ lives (to list runs)")
    report.add_argument("--out", type=Path, help="where to write (default: RUN_DIR/report)")
    report.set_defaults(handler=cmd_report)

    runs = commands.add_parser("runs", help="list the runs in results/runs: eval, model, date, status, best variant")
    runs.add_argument("--results", default="results", help="where runs/ lives")
    runs.set_defaults(handler=cmd_runs)
