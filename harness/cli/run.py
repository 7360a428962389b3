"""Commands that spend model time, or estimate it: `run`, `gate`, `baseline` and `plan`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, describe_error, plural
from ..inputs.evalfile import GateSettings

if TYPE_CHECKING:
    from ..execution.evals import Eval
    from ..records.manifest import Manifest

from .common import (
    EXIT_ERROR,
    EXIT_OK,
    Commands,
    eval_flags,
    flag_help,
    load_eval_of,
    price,
    run_flags,
    writable_folder,
)


def run_eval_of(
    args: argparse.Namespace, control: bool = True, recorded: Mapping[str, dict[str, Any]] | None = None
) -> tuple[Eval, Path]:
    """Run (or resume) the eval named on the command line; return it and its run folder.
    `control`: also run the eval's keeps-nothing control prompt (a gate reads the baseline's).
    `recorded`: a baseline's responses, answering the requests identical to its own."""
    from ..execution.executors import execute

    ev = load_eval_of(args, control=control)
    if ev.spec.repeats > ev.repeats:
        print(
            f"warning: {ev.spec.repeats} repeats at temperature 0 would be copies of one answer; collapsed to 1 "
            "(set a temperature above 0 for independent samples)",
            file=sys.stderr,
        )
    writable_folder(Path(args.results), "--results")
    return ev, execute(
        ev,
        Path(args.results),
        base_url=args.base_url,
        jobs=args.jobs,
        judge_model=args.judge,
        judge_base_url=args.judge_base_url,
        cache=not args.no_cache,
        resume=args.resume,
        progress=not args.quiet,
        recorded=recorded,
    )


