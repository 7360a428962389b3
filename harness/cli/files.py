"""Commands that read or write scenario and eval files without a model: `validate`, `schema`,
`import` and `generate`."""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .. import plugins

if TYPE_CHECKING:
    from ..execution.evals import Eval
from ..errors import InputError, plural
from ..sources.importers import AGENT_FORMATS
from .common import EXIT_ERROR, EXIT_OK, Commands, writable_folder


def power_line(ev: Eval, results: Path) -> str:
    """The smallest drop the gate can detect on this eval: from its baseline when there is one,
    else the best case the plan allows (every unit independent)."""
    from ..analysis import gate
    from ..analysis.stats import detectable_drop
    from ..execution.cases import plan_cases, probed_facts

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
        source = f"at best, before any baseline ({units} units per prompt in {plural(len(ev.scenarios), 'scenario')})"
    shown = ", ".join(
        f"{metric} {drop:.1%}" if drop is not None else f"{metric}: too few scenarios (under 5)"
        for metric, drop in drops.items()
    )
    verdict = (
        ""
        if all(d is not None and d <= settings.max_drop for d in drops.values())
        else f"; more than the gate's max_drop {settings.max_drop:.1%}: the gate cannot pass this eval"
    )
    return f"  detectable drop (alpha {settings.alpha:g}, power {settings.power:.0%}) {source}: {shown}{verdict}"


def is_eval(data: object) -> bool:
    """Whether a document is meant as an eval file rather than a scenario, by its keys: the format
    whose fields (or near misses of them: `budget` for `budgets`) it has more of."""
    import difflib

    from ..inputs.evalfile import EvalFile
    from ..inputs.scenario import Scenario

    if not isinstance(data, dict):
        return False

    def likeness(fields: list[str]) -> int:
        return sum(key in fields or bool(difflib.get_close_matches(str(key), fields, n=1, cutoff=0.8)) for key in data)

    return likeness(list(EvalFile.model_fields)) > likeness(list(Scenario.model_fields))


def cmd_validate(args: argparse.Namespace) -> int:
    from ..execution.cases import plan_cases, probed_facts
    from ..execution.evals import load_eval
    from ..inputs.files import load_yaml
    from ..inputs.probes import probes
    from ..inputs.scenario_file import load_scenario
    from .run import claude_line

    failed = 0
    for path in args.files:  # every file, and every independent error of each
        try:
            if is_eval(load_yaml(path).data):
                ev = load_eval(path)
                cases, facts = plan_cases(ev), probed_facts(ev)
                probed = sum(len(facts[c.scenario]) for c in cases) if ev.spec.probes else 0
                acted = sum(f.action is not None for c in cases for f in facts[c.scenario]) if ev.spec.probes else 0
                print(
                    f"{path}: ok ({plural(len(ev.scenarios), 'scenario')}, {plural(len(ev.prompts), 'prompt')}; "
                    f"a run plays {plural(len(cases), 'case')} and asks {plural(probed, 'probe')}"
                    + (f" and {plural(acted, 'action probe')})" if acted else ")")
                )
                print(power_line(ev, Path(args.results)))
                print(claude_line(ev))
            else:
                scenario = load_scenario(path)
                planted = probes(scenario)
                constraints = [f.fact_id for f in planted if f.constraint]
                print(
                    f"{path}: ok ({plural(len(scenario.turns), 'turn')}, {plural(len(planted), 'fact')}"
                    + (f"; negative constraints: {', '.join(constraints)}" if constraints else "")
                    + ")"
                )
        except InputError as exc:
            for error in (exc, *exc.others):
                print(f"error: {error}", file=sys.stderr)
            failed += 1
    if failed and len(args.files) > 1:
        print(f"{failed} of {plural(len(args.files), 'file')} have errors", file=sys.stderr)
    return EXIT_ERROR if failed else EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from ..inputs.evalfile import EvalFile
    from ..inputs.scenario import Scenario

    schema = Scenario.model_json_schema() if args.kind == "scenario" else EvalFile.model_json_schema()
    print(json.dumps(schema, indent=2))
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    writable_folder(args.out, "--out")
    if args.format == "locomo":
        return _import_locomo(args)
    from ..sources.importers.agent_logs import Options, import_logs

    options = Options(args.max_tool_output, not args.no_redact, args.facts, args.every)
    try:
        imported, refused = import_logs(args.format, args.files, args.out, options)
    except InputError as exc:
        return _nothing_imported([exc, *exc.others])
    for result in imported:
        print("\n".join(result.summary()))
    for error in refused:
        print(f"refused: {error}", file=sys.stderr)
    print(
        f"wrote {plural(len(imported), 'scenario')} to {args.out}"
        + (f" ({plural(len(refused), 'log')} refused, above)" if refused else "")
        + f"; next: `harness validate {args.out}/*.yaml`, then an eval over them (see docs/agent-sessions.md)"
    )
    return EXIT_OK


