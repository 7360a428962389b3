"""What counts as the same next step: an agent's step as an action key, the tool it calls and that
call's primary target, normalised, so two steps can be compared however they were written.

    Read {"file_path": "./src/app.py"}          -> Read: src/app.py
    Bash {"command": "cd repo && pytest -x t.py"} -> Bash: pytest t.py
    apply_patch {"input": "*** Update File: a.py"} -> apply_patch: a.py
    Grep {"pattern": "def load"}                 -> Grep: def load
    swe_agent {"command": "open src/x.py 120"}    -> swe_agent: open src/x.py
    a reply with no tool call                    -> answers without a tool

Two steps agree exactly when their keys are equal; relaxed agreement is reported apart: the same
tool, or the same target. `TARGETS` maps a tool's name to the function that finds its target
(add one for a tool whose target none of the general readers finds); others are read by their
input's keys: a path, then a command, then a search pattern, then a query or URL.

Small models often write a call as text: a JSON call is read by the backend (`models.tool_text`);
here a fenced shell command (SWE-agent's and mini-swe-agent's way) is read as a call of the one
shell-like tool offered, and both are counted as read from text.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .plugins import Registry
from .tool_vocabulary import COMMAND_KEYS, PATH_KEYS, PATTERN_KEYS, SHELL_TOOLS, patched_files

NO_TOOL = "answers without a tool"
_FENCED = re.compile(r"```(?:bash|sh|shell|console|mswea_bash_command)?[ \t]*\n(.*?)\n?```", re.DOTALL)
_CHAINED = re.compile(r"\s*(?:&&|;|\|\||\|)\s*")  # commands chained or piped
EDITS_LAST = {"sed", "awk", "perl", "patch"}  # programs whose target is their last operand
_OPERATORS = ";&|()\n"  # what ends a shell command
_WRAPPERS = {"sudo", "env", "time", "nohup", "exec", "command"}  # programs that run the next word
_SHELLS = {"sh", "bash", "zsh", "dash"}  # programs whose -c argument is a command line


def path(value: str) -> str:
    """A path as a key: no leading './', no trailing '/', no repeated slashes."""
    value = re.sub(r"/{2,}", "/", value.strip().strip("'\""))
    while value.startswith("./"):
        value = value[2:]
    return value.rstrip("/") or value


def command(line: str) -> str:
    """A shell command as a key: its program and first operand, past `cd DIR &&`, variable
    assignments, `sudo`/`env` and flags ("cd repo && FOO=1 pytest -x tests/t.py" is "pytest tests/t.py")."""
    first = line.strip().splitlines()[0] if line.strip() else ""
    parts = [p for p in _CHAINED.split(first) if p and not p.startswith("cd ")] or [first]
    try:
        words = shlex.split(parts[0])
    except ValueError:  # an unbalanced quote: read it by spaces
        words = parts[0].split()
    words = [w for w in words if not re.fullmatch(r"\w+=\S*", w)]
    while words and words[0] in _WRAPPERS:
        words = words[1:]
    if not words:
        return ""
    program = words[0].rsplit("/", 1)[-1]
    operands = [w for w in words[1:] if not w.startswith("-")]
    # An editing script comes first and the file it edits last (sed -i 's/a/b/' app.py).
    operand = (operands[-1] if program in EDITS_LAST else operands[0]) if operands else None
    return f"{program} {path(operand) if '/' in operand or '.' in operand else operand}" if operand else program


def programs(line: str) -> set[str]:
    """Every program a shell line runs: the first word of each command (`cd x && grep -rn y | head`
    runs cd, grep and head), past variable assignments and `sudo`/`env`, and what `bash -c '...'`
    runs. A program named in a comment or inside a quoted argument (`echo "not curl"`) is not run."""
    words = _shell_words(line)
    found: set[str] = set()
    starts = True  # the next word starts a command
    for i, word in enumerate(words):
        if not word.strip(_OPERATORS):  # ;, &&, ||, |, &, a parenthesis or a new line
            starts = True
        elif starts and not (re.fullmatch(r"\w+=\S*", word) or word in _WRAPPERS):
            program = word.rsplit("/", 1)[-1]
            found.add(program)
            if program in _SHELLS and i + 2 < len(words) and words[i + 1] in ("-c", "-lc"):
                found |= programs(words[i + 2])
            starts = False
    return found


def _shell_words(line: str) -> list[str]:
    """A shell line's words and operators, quotes removed and comments left out (a `#` inside a
    word, as in a URL, starts none); split at spaces when its quotes do not balance."""
    lexer = shlex.shlex(re.sub(r"(?<=[^\s;&|()])#", "\0", line), posix=True, punctuation_chars=_OPERATORS)
    lexer.whitespace, lexer.commenters, lexer.whitespace_split = " \t\r", "#", True
    try:
        return [word.replace("\0", "#") for word in lexer]
    except ValueError:
        return line.split()


def _patch(arguments: dict[str, Any]) -> str | None:
    text = " ".join(v for v in arguments.values() if isinstance(v, str))
    files = patched_files(text)
    return path(files[0]) if files else None


# Tools whose target none of the general readers finds, by lower-case name. Another package adds
# one by entry point (`compaction_harness.action_keys`: `(tool arguments) -> target or None`).
TARGETS: Registry[Callable[[dict[str, Any]], str | None]] = Registry(
    "action_keys",
    {
        "apply_patch": _patch,
        "todowrite": lambda arguments: "the plan",
        "update_plan": lambda arguments: "the plan",
    },
)


def target(tool: str, arguments: dict[str, Any]) -> str | None:
    """A call's primary target, normalised (see the module docstring)."""
    if (read := TARGETS.get(tool.lower())) is not None:
        return read(arguments)
    for key in PATH_KEYS:
        if isinstance(arguments.get(key), str) and arguments[key].strip():
            return path(arguments[key])
    for key in COMMAND_KEYS:
        value = arguments.get(key)
        if isinstance(value, list):  # an argument vector
            value = " ".join(map(str, value[2:] if len(value) == 3 and value[1] in ("-c", "-lc") else value))
        if isinstance(value, str) and value.strip():
            return command(value)
    for key in PATTERN_KEYS:
        if isinstance(arguments.get(key), str) and arguments[key].strip():
            return str(arguments[key]).strip()
    return None


