"""The `harness` command line."""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
from pathlib import Path

from .inputs import InputError

EXIT_OK, EXIT_ERROR = 0, 1


def _at_least(minimum: int):
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


def _writable_folder(path: Path, flag: str) -> Path:
    """Checked before any model call: a run must be able to save what it measures."""
    if path.exists() and not path.is_dir():
        raise InputError(path, f"{flag}: not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as exc:
        raise InputError(path, f"{flag}: cannot write here ({exc.strerror})") from None
    return path


def _model_flags(parser: argparse.ArgumentParser, default: str | None) -> None:
    parser.add_argument("--model", default=default,
                        help="'local' (embedded SmolLM2), a .gguf path, a claude-... name, or a name for --base-url")
    parser.add_argument("--base-url", help="an Anthropic-compatible server (llama-server, Ollama, a proxy)")


def _run(args: argparse.Namespace, control: bool = True):
    """Run (or resume) the eval named on the command line; return it and its run folder.
    `control`: also run the eval's keeps-nothing control prompt (a gate reads the baseline's)."""
    from .batch import BatchEndpoint
    from .cache import ResponseCache
    from .config import load_eval
    from .models import default_jobs, open_model
    from .run import run_eval

    ev = load_eval(args.eval, prompts=args.prompt, model=args.model, budgets=args.budget, repeats=args.repeats,
                   probes=False if args.no_probes else None, control=control, scenario_ids=args.scenario,
                   prompt_ids=args.prompt_id, limit=args.limit, batch=args.batch)
    if ev.spec.repeats > ev.repeats:
        print(f"warning: {ev.spec.repeats} repeats at temperature 0 would be copies of one answer; collapsed to 1 "
              "(set a temperature above 0 for independent samples)", file=sys.stderr)
    _writable_folder(Path(args.results), "--results")
    base_url = args.base_url or ev.spec.base_url
    jobs = args.jobs or default_jobs(ev.spec.model, base_url)
    client = open_model(ev.spec.model, base_url=base_url, temperature=ev.spec.temperature, slots=jobs,
                        sampling=ev.spec.sampling)
    client.check()  # a dead or wrong endpoint stops here, not after a run of errors
    batch = BatchEndpoint(client.client) if ev.spec.batch else None
    if batch:
        batch.check()
    judge = open_model(args.judge) if args.judge else None
    if judge:
        judge.check()
    if args.no_cache and args.resume and ev.spec.batch:
        print("warning: without the response cache, the requests the interrupted run already collected are sent "
              "again (only batches still in flight are collected)", file=sys.stderr)
    if not args.no_cache:
        client.cache = ResponseCache(Path(args.results) / "cache" / "responses.sqlite")
        if judge:
            judge.cache = client.cache
    return ev, run_eval(ev, client, Path(args.results), resume=args.resume, judge=judge,
                        progress=not args.quiet, jobs=jobs, batch=batch)


def _cmd_run(args: argparse.Namespace) -> int:
    from .records import load_run
    from .report import text_report, write_report

    ev, run_dir = _run(args)
    print(text_report(run_dir))
    if args.report:
        for kind, path in write_report(run_dir).items():
            print(f"{kind}: {path}")
    else:
        print(f"Plots and the fact explorer: harness report {run_dir} (writes {run_dir}/report/report.html)")
    failed, observed = load_run(run_dir).errors()
    limit = ev.spec.gate.max_error_rate
    if observed and failed / observed > limit:
        print(f"error: {failed} of {observed} of the run's observations failed with errors ({failed / observed:.0%}, "
              f"limit {limit:.0%} from gate.max_error_rate): see {run_dir}/records.jsonl", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def _cmd_compare(args: argparse.Namespace) -> int:
    from .compare import PAIR_KEY, VARIANT_KEY, describe, pair_units, recall_units, retention_units
    from .records import METRICS, load_run

    run_a = load_run(args.run_a)
    run_b = load_run(args.run_b) if args.run_b else run_a
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
            raise InputError(flag if spec else args.run_a, (
                f"no prompt {prompt!r} with strategy {strategy} in this run" if prompt else
                f"strategy {strategy} ran with several prompts; name one") + f" (it has: {', '.join(existing)})")
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
    units = {"retention": retention_units, "recall": recall_units}
    print("\n\n".join(
        describe(pair_units(units[metric](rows(run_a, metric, strategy_a, prompt_a)),
                            units[metric](rows(run_b, metric, strategy_b, prompt_b)),
                            label("A", strategy_a, prompt_a), label("B", strategy_b, prompt_b), metric, key),
                 flips=args.flips)
        for metric in METRICS if not run_a.rows(metric).empty and not run_b.rows(metric).empty))
    return EXIT_OK


def _cmd_gate(args: argparse.Namespace) -> int:
    from . import gate
    from .config import load_eval
    from .records import load_manifest, load_run

    def baseline_dir(name: str) -> Path:
        return Path(args.baseline or Path(args.results) / "baselines" / name)

    try:
        if not (args.run or args.eval):
            raise gate.CannotJudge("give an eval file to run, or --run RUN_DIR to gate a finished run")
        if not args.run:
            # Everything that can stop the gate is checked before minutes of model time are spent.
            ev = load_eval(args.eval, prompts=args.prompt, budgets=args.budget, repeats=args.repeats, control=False)
            baseline = gate.load_baseline(baseline_dir(ev.spec.name))
            for prompt in ev.prompts:
                gate.resolve_against(prompt.id, baseline, args.against)
        run_dir = args.run or _run(args, control=False)[1]
        about = load_manifest(run_dir)
        # The thresholds the run was made with (its eval file's `gate:`), then the flags.
        settings = gate.settings_with(gate.manifest_settings(about), max_drop=args.max_drop, alpha=args.alpha,
                                      floor=args.floor, max_error_rate=args.max_error_rate,
                                      max_summary_growth=args.max_summary_growth)
        baseline = gate.load_baseline(baseline_dir(about.name))
        verdict = gate.evaluate(baseline, load_run(run_dir), settings, args.against)
    except gate.CannotJudge as exc:
        print(f"gate: cannot judge: {exc}", file=sys.stderr)
        return gate.EXIT_CANNOT_JUDGE
    paths = gate.write_outputs(verdict, settings, Path(run_dir) / "gate")
    summary = paths["markdown"].read_text()
    print(summary)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as file:
            file.write(summary)
    print(f"junit: {paths['junit']}\nmarkdown: {paths['markdown']}")
    return verdict.exit_code


def _cmd_baseline(args: argparse.Namespace) -> int:
    from .gate import record_baseline
    from .records import load_manifest

    name = args.name or load_manifest(args.run_dir).name
    print(f"baseline recorded: {record_baseline(args.run_dir, Path(args.results) / 'baselines', name)}")
    return EXIT_OK


def _cmd_chat(args: argparse.Namespace) -> int:
    from .agent import CHAT_TOOLS, Agent, chat
    from .compaction import SEED_SUMMARY_PROMPT, CompactionSettings
    from .models import default_summary_layout, open_model

    prompt = Path(args.summary_prompt).read_text().strip() if args.summary_prompt else SEED_SUMMARY_PROMPT
    client = open_model(args.model, base_url=args.base_url)
    client.check()
    settings = CompactionSettings(prompt, args.keep_recent, args.summary_max_tokens, args.unit,
                                  layout=default_summary_layout(args.model, args.base_url))
    print(f"Chatting with {client.identity}; compaction above {args.budget} {args.unit}. "
          "Type 'quit' or Ctrl-D to leave.")
    chat(Agent(client, CHAT_TOOLS, args.budget, settings=settings), show_summaries=not args.hide_summaries)
    return EXIT_OK


def _cmd_import(args: argparse.Namespace) -> int:
    from .locomo import import_locomo
    from .scenario import probes

    for path, scenario, notes in import_locomo(args.file, args.out, strict=args.strict):
        facts = probes(scenario)
        kinds = collections.Counter(f.kind for f in facts)
        print(f"{path}: {len(scenario.turns)} turns, {len(facts)} facts "
              f"({', '.join(f'{n} {kind}' for kind, n in sorted(kinds.items()))}), {len(notes)} items left out")
        for note in notes:
            print(f"  {note}")
    return EXIT_OK


def _cmd_generate(args: argparse.Namespace) -> int:
    from .generate import Options, generate, parse_filler

    try:
        chars, turns = parse_filler(args.filler)
        options = Options(args.scenarios, args.facts, chars, turns, args.seed, args.supersede, args.distract,
                          args.budget)
        paths = generate(options, args.out)
    except ValueError as exc:
        raise InputError("harness generate", str(exc)) from None
    print(f"wrote {len(paths)} scenarios of {args.facts} facts to {args.out} (seed {args.seed})")
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    from .config import EvalFile
    from .scenario import Scenario

    model = {"scenario": Scenario, "eval": EvalFile}[args.kind]
    print(json.dumps(model.model_json_schema(), indent=2))
    return EXIT_OK


def _power_line(ev, results: Path) -> str:
    """The smallest drop the gate can detect on this eval: from its baseline when there is one,
    else the best case the plan allows (every unit independent)."""
    from . import gate
    from .run import plan_cases, probed_facts
    from .stats import detectable_drop

    settings = ev.spec.gate
    where = results / "baselines" / ev.spec.name
    try:
        drops = gate.detectable_drops(gate.load_baseline(where), settings)
        source = f"from the baseline at {where}"
    except gate.CannotJudge:
        facts = probed_facts(ev)
        first = ev.prompts[0].id if ev.prompts else None
        units = sum(len(facts[c.scenario]) for c in plan_cases(ev) if c.prompt == first)
        drops = {"per prompt": detectable_drop(units, len(ev.scenarios), 1.0, settings.alpha, settings.power)}
        source = f"at best, before any baseline ({units} units per prompt in {len(ev.scenarios)} scenarios)"
    shown = ", ".join(f"{metric} {drop:.1%}" if drop is not None else f"{metric}: too few scenarios (under 5)"
                      for metric, drop in drops.items())
    verdict = ("" if all(d is not None and d <= settings.max_drop for d in drops.values())
               else f"; more than the gate's max_drop {settings.max_drop:.1%}: the gate cannot pass this eval")
    return (f"  detectable drop (alpha {settings.alpha:g}, power {settings.power:.0%}) {source}: {shown}{verdict}")


def _cmd_validate(args: argparse.Namespace) -> int:
    from .config import load_eval
    from .inputs import load_yaml
    from .render import plural
    from .run import plan_cases, probed_facts
    from .scenario import load_scenario, probes

    failed = 0
    for path in args.files:  # every file, and every independent error of each
        try:
            data = load_yaml(path).data
            if isinstance(data, dict) and "turns" not in data and "budgets" in data:
                ev = load_eval(path)
                cases, facts = plan_cases(ev), probed_facts(ev)
                probed = sum(len(facts[c.scenario]) for c in cases) if ev.spec.probes else 0
                print(f"{path}: ok ({plural(len(ev.scenarios), 'scenario')}, {plural(len(ev.prompts), 'prompt')}; "
                      f"a run plays {plural(len(cases), 'case')} and asks {plural(probed, 'probe')})")
                print(_power_line(ev, Path(args.results)))
            else:
                scenario = load_scenario(path)
                print(f"{path}: ok ({len(scenario.turns)} turns, {len(probes(scenario))} facts)")
        except InputError as exc:
            for error in (exc, *exc.others):
                print(f"error: {error}", file=sys.stderr)
            failed += 1
    if failed and len(args.files) > 1:
        print(f"{failed} of {len(args.files)} files have errors", file=sys.stderr)
    return EXIT_ERROR if failed else EXIT_OK


def _price(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"a price per million tokens is a number of 0 or more, not {text!r}")
    return value


def _cmd_plan(args: argparse.Namespace) -> int:
    import pandas as pd

    from .cache import ResponseCache
    from .config import load_eval
    from .models import SetupError, open_model
    from .plan import costs, estimate
    from .render import plural

    prices = {key: value for key, value in (("input", args.input_price), ("output", args.output_price),
                                            ("batch_input", args.batch_input_price),
                                            ("batch_output", args.batch_output_price)) if value is not None}
    ev = load_eval(args.eval, prompts=args.prompt, model=args.model, budgets=args.budget, repeats=args.repeats,
                   probes=False if args.no_probes else None, scenario_ids=args.scenario, prompt_ids=args.prompt_id,
                   limit=args.limit, prices=prices or None)
    base_url = args.base_url or ev.spec.base_url
    try:  # the identity and sampling of the model as a run would open it (they key the cache)
        model = open_model(ev.spec.model, base_url=base_url, temperature=ev.spec.temperature,
                           sampling=ev.spec.sampling)
        identity, sampling = model.identity, model.sampling
    except SetupError as exc:  # no API key yet (Claude's identity is its name): plan from characters
        print(f"note: {exc}; input tokens are estimated from characters", file=sys.stderr)
        model, identity, sampling = None, ev.spec.model, {"temperature": ev.spec.temperature, **ev.spec.sampling}
    cache = None if args.no_cache else ResponseCache(Path(args.results) / "cache" / "responses.sqlite")
    plan = estimate(ev, identity, sampling, cache, counter=None if args.chars else model)
    print(f"plan: {args.eval} on {identity}: {plural(plan.cases, 'case')}, "
          f"{plan.cached:,} requests answered by the response cache")
    print(f"  input tokens counted by {plan.counted_by}; output tokens at most (every reply as long as its "
          "max_tokens)")
    table = pd.DataFrame({"requests": [plan.direct.requests, plan.batch.requests],
                          "waves": ["-", plan.waves], "batches": ["-", plan.batches],
                          "input tokens": [plan.direct.input_tokens, plan.batch.input_tokens],
                          "output tokens": [plan.direct.output_tokens, plan.batch.output_tokens]},
                         index=["direct", "batch"])
    if ev.spec.prices:
        table["cost (at most)"] = [f"{cost:,.2f}" for cost in costs(plan, ev.spec.prices).values()]
    print(table.to_string(formatters={c: "{:,}".format for c in ("requests", "input tokens", "output tokens")}))
    if ev.spec.prices:
        print(f"prices per million tokens: {ev.spec.prices.model_dump(exclude_none=True)} (batch: half, unless given)")
    else:
        print("cost: give --input-price and --output-price (per million tokens), or `prices:` in the eval")
    print("each batch wave waits for its batch to end (the provider allows up to 24 h)")
    return EXIT_OK


def _cmd_runs(args: argparse.Namespace) -> int:
    from .report import run_index

    index = run_index(Path(args.results) / "runs")
    print(index.to_string() if len(index) else f"no runs in {Path(args.results) / 'runs'}")
    return EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    from .report import text_report, write_report

    if args.run_dir is None:  # no run named: the index of runs to choose from
        return _cmd_runs(args)
    if not (args.run_dir / "manifest.json").is_file():
        runs = Path(args.results) / "runs"
        folders = sorted((p for p in runs.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime) if runs.is_dir() else []
        known = [p.name for p in reversed(folders)][:8]
        listing = f"recent runs in {runs}: {', '.join(known)}" if known else f"there are no runs in {runs}"
        raise InputError(args.run_dir, f"not a run folder (no manifest.json); {listing}")
    print(text_report(args.run_dir))
    for kind, path in write_report(args.run_dir, args.out).items():
        print(f"{kind}: {path}")
    return EXIT_OK


def _eval_flags(parser: argparse.ArgumentParser, eval_required: bool = True) -> None:
    """The eval to run and the part of it to run."""
    parser.add_argument("eval", nargs=None if eval_required else "?", help="an eval file, e.g. evals/smoke.yaml")
    parser.add_argument("--prompt", action="append", metavar="FILE",
                        help="run against this summary prompt instead of the eval's (repeatable)")
    _model_flags(parser, None)
    parser.add_argument("--budget", action="append", help="override the budgets (repeatable): 1200 or 40%%")
    parser.add_argument("--repeats", type=_at_least(1))
    parser.add_argument("--scenario", action="append", metavar="ID", help="run only this scenario (repeatable)")
    parser.add_argument("--prompt-id", action="append", metavar="ID",
                        help="run only this summary prompt of the eval (repeatable)")
    parser.add_argument("--limit", type=_at_least(1), metavar="N", help="run only the first N cases of the plan")
    parser.add_argument("--no-probes", action="store_true",
                        help="measure summary retention only, without probe questions (several times cheaper)")
    parser.add_argument("--results", default="results", help="where runs/, cache/ and baselines/ live")
    parser.add_argument("--no-cache", action="store_true", help="do not reuse or store model responses")


def _run_flags(parser: argparse.ArgumentParser, eval_required: bool = True) -> None:
    _eval_flags(parser, eval_required)
    parser.add_argument("--judge", metavar="MODEL", help="ask this model to grade answers the matcher calls 'forgot'")
    parser.add_argument("--resume", type=Path, metavar="RUN_DIR", help="finish an interrupted run")
    parser.add_argument("--jobs", type=_at_least(1), metavar="N",
                        help="cases run at once (default: 1 on a local model, for reproducible answers; 8 on remote ones)")
    parser.add_argument("--batch", action="store_true",
                        help="send the requests in waves on the Message Batches API (Claude, or a --base-url "
                             "serving /v1/messages/batches): half price, results within 24 hours")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run an eval and print the results table")
    _run_flags(run)
    run.add_argument("--report", action="store_true",
                     help="also write report.md, records.csv and report.html (plots, fact explorer) into RUN_DIR/report")
    run.set_defaults(handler=_cmd_run)

    compare = commands.add_parser("compare", help="paired comparison of two runs, or of two prompts in one run")
    compare.add_argument("run_a", type=Path)
    compare.add_argument("run_b", type=Path, nargs="?", help="omit to compare prompts within RUN_A")
    compare.add_argument("--a", action="append", metavar="VARIANT",
                         help="side A: a prompt id of --strategy, a strategy, or strategy:prompt (summary:seed)")
    compare.add_argument("--b", action="append", metavar="VARIANT", help="side B, as --a")
    compare.add_argument("--strategy", default="summary", help="which strategy's records to pair (default summary)")
    compare.add_argument("--flips", type=_at_least(0), default=20, help="flipped facts listed each way (default 20)")
    compare.set_defaults(handler=_cmd_compare)

    gate_ = commands.add_parser("gate", help="run a candidate (or read --run) and compare it with a baseline; "
                                             "exit 0 pass, 100 regression, 1 cannot judge")
    _run_flags(gate_, eval_required=False)
    gate_.add_argument("--run", type=Path, metavar="RUN_DIR", help="gate a finished run instead of running")
    gate_.add_argument("--baseline", type=Path, help="baseline folder (default: RESULTS/baselines/<eval name>)")
    gate_.add_argument("--against", metavar="PROMPT", help="the baseline prompt to compare with (default: the "
                                                            "prompt of the same id, else the baseline's first)")
    gate_.add_argument("--max-drop", type=float)
    gate_.add_argument("--alpha", type=float)
    gate_.add_argument("--floor", type=float)
    gate_.add_argument("--max-error-rate", type=float)
    gate_.add_argument("--max-summary-growth", type=float, help="fail when median summary tokens grow more than this "
                                                                 "share over the baseline's (default 0.25)")
    gate_.set_defaults(handler=_cmd_gate)

    baseline = commands.add_parser("baseline", help="record a finished run as the baseline the gate compares with")
    baseline.add_argument("run_dir", type=Path)
    baseline.add_argument("--name", help="baseline name (default: the eval's name)")
    baseline.add_argument("--results", default="results")
    baseline.set_defaults(handler=_cmd_baseline)

    chat = commands.add_parser("chat", help="talk to the agent and watch compaction fire")
    _model_flags(chat, "local")
    chat.add_argument("--budget", type=_at_least(1), default=1200, help="compact above this size (default 1200)")
    chat.add_argument("--unit", choices=["chars", "tokens"], default="chars")
    chat.add_argument("--keep-recent", type=_at_least(0), default=1, help="exchanges kept verbatim (default 1)")
    chat.add_argument("--summary-prompt", metavar="FILE", help="summary prompt file (default: the seed's)")
    chat.add_argument("--summary-max-tokens", type=_at_least(1), default=512)
    chat.add_argument("--hide-summaries", action="store_true", help="do not print each new summary")
    chat.set_defaults(handler=_cmd_chat)

    importer = commands.add_parser("import", help="convert a public benchmark into scenario files")
    importer.add_argument("format", choices=["locomo"])
    importer.add_argument("file", type=Path, help="a LoCoMo JSON file (one conversation, or the list of samples)")
    importer.add_argument("--out", type=Path, required=True, help="folder for the scenario files")
    importer.add_argument("--strict", action="store_true",
                          help="an item whose evidence cannot be found is an error (default: left out and listed)")
    importer.set_defaults(handler=_cmd_import)

    generate = commands.add_parser("generate", help="write seeded synthetic scenarios built for statistical power")
    generate.add_argument("--out", type=Path, required=True, help="folder for the scenario files")
    generate.add_argument("--scenarios", type=int, default=20, help="how many scenarios (default 20)")
    generate.add_argument("--facts", type=int, default=12, help="facts per scenario (default 12)")
    generate.add_argument("--filler", default="400",
                          help="neutral text between facts: characters (400) or exchanges (3turns); default 400")
    generate.add_argument("--seed", type=int, default=0, help="same seed, same files (default 0)")
    generate.add_argument("--supersede", type=float, default=0.15, help="share of facts changed later (default 0.15)")
    generate.add_argument("--distract", type=float, default=0.25,
                          help="share of facts planted beside a near-miss value (default 0.25)")
    generate.add_argument("--budget", type=int, metavar="CHARS",
                          help="refuse scenarios too short to compact at this budget in characters")
    generate.set_defaults(handler=_cmd_generate)

    schema = commands.add_parser("schema", help="print the JSON Schema of scenario or eval files")
    schema.add_argument("kind", nargs="?", choices=["scenario", "eval"], default="scenario")
    schema.set_defaults(handler=_cmd_schema)

    validate = commands.add_parser("validate", help="check scenario and eval files without calling a model")
    validate.add_argument("files", nargs="+")
    validate.add_argument("--results", default="results", help="where baselines/ lives (for the detectable drop)")
    validate.set_defaults(handler=_cmd_validate)

    report = commands.add_parser("report", help="print a run's tables; write markdown, CSV and HTML")
    report.add_argument("run_dir", type=Path, nargs="?", help="a run folder (none: list the runs)")
    report.add_argument("--results", default="results", help="where runs/ lives (to list runs)")
    report.add_argument("--out", type=Path, help="where to write (default: RUN_DIR/report)")
    report.set_defaults(handler=_cmd_report)

    plan = commands.add_parser("plan", help="estimate a run before paying for it: requests, batch waves, tokens, "
                                            "and the cost of direct and batch execution")
    _eval_flags(plan)
    plan.add_argument("--input-price", type=_price, metavar="P", help="per million input tokens (any currency)")
    plan.add_argument("--output-price", type=_price, metavar="P", help="per million output tokens")
    plan.add_argument("--batch-input-price", type=_price, metavar="P", help="in a batch (default: half --input-price)")
    plan.add_argument("--batch-output-price", type=_price, metavar="P",
                      help="in a batch (default: half --output-price)")
    plan.add_argument("--chars", action="store_true",
                      help="estimate input tokens from characters instead of asking the endpoint's count_tokens")
    plan.set_defaults(handler=_cmd_plan)

    runs = commands.add_parser("runs", help="list the runs in results/runs: eval, model, date, status, best variant")
    runs.add_argument("--results", default="results")
    runs.set_defaults(handler=_cmd_runs)
    return parser


def main(argv: list[str] | None = None) -> int:
    from .models import SetupError

    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (InputError, SetupError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        # The reader stopped reading (`harness schema | head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except KeyboardInterrupt as exc:  # a batch run says which batches keep running
        print(f"\ninterrupted: finished cases are saved; "
              f"{exc or '`harness run EVAL --resume RUN_DIR` completes the run'}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