def cmd_run(args: argparse.Namespace) -> int:
    from ..records import load_run
    from ..reports.formats import text_report, write_report

    ev, run_dir = run_eval_of(args)
    print(text_report(run_dir))
    if args.report:
        for kind, path in write_report(run_dir).items():
            print(f"{kind}: {path}")
    else:
        print(f"Plots and the fact explorer: harness report {run_dir} (writes {run_dir}/report/report.html)")
    failed, observed = load_run(run_dir).errors()
    limit = ev.spec.gate.max_error_rate
    if observed and failed / observed > limit:
        print(
            f"error: {failed} of {observed} of the run's observations failed with errors ({failed / observed:.0%}, "
            f"limit {limit:.0%} from gate.max_error_rate): see {run_dir}/records.jsonl",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return EXIT_OK


def gate_settings(args: argparse.Namespace, about: Manifest) -> GateSettings:
    """The thresholds the run was made with (its eval file's `gate:`), then the flags, validated as
    the eval file's are (a bad value names its flag)."""
    from pydantic import ValidationError

    from ..analysis.gate import manifest_settings

    given = {name: getattr(args, name) for name in GateSettings.model_fields if getattr(args, name) is not None}
    try:
        return manifest_settings(about, **given)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise InputError(f"--{str(error['loc'][0]).replace('_', '-')}", describe_error(error)) from None


def cmd_gate(args: argparse.Namespace) -> int:
    from ..analysis import gate
    from ..execution.provenance import recorded_answers
    from ..records import load_manifest, load_run
    from ..reports.gate import write_outputs

    def baseline_dir(name: str) -> Path:
        return Path(args.baseline or Path(args.results) / "baselines" / name)

    try:
        if not (args.run or args.eval):
            raise gate.CannotJudge("give an eval file to run, or --run RUN_DIR to gate a finished run")
        if not args.run:
            # Everything that can stop the gate is checked before minutes of model time are spent.
            ev = load_eval_of(args, control=False)
            baseline = gate.load_baseline(baseline_dir(ev.spec.name))
            for prompt in ev.prompts:
                gate.resolve_against(prompt.id, baseline, args.against)  # raises before the run if it cannot pair
        recorded = None
        if not (args.run or args.no_cache):  # --no-cache sends every request to the model
            answers = recorded_answers(baseline_dir(ev.spec.name))
            print(f"gate: {answers.line()}", file=sys.stderr)
            recorded = answers.responses
        run_dir = args.run or run_eval_of(args, control=False, recorded=recorded)[1]
        about = load_manifest(run_dir)
        settings = gate_settings(args, about)
        baseline_path = baseline_dir(about.name)
        baseline = gate.load_baseline(baseline_path)
        verdict = gate.evaluate(baseline, load_run(run_dir), settings, args.against)
    except gate.CannotJudge as exc:
        print(f"gate: cannot judge: {exc}", file=sys.stderr)
        return gate.EXIT_CANNOT_JUDGE
    paths = write_outputs(verdict, settings, Path(run_dir), baseline_path)
    summary = paths["markdown"].read_text()
    print(summary)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as file:
            file.write(summary)
    print(f"junit: {paths['junit']}\nmarkdown: {paths['markdown']}")
    return verdict.exit_code


def cmd_baseline(args: argparse.Namespace) -> int:
    from ..execution.provenance import keep_baseline
    from ..records import load_manifest

    kept = keep_baseline(args.run_dir, Path(args.results), args.name or load_manifest(args.run_dir).name)
    gone = kept.requests - kept.responses
    left = f"; {gone} had left the response cache and will be sent again" if gone else ""
    asked = plural(kept.requests, "request")
    print(f"baseline recorded: {kept.path} (with the responses to {kept.responses} of its run's {asked}{left})")
    return EXIT_OK


def cmd_judge_check(args: argparse.Namespace) -> int:
    from ..execution.judge import calibrate
    from ..models.backends import open_model
    from ..models.cache import ResponseCache
    from ..scoring.corpus import judge_items

    judge = open_model(args.judge, base_url=args.base_url)
    judge.check()
    if not args.no_cache:
        judge.cache = ResponseCache.under(Path(args.results))
    right, wrong = judge_items()
    print(
        f"judge-check: {judge.identity} on {plural(len(right), 'right answer')} and {plural(len(wrong), 'wrong one')} "
        "(the labelled corpus, and wrong values put into its right answers)"
    )
    for line in calibrate(judge).lines():
        print(f"  {line}")
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..execution.executors import open_for
    from ..execution.rehearsal import costs, estimate
    from ..models.cache import ResponseCache
    from ..models.client import SetupError

    prices = {
        key: value
        for key, value in (
            ("input", args.input_price),
            ("output", args.output_price),
            ("batch_input", args.batch_input_price),
            ("batch_output", args.batch_output_price),
        )
        if value is not None
    }
    ev = load_eval_of(args, prices=prices or None)
    try:  # the identity and sampling of the model as a run would open it (they key the cache)
        model = open_for(ev, args.base_url)
        identity, sampling = model.identity, model.sampling
    except SetupError as exc:  # no API key yet (Claude's identity is its name): plan from characters
        print(f"note: {exc}; input tokens are estimated from characters", file=sys.stderr)
        model, identity, sampling = None, ev.spec.model, {"temperature": ev.spec.temperature, **ev.spec.sampling}
    cache = None if args.no_cache else ResponseCache.under(Path(args.results))
    plan = estimate(ev, identity, sampling, cache, counter=None if args.chars else model)
    print(
        f"plan: {args.eval} on {identity}: {plural(plan.cases, 'case')}, "
        f"{plural(plan.cached, 'request')} answered by the response cache"
    )
    print(f"  input tokens counted by {plan.counted_by}; output tokens at most (every reply as long as its max_tokens)")
    table = pd.DataFrame(
        {
            "requests": [plan.direct.requests, plan.batch.requests],
            "waves": ["-", plan.waves],
            "batches": ["-", plan.batches],
            "input tokens": [plan.direct.input_tokens, plan.batch.input_tokens],
            "output tokens": [plan.direct.output_tokens, plan.batch.output_tokens],
        },
        index=["direct", "batch"],
    )
    if ev.spec.prices:
        table["cost (at most)"] = [f"{cost:,.2f}" for cost in costs(plan, ev.spec.prices).values()]
    print(table.to_string(formatters={c: "{:,}".format for c in ("requests", "input tokens", "output tokens")}))
    print(
        f"  of the direct requests, {plan.compaction.requests:,} compact (summaries, server compaction, context "
        f"edits): {plan.compaction.input_tokens:,} input tokens, at most {plan.compaction.output_tokens:,} output"
    )
    print(claude_line(ev))
    if ev.spec.prices:
        print(f"prices per million tokens: {ev.spec.prices.model_dump(exclude_none=True)} (batch: half, unless given)")
    else:
        print("cost: give --input-price and --output-price (per million tokens), or `prices:` in the eval")
    print("each batch wave waits for its batch to end (the provider allows up to 24 h)")
    return EXIT_OK


def claude_line(ev: Eval) -> str:
    """What of the eval needs Claude's API, and what the embedded model leaves out."""
    needs = [name for name, strategy in ev.strategies.items() if strategy.needs_claude]
    if ev.skipped:
        return f"  skipped on the embedded model (they need Claude's API): {', '.join(ev.skipped)}"
    return (
        f"  needs Claude's API (server-side): {', '.join(needs)}"
        if needs
        else "  needs nothing beyond the Messages API"
    )


def register(commands: Commands) -> None:
    _register_run(commands)
    _register_gate(commands)
    _register_others(commands)


def _register_run(commands: Commands) -> None:
    run = commands.add_parser("run", help="run an eval and print the results table")
    run_flags(run)
    run.add_argument(
        "--report",
        action="store_true",
        help="also write report.md, records.csv and report.html (plots, fact explorer) into RUN_DIR/report",
    )
    run.set_defaults(handler=cmd_run)


def _register_gate(commands: Commands) -> None:
    gate = commands.add_parser(
        "gate",
        help="run a candidate (or read --run) and compare it with a baseline; "
        "exit 0 pass, 100 regression, 1 cannot judge",
    )
    run_flags(gate, eval_required=False)
    gate.add_argument("--run", type=Path, metavar="RUN_DIR", help="gate a finished run instead of running")
    gate.add_argument("--baseline", type=Path, help="baseline folder (default: RESULTS/baselines/<eval name>)")
    gate.add_argument(
        "--against",
        metavar="PROMPT",
        help="the baseline prompt to compare with (default: the prompt of the same id, else the baseline's first)",
    )
    for name, field in GateSettings.model_fields.items():  # each threshold of the eval's `gate:`
        gate.add_argument(
            f"--{name.replace('_', '-')}",
            type=float,
            metavar="X",
            help=f"{flag_help(field.description)} (overrides the eval's gate.{name}; default {field.default})",
        )
    gate.set_defaults(handler=cmd_gate)


def _register_others(commands: Commands) -> None:
    baseline = commands.add_parser("baseline", help="record a finished run as the baseline the gate compares with")
    baseline.add_argument("run_dir", type=Path, help="the finished run to record as the baseline")
    baseline.add_argument("--name", help="baseline name (default: the eval's name)")
    baseline.add_argument("--results", default="results", help="where baselines/ lives")
    baseline.set_defaults(handler=cmd_baseline)

    judge_check = commands.add_parser(
        "judge-check",
        help="measure an LLM judge on labelled answers: how often it accepts wrong ones and rejects right ones",
    )
    judge_check.add_argument("--judge", required=True, metavar="MODEL", help="the judge, as --model takes it")
    judge_check.add_argument("--base-url", help="an Anthropic-compatible server for the judge")
    judge_check.add_argument("--results", default="results", help="where cache/ lives")
    judge_check.add_argument("--no-cache", action="store_true", help="do not reuse or store the judge's replies")
    judge_check.set_defaults(handler=cmd_judge_check)

    plan = commands.add_parser(
        "plan",
        help="estimate a run before paying for it: requests, batch waves, tokens, "
        "and the cost of direct and batch execution",
    )
    eval_flags(plan)
    plan.add_argument("--input-price", type=price, metavar="P", help="per million input tokens (any currency)")
    plan.add_argument("--output-price", type=price, metavar="P", help="per million output tokens")
    plan.add_argument("--batch-input-price", type=price, metavar="P", help="in a batch (default: half --input-price)")
    plan.add_argument("--batch-output-price", type=price, metavar="P", help="in a batch (default: half --output-price)")
    plan.add_argument(
        "--chars",
        action="store_true",
        help="estimate input tokens from characters instead of asking the endpoint's count_tokens",
    )
    plan.set_defaults(handler=cmd_plan)
