"""Tool calls a model wrote as text instead of as `tool_use` blocks.

Small local models often answer a request that offers tools by writing the call out: measured on
Qwen2.5-Coder-1.5B through llama.cpp's server (chat template on or off), a first call comes as a
fenced JSON block and later ones as a bare JSON object, and the reply stops with `end_turn`:

    ```json
    {"name": "Read", "arguments": {"file_path": "src/app/config.py"}}
    ```

A backend that reads text calls (`Backend.reads_text_tool_calls`, set for the embedded models) turns
such a reply into the `tool_use` blocks the model meant, with stop reason `tool_use`, and counts
them (`Reply.tool_calls_from_text`, summed in `Usage`), so what was read from text is recorded as such.
Only a JSON object naming one of the request's tools, with its arguments as an object, is read; any
other text stays text.

`READERS` lists where calls are looked for, first match wins; a reader is a function from the reply's
text to the JSON texts it found and the text left around them. Add one for another model's habit.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

Reader = Callable[[str], tuple[list[str], str]]

_FENCED = re.compile(r"```(?:json|tool_call)?[ \t]*\n(.*?)\n?```", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)  # Hermes/Qwen's own template


def _pattern_reader(pattern: re.Pattern[str]) -> Reader:
    def read(text: str) -> tuple[list[str], str]:
        return [m.group(1) for m in pattern.finditer(text)], pattern.sub("", text)

    return read


def _bare_object(text: str) -> tuple[list[str], str]:
    """The whole reply is one JSON object (or a list of them)."""
    stripped = text.strip()
    return ([stripped], "") if stripped[:1] in "{[" and stripped[-1:] in "}]" else ([], text)


READERS: list[Reader] = [_pattern_reader(_TAGGED), _pattern_reader(_FENCED), _bare_object]

ARGUMENT_KEYS = ("arguments", "input", "parameters")  # what models call a call's arguments


def calls_in(text: str, tool_names: set[str]) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """The tool calls written in `text` (name and input) and the text left once they are taken out;
    no calls and the text unchanged when none names one of `tool_names`."""
    for read in READERS:
        found, rest = read(text)
        calls = [call for piece in found for call in _calls(piece, tool_names)]
        if calls:
            return calls, rest.strip()
    return [], text


def _calls(piece: str, tool_names: set[str]) -> list[tuple[str, dict[str, Any]]]:
    try:
        value = json.loads(piece)
    except ValueError:
        return []
    calls = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict) and isinstance(item.get("function"), dict):  # OpenAI's shape
            item = item["function"]
        if not isinstance(item, dict) or item.get("name") not in tool_names:
            continue
        arguments: Any = next((item[key] for key in ARGUMENT_KEYS if key in item), {})
        if isinstance(arguments, str):  # OpenAI sends arguments as a JSON string
            try:
                arguments = json.loads(arguments)
            except ValueError:
                continue
        if isinstance(arguments, dict):
            calls.append((item["name"], arguments))
    return calls


def read_tool_calls(data: dict[str, Any], tools: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """A Messages reply with the tool calls its text blocks wrote turned into `tool_use` blocks, and
    how many there were (0: `data` unchanged). A reply that already holds a `tool_use` is left alone."""
    names = {str(tool["name"]) for tool in tools if isinstance(tool, dict) and tool.get("name")}
    content = data.get("content") or []
    if not names or any(block.get("type") == "tool_use" for block in content):
        return data, 0
    blocks, count = [], 0
    for block in content:
        calls, rest = calls_in(block["text"], names) if block.get("type") == "text" else ([], "")
        if not calls:
            blocks.append(block)
            continue
        if rest:
            blocks.append({**block, "text": rest})
        for name, arguments in calls:
            digest = hashlib.sha256(json.dumps([data.get("id"), count, name, arguments], sort_keys=True).encode())
            blocks.append(
                {"type": "tool_use", "id": f"toolu_text_{digest.hexdigest()[:20]}", "name": name, "input": arguments}
            )
            count += 1
    if not count:
        return data, 0
    return {**data, "content": blocks, "stop_reason": "tool_use"}, count