def _import_locomo(args: argparse.Namespace) -> int:
    from ..inputs.probes import probes
    from ..sources.importers.locomo import import_locomo

    written, errors = [], []
    for file in args.files:
        try:
            imported, refused = import_locomo(file, args.out, strict=args.strict)
        except InputError as exc:
            imported, refused = [], [exc, *exc.others]
        written += imported
        errors += refused
    if not written:
        return _nothing_imported(errors)
    for error in errors:
        print(f"refused: {error}", file=sys.stderr)
    for path, scenario, notes in written:
        facts = probes(scenario)
        kinds = collections.Counter(f.kind for f in facts)
        print(
            f"{path}: {plural(len(scenario.turns), 'turn')}, {plural(len(facts), 'fact')} "
            f"({', '.join(f'{n} {kind}' for kind, n in sorted(kinds.items()))}), "
            f"{plural(len(notes), 'item')} left out"
        )
        for note in notes:
            print(f"  {note}")
    return EXIT_OK


def _nothing_imported(errors: list[InputError]) -> int:
    """Every log or conversation was refused: each said (one alone as the command's one-line error)."""
    if len(errors) == 1:
        raise errors[0]
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    print(f"error: nothing imported ({plural(len(errors), 'refusal')}, above)", file=sys.stderr)
    return EXIT_ERROR


def cmd_generate(args: argparse.Namespace) -> int:
    if args.source is not None:
        return _variants(args)
    if args.kind == "coding":
        from ..sources.generators.coding import Options as CodingOptions
        from ..sources.generators.coding import generate as generate_coding

        try:
            paths = generate_coding(
                CodingOptions(scenarios=args.scenarios, steps=args.steps, file_chars=args.file_chars, seed=args.seed),
                args.out,
            )
        except ValueError as exc:
            raise InputError("harness generate", str(exc)) from None
        print(
            f"wrote {plural(len(paths), 'coding session')} of {plural(args.steps, 'tool step')} to {args.out} "
            f"(seed {args.seed}; six kinds of work in three toolchains, in turn)"
        )
        return EXIT_OK
    from ..sources.generators.chat import Options, generate, parse_filler

    try:
        chars, turns = parse_filler(args.filler)
        options = Options(
            args.scenarios, args.facts, chars, turns, args.seed, args.supersede, args.distract, args.budget
        )
        paths = generate(options, args.out)
    except ValueError as exc:
        raise InputError("harness generate", str(exc)) from None
    print(f"wrote {plural(len(paths), 'scenario')} of {plural(args.facts, 'fact')} to {args.out} (seed {args.seed})")
    return EXIT_OK


def _variants(args: argparse.Namespace) -> int:
    from ..sources.generators.variants import generate_variants

    if args.variants < 1:
        raise InputError("harness generate", f"--variants {args.variants}: at least 1")
    paths, values, kept = generate_variants(args.source, args.variants, args.seed, args.out)
    print(
        f"wrote {plural(len(paths), 'variant')} of {args.source} to {args.out}: {plural(values, 'value')} re-drawn "
        f"in each, everywhere they occur"
        + (f"; kept as they are (paraphrased or regex facts): {', '.join(kept)}" if kept else "")
    )
    print("  variants share the session's structure: they add values, not sessions (see `harness generate --help`)")
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from ..models.local import catalog_model
    from ..sources.starter import write_starter

    embedded = catalog_model(args.model)
    install = (
        f"harness models install {embedded.name}  # its weights, verified by SHA-256"
        if embedded
        else f"true  # {args.model} needs no local weights"
    )
    written = write_starter(args.dir, args.model, install, args.force, args.kind)
    scenarios = [p for p in written if p.suffix == ".yaml" and "scenarios" in p.parts]
    for path in written:
        if path not in scenarios:
            print(f"wrote {path}")
    print(f"wrote {plural(len(scenarios), 'generated scenario')} in {scenarios[0].parent}")
    if args.kind == "chat":
        print(
            "  (your agent calls tools? `harness init --kind agent`, in a folder without this starter, gates on "
            "coding-agent sessions instead, by kind of fact: files changed, plan, constraints, identifiers)"
        )
    readme = (args.dir / "evals" / "README.md").read_text(encoding="utf-8")
    print("\nNext, record the first baseline (also in evals/README.md):\n" + readme.split("```sh\n")[1].split("```")[0])
    return EXIT_OK


def register(commands: Commands) -> None:
    _register_init(commands)
    _register_checks(commands)
    _register_import(commands)
    _register_generate(commands)