@dataclass(frozen=True)
class Action:
    """One step: the tool called (None: a reply with no tool call) and its target."""

    tool: str | None
    target: str | None = None
    from_text: bool = False  # the model wrote the call as text; it was read as a call
    arguments: dict[str, Any] | None = field(default=None, compare=False)  # the call's input (behaviour checks)

    @property
    def key(self) -> str:
        if self.tool is None:
            return NO_TOOL
        return f"{self.tool}: {self.target}" if self.target else self.tool


def of_call(tool: str, arguments: dict[str, Any], from_text: bool = False) -> Action:
    return Action(tool, target(tool, arguments), from_text, arguments)


def of_reply(content: list[dict[str, Any]], tools: list[dict[str, Any]], from_text: int = 0) -> Action:
    """The step a reply takes: its first tool call; else a fenced shell command, as a call of the one
    shell-like tool offered; else no tool. `from_text`: calls the backend read from the reply's text."""
    calls = [block for block in content if block.get("type") == "tool_use"]
    if calls:
        return of_call(calls[0]["name"], calls[0].get("input") or {}, from_text > 0)
    shells = [t["name"] for t in tools if t.get("name", "").lower() in SHELL_TOOLS]
    text = "\n".join(block.get("text", "") for block in content if block.get("type") == "text")
    fenced = _FENCED.search(text)
    if fenced and len(shells) == 1 and fenced[1].strip():
        return of_call(shells[0], {"command": fenced[1].strip()}, from_text=True)
    return Action(None)


def agreement(a: Action, b: Action) -> dict[str, bool | None]:
    """Exact (same key) and relaxed (same tool; same target) agreement of two steps; the same target
    is None (n/a) when neither step called a tool."""
    neither = a.tool is None and b.tool is None  # no tool, so no target to compare: n/a
    return {
        "exact": a.key == b.key,
        "same_tool": a.tool == b.tool,
        "same_target": None if neither else a.target is not None and a.target == b.target,
    }
