"""A log file to text and JSON: compressed or not, in whatever encoding it was written, cut off or
nested too deeply, within the bounds a log may have; every problem said with its line."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import Any, Literal

from ...errors import InputError, plural


def log_name(path: Path) -> PurePath:
    """A log's file name as it was before compression (`run.traj.gz`: `run.traj`), which names its
    scenario and, for chat messages, says JSON or JSONL."""
    return PurePath(path.name.removesuffix(path.suffix) if path.suffix in (".gz", ".bz2", ".xz") else path.name)


MAX_LOG_BYTES = 1 << 30  # a log this big is many sessions, or tool outputs no scenario can hold: split it first
DETECT_BYTES = 1 << 20  # how much of a file that is not UTF-8 its encoding is guessed from
# Archived logs: read through the standard library's decompressors, the output bounded like a file.
Opener = Callable[[Any, Literal["rb"]], io.BufferedIOBase]
# Each compression a log may come in: its magic bytes, its name and how to open it.
COMPRESSIONS: list[tuple[bytes, str, Opener]] = [
    (b"\x1f\x8b", "gzip", gzip.open),
    (b"BZh", "bz2", bz2.open),
    (b"\xfd7zXZ\x00", "xz", lzma.open),
]
_ARCHIVES = [
    (b"PK\x03\x04", "a zip archive: extract the log from it first"),
    (b"\x28\xb5\x2f\xfd", "zstandard-compressed: decompress it first (`zstd -d`)"),
]
_BOMS = [
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
]


def read_text(path: Path, notes: list[str]) -> str:
    """A log's text. UTF-8, else the encoding its byte-order mark names or that can be detected
    (noted); bytes no encoding explains become U+FFFD, noted with the line of the first."""
    try:
        size = path.stat().st_size
        if size > MAX_LOG_BYTES:
            raise InputError(
                path,
                f"{size:,} bytes, over the {MAX_LOG_BYTES:,} a log may have: split it (one session "
                "a file) or cut its longest tool outputs before importing",
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read it ({exc.strerror})") from None
    raw = _decompressed(path, raw, notes)
    for mark, codec in _BOMS:
        if raw.startswith(mark):
            if codec != "utf-8":
                notes.append(f"{path.name}: read as {codec.upper()} (its byte-order mark says so)")
            return raw[len(mark) :].decode(codec, errors="replace")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    import charset_normalizer  # only for the rare file that is not UTF-8

    guess = charset_normalizer.from_bytes(raw[:DETECT_BYTES]).best()
    if guess is not None and guess.encoding not in ("utf_8", "ascii"):
        try:
            text = raw.decode(guess.encoding)
        except (UnicodeDecodeError, LookupError):
            pass
        else:
            notes.append(
                f"{path.name}: not UTF-8; read as {guess.encoding} (detected; check names and quotes "
                "in the scenario, or convert the file to UTF-8 first)"
            )
            return text
    text = raw.decode("utf-8", errors="replace")
    line = raw.count(b"\n", 0, first_bad) + 1
    notes.append(
        f"{path.name}:{line}: bytes that are not UTF-8, and no other encoding fits the file: "
        f"{text.count(chr(0xFFFD)):,} replaced with U+FFFD"
    )
    return text


def _decompressed(path: Path, raw: bytes, notes: list[str]) -> bytes:
    """A gzip, bzip2 or xz file's content (noted), at most MAX_LOG_BYTES of it; other bytes as they are.
    An archive the standard library cannot open is refused with what to do."""
    for mark, what in _ARCHIVES:
        if raw.startswith(mark):
            raise InputError(path, what)
    for mark, codec, opener in COMPRESSIONS:
        if raw.startswith(mark):
            try:
                with opener(io.BytesIO(raw), "rb") as stream:
                    content = stream.read(MAX_LOG_BYTES + 1)
            except (OSError, EOFError, lzma.LZMAError) as exc:
                raise InputError(
                    path, f"{codec}-compressed, but it cannot be decompressed ({exc}): the file is cut off or damaged"
                ) from None
            if len(content) > MAX_LOG_BYTES:
                raise InputError(
                    path,
                    f"{codec}-compressed, and over the {MAX_LOG_BYTES:,} bytes a log may have "
                    "once decompressed: split it (one session a file)",
                )
            notes.append(f"{path.name}: {codec}-compressed, read decompressed ({len(content):,} bytes)")
            return content
    return raw


def parse_json(text: str) -> Any:
    """JSON, with nesting too deep for the decoder's recursion as a ValueError like any bad JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to read (hundreds of levels): not a log") from None


def read_json(path: Path, what: str, notes: list[str]) -> Any:
    """A whole-file JSON log, or an InputError naming the file, the line and what it should be."""
    text = read_text(path, notes)
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not {what}: not JSON ({exc.msg})", line=exc.lineno) from None
    except ValueError as exc:
        raise InputError(path, f"not {what}: {exc}") from None


def json_lines(path: Path, notes: list[str], what: str) -> list[tuple[int, dict[str, Any]]]:
    """The JSON objects of a JSONL log with their line numbers; lines that are not one are noted
    (real logs end mid-line when the agent was killed) and left out."""
    lines, broken, deep = [], [], []
    for number, line in enumerate(read_text(path, notes).splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = parse_json(line)
        except json.JSONDecodeError:
            entry = None
        except ValueError:
            entry = None
            deep.append(number)
        if isinstance(entry, dict):
            lines.append((number, entry))
        else:
            broken.append(number)
    if not lines:
        raise InputError(path, f"not {what}: no line is a JSON object", line=broken[0] if broken else None)
    if broken:
        shown = ", ".join(map(str, broken[:10])) + (f" and {len(broken) - 10} more" if len(broken) > 10 else "")
        why = f" ({plural(len(deep), 'line')} nested too deeply to read)" if deep else ""
        notes.append(
            f"{path.name}: {'line' if len(broken) == 1 else 'lines'} {shown}: not a JSON object{why}, left out"
        )
    return lines