def _register_init(commands: Commands) -> None:
    init = commands.add_parser(
        "init",
        help="write a starter into your repository: your summary prompt, a gate eval "
        "over generated scenarios, and a CI workflow that gates prompt changes",
    )
    init.add_argument("dir", type=Path, nargs="?", default=Path("."), help="the repository (default: here)")
    init.add_argument(
        "--model",
        default="local",
        help="the model the gate runs on (default: local, the default embedded model; `harness models` lists them)",
    )
    init.add_argument(
        "--kind",
        choices=["chat", "agent"],
        default="chat",
        help="what the gate's scenarios are: chats (default), or coding-agent sessions for an agent "
        "that calls tools (gated per kind of fact: files changed, plan, constraints, ...)",
    )
    init.add_argument("--force", action="store_true", help="overwrite the starter's files where they exist")
    init.set_defaults(handler=cmd_init)


def _register_checks(commands: Commands) -> None:
    validate = commands.add_parser("validate", help="check scenario and eval files without calling a model")
    validate.add_argument("files", nargs="+", metavar="FILE", help="scenario and eval files")
    validate.add_argument("--results", default="results", help="where baselines/ lives (for the detectable drop)")
    validate.set_defaults(handler=cmd_validate)

    schema = commands.add_parser("schema", help="print the JSON Schema of scenario or eval files")
    schema.add_argument(
        "kind", nargs="?", choices=["scenario", "eval"], default="scenario", help="which file format (default scenario)"
    )
    schema.set_defaults(handler=cmd_schema)


def _register_import(commands: Commands) -> None:
    importer = commands.add_parser(
        "import",
        help="convert agent logs or a public benchmark into scenario files",
        description="Agent logs: claude-code (session .jsonl), codex (rollout .jsonl), "
        "swe-agent (.traj), mini-swe-agent (.traj.json), openai (chat messages: "
        ".json or .jsonl). Benchmark: locomo (LoCoMo JSON).",
    )
    importer.add_argument(
        "format",
        choices=["locomo", *AGENT_FORMATS, *plugins.installed("importers")],
        help="the logs' format, ours or an installed package's",
    )
    importer.add_argument("files", nargs="+", type=Path, metavar="FILE", help="the logs (or LoCoMo files) to import")
    importer.add_argument("--out", type=Path, required=True, help="folder for the scenario files")
    importer.add_argument(
        "--max-tool-output",
        type=int,
        metavar="CHARS",
        help="cut tool outputs longer than this (default: kept whole, as compaction meets them)",
    )
    importer.add_argument(
        "--no-redact",
        action="store_true",
        help="keep secrets (API keys, tokens, passwords, private keys) as the log has them",
    )
    importer.add_argument(
        "--facts",
        type=Path,
        metavar="OVERLAY",
        help="a YAML file of facts added by hand (decisions, say): `facts:` each with its `turn`",
    )
    importer.add_argument(
        "--every",
        type=int,
        default=4,
        metavar="STEPS",
        help="ask what the agent was about to do every this many tool steps (default 4)",
    )
    importer.add_argument(
        "--strict",
        action="store_true",
        help="locomo: an item whose evidence cannot be found is an error (default: left out, listed)",
    )
    importer.set_defaults(handler=cmd_import)


def _register_generate(commands: Commands) -> None:
    generate = commands.add_parser(
        "generate",
        help="write seeded synthetic scenarios built for statistical power",
        description="Chats of planted facts (--kind chat), coding-agent sessions (--kind coding), or variants of one "
        "scenario (--from FILE --variants N): each fact's value re-drawn everywhere it occurs, the rest "
        "kept. Variants share their source's structure (turns, tool outputs, cut points): they add "
        "values to remember, not independent sessions.",
    )
    generate.add_argument("--out", type=Path, required=True, help="folder for the scenario files")
    generate.add_argument("--kind", choices=["chat", "coding"], default="chat", help="what to generate (default chat)")
    generate.add_argument("--scenarios", type=int, default=20, help="how many scenarios (default 20)")
    generate.add_argument("--steps", type=int, default=30, help="coding: tool steps per session (default 30)")
    generate.add_argument(
        "--file-chars",
        type=int,
        default=900,
        help="coding: characters of each source file the agent reads (default 900)",
    )
    generate.add_argument(
        "--from",
        dest="source",
        type=Path,
        metavar="FILE",
        help="a scenario (an imported session, say) to write variants of",
    )
    generate.add_argument("--variants", type=int, default=5, help="with --from: how many variants (default 5)")
    generate.add_argument("--facts", type=int, default=12, help="facts per scenario (default 12)")
    generate.add_argument(
        "--filler",
        default="400",
        help="neutral text between facts: characters (400) or exchanges (3turns); default 400",
    )
    generate.add_argument("--seed", type=int, default=0, help="same seed, same files (default 0)")
    generate.add_argument("--supersede", type=float, default=0.15, help="share of facts changed later (default 0.15)")
    generate.add_argument(
        "--distract", type=float, default=0.25, help="share of facts planted beside a near-miss value (default 0.25)"
    )
    generate.add_argument(
        "--budget", type=int, metavar="CHARS", help="refuse scenarios too short to compact at this budget in characters"
    )
    generate.set_defaults(handler=cmd_generate)
