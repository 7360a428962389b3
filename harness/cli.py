"""The `harness` command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .inputs import InputError

EXIT_OK, EXIT_ERROR = 0, 1


def _model_flags(parser: argparse.ArgumentParser, default: str | None) -> None:
    parser.add_argument("--model", default=default,
                        help="'local' (embedded SmolLM2), a .gguf path, a claude-... name, or a name for --base-url")
    parser.add_argument("--base-url", help="an Anthropic-compatible server (llama-server, Ollama, a proxy)")


def _cmd_run(args: argparse.Namespace) -> int:
    from .config import load_eval
    from .cache import ResponseCache
    from .models import default_jobs, open_model
    from .report import text_report
    from .run import run_eval

    ev = load_eval(args.eval, prompts=args.prompt, model=args.model, budgets=args.budget, repeats=args.repeats)
    base_url = args.base_url or ev.spec.base_url
    jobs = args.jobs or default_jobs(ev.spec.model, base_url)
    client = open_model(ev.spec.model, base_url=base_url, temperature=ev.spec.temperature, slots=jobs)
    if not args.no_cache:
        client.cache = ResponseCache(Path(args.results) / "cache" / "responses.sqlite")
    judge = open_model(args.judge) if args.judge else None
    run_dir = run_eval(ev, client, Path(args.results), resume=args.resume, judge=judge,
                       progress=not args.quiet, jobs=jobs)
    print(text_report(run_dir))
    return EXIT_OK


def _cmd_chat(args: argparse.Namespace) -> int:
    from .agent import CHAT_TOOLS, Agent, chat
    from .compaction import SEED_SUMMARY_PROMPT, CompactionSettings
    from .models import open_model

    prompt = Path(args.summary_prompt).read_text().strip() if args.summary_prompt else SEED_SUMMARY_PROMPT
    client = open_model(args.model, base_url=args.base_url)
    settings = CompactionSettings(prompt, args.keep_recent, args.summary_max_tokens, args.unit)
    print(f"Chatting with {client.identity}; compaction above {args.budget} {args.unit}. "
          "Type 'quit' or Ctrl-D to leave.")
    chat(Agent(client, CHAT_TOOLS, args.budget, settings=settings))
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    from .config import EvalFile
    from .scenario import Scenario

    model = {"scenario": Scenario, "eval": EvalFile}[args.kind]
    print(json.dumps(model.model_json_schema(), indent=2))
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    from .config import load_eval
    from .inputs import load_yaml
    from .scenario import load_scenario, probes

    for path in args.files:
        data = load_yaml(path).data
        if isinstance(data, dict) and "turns" not in data and "budgets" in data:
            ev = load_eval(path)
            print(f"{path}: ok ({len(ev.scenarios)} scenarios, {len(ev.prompts)} prompts)")
        else:
            scenario = load_scenario(path)
            print(f"{path}: ok ({len(scenario.turns)} turns, {len(probes(scenario))} facts)")
    return EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    from .report import text_report

    print(text_report(args.run_dir))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run an eval and print the results table")
    run.add_argument("eval", help="an eval file, e.g. evals/smoke.yaml")
    run.add_argument("--prompt", action="append", metavar="FILE",
                     help="run against this summary prompt instead of the eval's (repeatable)")
    _model_flags(run, None)
    run.add_argument("--budget", action="append", help="override the budgets (repeatable): 1200 or 40%%")
    run.add_argument("--repeats", type=int)
    run.add_argument("--judge", metavar="MODEL", help="ask this model to grade answers the matcher calls 'forgot'")
    run.add_argument("--resume", type=Path, metavar="RUN_DIR", help="finish an interrupted run")
    run.add_argument("--results", default="results", help="where runs/ and cache/ live (default: results)")
    run.add_argument("--jobs", type=int, metavar="N",
                     help="cases run at once (default: 1 on a local model, for reproducible answers; 8 on remote ones)")
    run.add_argument("--no-cache", action="store_true", help="do not reuse or store model responses")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.set_defaults(handler=_cmd_run)

    chat = commands.add_parser("chat", help="talk to the agent and watch compaction fire")
    _model_flags(chat, "local")
    chat.add_argument("--budget", type=int, default=1200, help="compact above this size (default 1200)")
    chat.add_argument("--unit", choices=["chars", "tokens"], default="chars")
    chat.add_argument("--keep-recent", type=int, default=1, help="exchanges kept verbatim (default 1)")
    chat.add_argument("--summary-prompt", metavar="FILE", help="summary prompt file (default: the seed's)")
    chat.add_argument("--summary-max-tokens", type=int, default=512)
    chat.set_defaults(handler=_cmd_chat)

    schema = commands.add_parser("schema", help="print the JSON Schema of scenario or eval files")
    schema.add_argument("kind", nargs="?", choices=["scenario", "eval"], default="scenario")
    schema.set_defaults(handler=_cmd_schema)

    validate = commands.add_parser("validate", help="check scenario and eval files without calling a model")
    validate.add_argument("files", nargs="+")
    validate.set_defaults(handler=_cmd_validate)

    report = commands.add_parser("report", help="print the tables of a finished run")
    report.add_argument("run_dir", type=Path)
    report.set_defaults(handler=_cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    from .models import SetupError

    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (InputError, SetupError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("\ninterrupted: finished cases are saved; `harness run EVAL --resume RUN_DIR` completes the run",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
