"""The embedded models: llama.cpp's HTTP server inside this process (xllamacpp), on 127.0.0.1 with a
random per-process API key, speaking the Anthropic Messages API. Which models there are, and how
their weights are installed and verified, is `weights`."""

from __future__ import annotations

import atexit
import secrets
from pathlib import Path
from typing import Any

from .client import SetupError
from .weights import DEFAULT, MODELS, LocalModel, weights

LOCAL = "local"  # the default embedded model's other name (evals written before there were two)
OTHER_GGUF_CONTEXT = 8192  # tokens a slot for a .gguf file the catalog does not know


def catalog_model(name: str) -> LocalModel | None:
    """The catalog's model a --model value names: `local`, a catalog name, or a path to one's file."""
    if name == LOCAL:
        return DEFAULT
    return MODELS.get(name) or next((m for m in MODELS.values() if Path(name).name == m.file_name), None)


def local_weights(name: str) -> tuple[Path, int]:
    """The verified weights file of a local model name or .gguf path, and its context per slot."""
    model = MODELS.get(name) or (DEFAULT if name == LOCAL else None)
    if model:
        return weights(model), model.context
    path = check_gguf(Path(name).expanduser().resolve())
    known = catalog_model(name)
    return path, known.context if known else OTHER_GGUF_CONTEXT


def check_gguf(path: Path) -> Path:
    if not path.is_file():
        raise SetupError(f"{path}: model file not found; give the path of a .gguf file")
    with path.open("rb") as file:
        if file.read(4) != b"GGUF":
            raise SetupError(f"{path}: not a GGUF model file (it does not start with 'GGUF')")
    return path


_servers: dict[Path, tuple[Any, str]] = {}


def local_server(weights: Path, threads: int, slots: int, context: int) -> tuple[str, str]:
    """Start llama.cpp's server for `weights` once per process; return (url, key)."""
    if weights not in _servers:
        import xllamacpp  # imported lazily: remote backends never need it

        params = xllamacpp.CommonParams()
        params.model.path = str(weights)
        params.n_ctx = context * slots  # llama.cpp splits the context between slots
        params.n_parallel = slots
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.hostnames = ["127.0.0.1"]  # never reachable from another machine
        params.port = 0  # a free port
        key = secrets.token_urlsafe(24)
        params.api_keys = [key]
        params.verbosity = -1
        try:
            server = xllamacpp.Server(params)
        except Exception as exc:  # the binding raises plain RuntimeErrors
            raise SetupError(f"{weights}: the local model server failed to start ({exc})") from None
        _servers[weights] = (server, key)
    server, key = _servers[weights]
    return server.listening_address, key


@atexit.register
def _stop_servers() -> None:
    _servers.clear()  # dropping the last reference stops each server
