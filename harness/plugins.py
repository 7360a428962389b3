"""Extensions installed by other packages, found by entry point: a package adds a compaction
strategy to the harness without this repository changing. In the extending package's
pyproject.toml:

    [project.entry-points."compaction_harness.strategies"]
    my-compactor = "my_package.compaction:my_compactor"

The entry point's name is what an eval file says (`strategies: [my-compactor]`); its object is
what a `module:function` strategy may be (a compaction function, or a `Compactor` declaring its
options). A plugin is imported only when an eval names it, so a broken one never stops the others.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

GROUP_PREFIX = "compaction_harness."


class PluginError(Exception):
    """An installed plugin failed to load: its package, entry point and the error say which."""


def installed(kind: str) -> dict[str, metadata.EntryPoint]:
    """The plugins of a kind (`strategies`) the environment holds, by name, not yet imported."""
    return {entry.name: entry for entry in metadata.entry_points(group=GROUP_PREFIX + kind)}


def load(kind: str, name: str) -> Any:
    """Import one installed plugin's object."""
    entry = installed(kind)[name]
    try:
        return entry.load()
    except Exception as exc:  # whatever the plugin's import raises is its own failure
        package = entry.dist.name if entry.dist else "an unknown package"
        raise PluginError(
            f"{kind} plugin {name!r} ({entry.value}, from {package}) failed to load: {type(exc).__name__}: {exc}"
        ) from None
