"""The `harness` command line: one module per group of commands (`run`: run, gate, baseline, plan;
`results`: report, runs, compare; `files`: validate, schema, import, generate, init; `chat`;
`models`: list and install the embedded models)."""

from __future__ import annotations

import os
import sys

from ..errors import InputError
from . import chat, files, models, results, run
from .common import EXIT_ERROR, EXIT_INTERRUPTED, Parser


def build_parser() -> Parser:
    parser = Parser(prog="harness", description="Measure how lossy an agent's context compaction is.")
    commands = parser.add_subparsers(dest="command", required=True)
    for group in (run, results, chat, files, models):
        group.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    from ..models.client import SetupError

    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
        return code
    except (InputError, SetupError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        # The reader stopped reading (`harness schema | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except KeyboardInterrupt as exc:  # a batch run says which batches keep running
        print(
            f"\ninterrupted: finished cases are saved; "
            f"{exc or '`harness run EVAL --resume RUN_DIR` completes the run'}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
