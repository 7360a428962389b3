"""The one vocabulary of agents' tools, shared by everything that reads a tool call: the action keys
(`actions`), what one call did (`sources.tool_effects`: derivation reads it), and what a session's
calls did (`sources.trail`, which the behaviour checks and the audit read). Tool names are compared in
lower case; a name that is in no set here is read by its input's keys alone."""

from __future__ import annotations

import re
from typing import Any

# Tools that run a shell command (their input's command key holds it), as agent frameworks name them.
SHELL_TOOLS = frozenset(
    {"bash", "shell", "sh", "exec_command", "local_shell", "run_command", "terminal", "swe_agent", "run"}
)
# Tools that create, change or remove a file named by a path key (or a patch).
EDIT_TOOLS = frozenset(
    {
        "edit",
        "write",
        "multiedit",
        "notebookedit",
        "create",
        "create_file",
        "write_file",
        "edit_file",
        "str_replace_editor",
        "str_replace_based_edit_tool",
        "apply_patch",
    }
)
# Tools that print a file named by a path key.
READ_TOOLS = frozenset({"read", "view", "open", "read_file", "cat", "open_file", "view_file"})
# The programs a command vector runs its script with (["bash", "-lc", "pytest"] runs `pytest`).
SHELL_PROGRAMS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash"})

# Where a call's input names what it acts on: a file, a command, a search.
PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "target_file", "file")
COMMAND_KEYS = ("command", "cmd", "script")
PATTERN_KEYS = ("pattern", "regex", "query", "q", "url", "glob")

# The files a patch names: apply_patch's envelope, and a unified diff's new side.
PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (\S+)", re.MULTILINE)
DIFF_FILE = re.compile(r"^(?:diff --git a/\S+ b/(\S+)|\+\+\+ b/(\S+))", re.MULTILINE)


def patched_files(text: str) -> list[str]:
    """The files a patch or a diff in `text` names, in order, each once."""
    found = [(m.start(), m[1]) for m in PATCH_FILE.finditer(text)]
    found += [(m.start(), m[1] or m[2]) for m in DIFF_FILE.finditer(text)]
    return list(dict.fromkeys(name for _, name in sorted(found)))


def command_line(arguments: dict[str, Any]) -> str | None:
    """The command line a shell-like call's input holds, as logged, or None."""
    line = arguments.get("command") or arguments.get("cmd")
    return line if isinstance(line, str) else None
