"""How the harness tells a user what is wrong: `InputError`, located by file, line and field (or by
the flag a value came from), and the wording every message shares (plurals, "did you mean").

Every input error a user can make is raised as `InputError`, which the command line prints as one
line (`file:line: field: message`) instead of a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Path inside a YAML document: keys and list indices, e.g. ("turns", 2, "facts", 0, "answer").
Loc = tuple[str | int, ...]


class InputError(Exception):
    """A problem in a user's file, located precisely enough to fix without a debugger."""

    def __init__(self, path: str | Path, message: str, line: int | None = None, field: str = "", loc: Loc = ()):
        self.path, self.line, self.field, self.message = str(path), line, field, message
        self.loc = loc  # the field as a path of keys and indices, where it is known
        self.others: list[InputError] = []  # further independent errors of the same file
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {field + ': ' if field else ''}{message}")


def format_loc(loc: Loc) -> str:
    text = ""
    for key in loc:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


def describe_error(error: Mapping[str, Any], known: list[str] | None = None) -> str:
    """One pydantic error in a user's words; `known`: the keys allowed where an unknown key stands."""
    if error["type"] == "extra_forbidden":
        return "unknown key" + did_you_mean(str(error["loc"][-1]), known or [], "(a typo?)")
    if error["type"] == "missing":
        return "required field is missing"
    if isinstance(error.get("input"), bool) and error["type"] in ("int_type", "float_type"):
        return f"a number, not {str(error['input']).lower()}"
    return str(error["msg"]).removeprefix("Value error, ")


def did_you_mean(word: str, choices: list[str], otherwise: str = "") -> str:
    """' (did you mean `answer`?)' for the closest of `choices`, else `otherwise` (with a space)."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if close:
        return f" (did you mean `{close[0]}`?)"
    return f" {otherwise}" if otherwise else ""


def plural(n: int, noun: str, many: str | None = None) -> str:
    """'1 scenario', '2 scenarios'; `many` for irregular plurals ('1 summary', '2 summaries')."""
    return f"{n:,} {noun if n == 1 else many or noun + 's'}"
