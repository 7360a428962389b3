"""Commands that read finished runs, `report`, `runs` and `compare`, and agent logs: `audit`."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InputError
from .common import EXIT_OK, Commands, at_least


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
    from ..analysis.compare import compare_variants
    from ..records import load_run
    from ..reports.comparisons import describe

    run_a = load_run(run_folder(args.run_a, args.results))
    run_b = load_run(run_folder(args.run_b, args.results)) if args.run_b else run_a
    if args.run_b is None and not (args.a and args.b):
        raise InputError(args.run_a, "to compare prompts within one run, name them with --a and --b")
    comparisons = compare_variants(
        run_a, run_b, args.a and args.a[0], args.b and args.b[0], args.strategy, names=("--a", "--b")
    )
    if not any(c.n for c in comparisons):
        raise InputError(
            args.run_b or args.run_a,
            "nothing pairs up: the two sides share no scenario, fact and budget measured on the same metric",
        )
    print("\n\n".join(describe(c, flips=args.flips) for c in comparisons))
    return EXIT_OK


SESSIONS_PRINTED = 20  # the session table on the terminal: the worst; the files hold every session


def cmd_audit(args: argparse.Namespace) -> int:
    from ..audit import audit
    from ..records.audit import as_json
    from ..reports.audit import audit_html, audit_markdown
    from .common import writable_folder

    result = audit(args.paths, args.window, args.controls, args.format, args.jobs, progress=not args.quiet)
    if not result.sessions:
        raise InputError(
            " ".join(args.paths), "no log could be read: " + ("; ".join(result.skipped) or "no log file found")
        )
    print(audit_markdown(result, sessions=SESSIONS_PRINTED))
    out = writable_folder(args.out, "--out")
    written = {"json": out / "audit.json", "markdown": out / "audit.md", "html": out / "audit.html"}
    written["json"].write_text(as_json(result))
    written["markdown"].write_text(audit_markdown(result))
    written["html"].write_text(audit_html(result))
    for kind, path in written.items():
        print(f"{kind}: {path}")
    return EXIT_OK


def register(commands: Commands) -> None:
    from ..sources.importers import AGENT_FORMATS

    audit = commands.add_parser(
        "audit",
        help="what compaction already cost in your agent logs: rework after each recorded compaction "
        "against the same sessions' other moments (no model call)",
        description="Reads Claude Code, Codex CLI, SWE-agent, mini-swe-agent and chat-message logs (the format "
        "of each detected; gzip, bzip2 or xz too) and measures, in the steps after each compaction the logs "
        "record, re-reads, repeated failures, broken constraints, plan regressions and the user repeating "
        "themselves, against windows of the same length at other moments of the same sessions. docs/audit.md.",
    )
    audit.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="log files, folders of logs, or globs ('~/.claude/projects/**/*.jsonl')",
    )
    audit.add_argument("--window", type=at_least(1), default=10, help="steps after a compaction looked at (default 10)")
    audit.add_argument(
        "--controls",
        type=at_least(1),
        default=4,
        help="control windows a compaction, the nearest by position (default 4)",
    )
    audit.add_argument(
        "--format", choices=AGENT_FORMATS, help="read every log as this format (default: detected per file)"
    )
    audit.add_argument("--jobs", type=at_least(1), help="worker processes (default: one a core)")
    audit.add_argument("--out", type=Path, default=Path("results/audit"), help="where audit.json, .md and .html go")
    audit.add_argument("--quiet", action="store_true", help="no progress bar")
    audit.set_defaults(handler=cmd_audit)

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
