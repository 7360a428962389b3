"""What the command groups share: argument types that name their flag on error, the flags of an
eval run, and loading the eval a command line names."""

from __future__ import annotations

import argparse
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

from ..errors import InputError, did_you_mean

if TYPE_CHECKING:
    from ..execution.evals import Eval

# The `harness` parser's subcommands, to which each module of this package adds its own.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 130
# Every exit status of `harness`, what it means (the documentation's reference is generated from it).
EXIT_CODES = {
    0: "success; `harness gate`: the candidate passes",
    1: "an error the message names (a file, a line, a flag, the model's set-up); `harness gate`: cannot judge "
    "(no baseline, another model, too little power, too many errors); `harness run`: more errors than "
    "`gate.max_error_rate`; `harness import`: nothing could be imported",
    2: "the command line itself is wrong (an unknown command or flag, a bad value): argparse's usage error",
    100: "`harness gate`: a regression (a significant drop larger than `max_drop`, a metric under `floor`, summaries "
    "that grew or hit their token cap more often)",
    130: "interrupted (Ctrl-C): finished cases are saved; the message says how to resume",
}


class Parser(argparse.ArgumentParser):
    """argparse, with "did you mean" for a misspelt command or flag."""

    def error(self, message: str) -> NoReturn:
        unknown = re.search(r"unrecognized arguments: (\S+)", message)
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if unknown:
            message += did_you_mean(unknown[1].split("=")[0], _flags(self))
        elif choice:
            message += did_you_mean(choice[1], re.findall(r"'([^']+)'", choice[2]))
        super().error(message)


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    """Every flag of a parser and of its subcommands."""
    flags = [flag for action in parser._actions for flag in action.option_strings]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            flags += [flag for sub in action.choices.values() for flag in _flags(sub)]
    return sorted(set(flags))


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number no smaller than `minimum` (the flag is named on error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, not {value}")
        return value

    return parse


def price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"a price per million tokens is a number of 0 or more, not {text!r}")
    return value


def writable_folder(path: Path, flag: str) -> Path:
    """Checked before any model call: a run must be able to save what it measures."""
    if path.exists() and not path.is_dir():
        raise InputError(path, f"{flag}: not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as exc:
        raise InputError(path, f"{flag}: cannot write here ({exc.strerror})") from None
    return path


def flag_help(description: str | None) -> str:
    """A field's description as a flag's help: a phrase, with argparse's `%` escaped."""
    text = (description or "").strip().rstrip(".")
    return (text[:1].lower() + text[1:]).replace("%", "%%")


def model_flags(parser: argparse.ArgumentParser, default: str | None) -> None:
    from ..inputs.evalfile import EvalFile

    parser.add_argument("--model", default=default, help=flag_help(EvalFile.model_fields["model"].description))
    parser.add_argument("--base-url", help=flag_help(EvalFile.model_fields["base_url"].description))


@dataclass(frozen=True, kw_only=True)
class EvalFlag:
    """A flag that overrides one field of the eval file (`EvalFile`); its help is the field's
    description, so the file's reference and the command line say the same."""

    field: str
    flag: str
    options: dict[str, Any]  # how argparse reads it (its action, type, metavar)
    given: Callable[[Any], Any] = lambda value: value  # the flag's value as the field's; None: not given

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def add(self, parser: argparse.ArgumentParser) -> None:
        from ..inputs.evalfile import EvalFile

        repeatable = "; repeatable" if self.options.get("action") == "append" else ""
        about = flag_help(EvalFile.model_fields[self.field].description)
        parser.add_argument(self.flag, **self.options, help=f"{about} (overrides the eval's {self.field}{repeatable})")


# Every override of an eval file from the command line. `--model` and `--base-url` come from
# `model_flags` (other commands take them too); `--batch` only where a run is made.
EVAL_OVERRIDES = (
    EvalFlag(field="prompts", flag="--prompt", options={"action": "append", "metavar": "FILE"}),
    EvalFlag(field="budgets", flag="--budget", options={"action": "append"}),
    EvalFlag(field="repeats", flag="--repeats", options={"type": at_least(1), "metavar": "N"}),
    EvalFlag(field="scenario_ids", flag="--scenario", options={"action": "append", "metavar": "ID"}),
    EvalFlag(field="prompt_ids", flag="--prompt-id", options={"action": "append", "metavar": "ID"}),
    EvalFlag(field="limit", flag="--limit", options={"type": at_least(1), "metavar": "N"}),
    EvalFlag(
        field="probes", flag="--no-probes", options={"action": "store_true"}, given=lambda off: False if off else None
    ),
)
MODEL_OVERRIDE = EvalFlag(field="model", flag="--model", options={})
BATCH_OVERRIDE = EvalFlag(
    field="batch", flag="--batch", options={"action": "store_true"}, given=lambda on: True if on else None
)

ALL_OVERRIDES = (MODEL_OVERRIDE, BATCH_OVERRIDE, *EVAL_OVERRIDES)
EVAL_FLAGS = {f.field: f.flag for f in ALL_OVERRIDES}  # a bad value is blamed on its flag


def eval_flags(parser: argparse.ArgumentParser, eval_required: bool = True) -> None:
    """The eval to run and the part of it to run."""
    parser.add_argument("eval", nargs=None if eval_required else "?", help="an eval file, e.g. evals/smoke.yaml")
    model_flags(parser, None)
    for override in EVAL_OVERRIDES:
        override.add(parser)
    parser.add_argument("--results", default="results", help="where runs/, cache/ and baselines/ live")
    parser.add_argument("--no-cache", action="store_true", help="do not reuse or store model responses")


def run_flags(parser: argparse.ArgumentParser, eval_required: bool = True) -> None:
    eval_flags(parser, eval_required)
    parser.add_argument(
        "--judge",
        metavar="MODEL",
        help="ask this model to grade answers the matcher calls 'forgot' "
        "(measured first on labelled answers: see judge-check)",
    )
    parser.add_argument("--judge-base-url", metavar="URL", help="an Anthropic-compatible server for the judge")
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="finish an interrupted run")
    parser.add_argument(
        "--jobs",
        type=at_least(1),
        metavar="N",
        help="cases run at once (default: 1 on a local model, for reproducible answers; 8 on remote ones; "
        "a batch run's cases wait for their waves together, whatever this says)",
    )
    BATCH_OVERRIDE.add(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def load_eval_of(args: argparse.Namespace, control: bool = True, **extra: Any) -> Eval:
    """The eval a command line names, with its flags applied (`eval_flags`)."""
    from ..execution.evals import load_eval

    given = {f.field: f.given(getattr(args, f.dest)) for f in ALL_OVERRIDES if hasattr(args, f.dest)}
    return load_eval(args.eval, control=control, flags=EVAL_FLAGS, **given, **extra)
