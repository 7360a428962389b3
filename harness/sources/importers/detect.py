"""Which of our formats an agent log is, from its name and its first lines, so a folder holding logs
of several agents can be read without naming each one's format (`harness audit`).

- JSONL whose lines carry `uuid` / `parentUuid` / `sessionId`, or are `summary` / `file-history-snapshot`
  lines: Claude Code;
- JSONL of `{"type": ..., "payload": ...}` rollout lines, or of bare response items (`function_call`,
  `reasoning`...): Codex CLI;
- JSONL of chat messages (`role`), or of conversations (`messages`): chat messages (openai);
- a JSON object with `trajectory` (or SWE-agent's `history` with `info`): SWE-agent;
- `*.traj.json`, or JSON messages whose observations are `<returncode>` blocks: mini-swe-agent;
- other JSON messages: chat messages.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

from ...errors import InputError
from .logfile import COMPRESSIONS, log_name

HEAD_BYTES = 1 << 18  # enough for the first lines of any log, long tool outputs included
LOG_SUFFIXES = (".jsonl", ".json", ".traj")
_CODEX_ITEMS = {"function_call", "function_call_output", "custom_tool_call", "local_shell_call", "reasoning"}


def is_log_name(path: Path) -> bool:
    """A file a folder of logs may hold: .jsonl, .json or .traj, compressed or not."""
    return log_name(path).suffix in LOG_SUFFIXES


def _head(path: Path) -> str:
    try:
        with path.open("rb") as raw:
            magic = raw.read(6)
        opener = next((open_ for mark, _, open_ in COMPRESSIONS if magic.startswith(mark)), None)
        with opener(path, "rb") if opener else path.open("rb") as stream:
            return stream.read(HEAD_BYTES).decode("utf-8", errors="replace").lstrip("\ufeff")
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise InputError(path, f"cannot read it ({exc})") from None


def _lines(head: str) -> list[dict[str, Any]]:
    found = []
    for line in head.splitlines()[:50]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            found.append(entry)
    return found


def detect(path: Path) -> str:
    """The format's name (as `harness import` takes it), or an InputError saying why none fits."""
    head = _head(path)
    name = log_name(path)
    if name.name.endswith(".traj.json"):
        return "mini-swe-agent"
    if name.suffix == ".traj":
        return "swe-agent"
    lines = _lines(head)
    if len(lines) > 1 or name.suffix == ".jsonl":
        if any({"uuid", "parentUuid", "sessionId"} & set(e) or e.get("type") == "summary" for e in lines):
            return "claude-code"
        if any("payload" in e or e.get("type") in _CODEX_ITEMS for e in lines):
            return "codex"
        if any("role" in e or isinstance(e.get("messages"), list) for e in lines):
            return "openai"
    stripped = head.lstrip()
    if stripped.startswith("{") and '"trajectory"' in head:
        return "swe-agent"
    if stripped.startswith(("[", "{")):
        return "mini-swe-agent" if "<returncode>" in head else "openai"
    raise InputError(
        path,
        "not a log of a format we read (Claude Code, Codex CLI, SWE-agent, mini-swe-agent, chat messages): "
        "its first lines are neither JSON lines nor a JSON document",
    )
