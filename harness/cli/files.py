"""Commands that read or write scenario and eval files without a model: `validate`, `schema`,
`import` and `generate`."""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from ..errors import InputError, plural
from .common import EXIT_ERROR, EXIT_OK, writable_folder


def power_line(ev, results: Path) -> str:
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
    shown = ", ".join(f"{metric} {drop:.1%}" if drop is not None else f"{metric}: too few scenarios (under 5)"
                      for metric, drop in drops.items())
    verdict = ("" if all(d is not None and d <= settings.max_drop for d in drops.values())
               else f"; more than the gate's max_drop {settings.max_drop:.1%}: the gate cannot pass this eval")
    return (f"  detectable drop (alpha {settings.alpha:g}, power {settings.power:.0%}) {source}: {shown}{verdict}")


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
    from ..inputs.scenario import load_scenario, probes

    failed = 0
    for path in args.files:  # every file, and every independent error of each
        try:
            if is_eval(load_yaml(path).data):
                ev = load_eval(path)
                cases, facts = plan_cases(ev), probed_facts(ev)
                probed = sum(len(facts[c.scenario]) for c in cases) if ev.spec.probes else 0
                print(f"{path}: ok ({plural(len(ev.scenarios), 'scenario')}, {plural(len(ev.prompts), 'prompt')}; "
                      f"a run plays {plural(len(cases), 'case')} and asks {plural(probed, 'probe')})")
                print(power_line(ev, Path(args.results)))
            else:
                scenario = load_scenario(path)
                facts = probes(scenario)
                constraints = [f.fact_id for f in facts if f.constraint]
                print(f"{path}: ok ({plural(len(scenario.turns), 'turn')}, {plural(len(facts), 'fact')}"
                      + (f"; negative constraints: {', '.join(constraints)}" if constraints else "") + ")")
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

    model = {"scenario": Scenario, "eval": EvalFile}[args.kind]
    print(json.dumps(model.model_json_schema(), indent=2))
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from ..inputs.importers.locomo import import_locomo
    from ..inputs.scenario import probes

    writable_folder(args.out, "--out")
    for path, scenario, notes in import_locomo(args.file, args.out, strict=args.strict):
        facts = probes(scenario)
        kinds = collections.Counter(f.kind for f in facts)
        print(f"{path}: {plural(len(scenario.turns), 'turn')}, {plural(len(facts), 'fact')} "
              f"({', '.join(f'{n} {kind}' for kind, n in sorted(kinds.items()))}), "
              f"{plural(len(notes), 'item')} left out")
        for note in notes:
            print(f"  {note}")
    return EXIT_OK


def cmd_generate(args: argparse.Namespace) -> int:
    from ..inputs.generators.chat import Options, generate, parse_filler

    try:
        chars, turns = parse_filler(args.filler)
        options = Options(args.scenarios, args.facts, chars, turns, args.seed, args.supersede, args.distract,
                          args.budget)
        paths = generate(options, args.out)
    except ValueError as exc:
        raise InputError("harness generate", str(exc)) from None
    print(f"wrote {plural(len(paths), 'scenario')} of {plural(args.facts, 'fact')} to {args.out} (seed {args.seed})")
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from ..inputs.starter import write_starter

    written = write_starter(args.dir, args.model, args.force)
    scenarios = [p for p in written if p.suffix == ".yaml" and "scenarios" in p.parts]
    for path in written:
        if path not in scenarios:
            print(f"wrote {path}")
    print(f"wrote {plural(len(scenarios), 'generated scenario')} in {scenarios[0].parent}")
    readme = (args.dir / "evals" / "README.md").read_text(encoding="utf-8")
    print("\nNext, record the first baseline (also in evals/README.md):\n" + readme.split("```sh\n")[1].split("```")[0])
    return EXIT_OK


def register(commands) -> None:
    init = commands.add_parser("init", help="write a starter into your repository: your summary prompt, a gate eval "
                                            "over generated scenarios, and a CI workflow that gates prompt changes")
    init.add_argument("dir", type=Path, nargs="?", default=Path("."), help="the repository (default: here)")
    init.add_argument("--model", default="local", help="the model the gate runs on (default: the embedded one)")
    init.add_argument("--force", action="store_true", help="overwrite the starter's files where they exist")
    init.set_defaults(handler=cmd_init)

    validate = commands.add_parser("validate", help="check scenario and eval files without calling a model")
    validate.add_argument("files", nargs="+")
    validate.add_argument("--results", default="results", help="where baselines/ lives (for the detectable drop)")
    validate.set_defaults(handler=cmd_validate)

    schema = commands.add_parser("schema", help="print the JSON Schema of scenario or eval files")
    schema.add_argument("kind", nargs="?", choices=["scenario", "eval"], default="scenario")
    schema.set_defaults(handler=cmd_schema)

    importer = commands.add_parser("import", help="convert a public benchmark into scenario files")
    importer.add_argument("format", choices=["locomo"])
    importer.add_argument("file", type=Path, help="a LoCoMo JSON file (one conversation, or the list of samples)")
    importer.add_argument("--out", type=Path, required=True, help="folder for the scenario files")
    importer.add_argument("--strict", action="store_true",
                          help="an item whose evidence cannot be found is an error (default: left out and listed)")
    importer.set_defaults(handler=cmd_import)

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
    generate.set_defaults(handler=cmd_generate)
