"""One registration mechanism for everything the harness looks up by name: compaction strategies,
matchers, log importers, action keys and embedded models. This package lists its own where it
makes a `Registry` (`Registry("matchers", {"exact": ..., ...})`); another package adds its own
without this repository changing, by entry point. In the extending package's pyproject.toml:

    [project.entry-points."compaction_harness.strategies"]
    my-compactor = "my_package.compaction:my_compactor"

    [project.entry-points."compaction_harness.matchers"]
    semantic = "my_package.scoring:SemanticMatch"     # (fact) -> a harness.scoring.matchers.Matcher

    [project.entry-points."compaction_harness.importers"]
    aider = "my_package.logs:read_aider"              # (path) -> list of harness Sessions

    [project.entry-points."compaction_harness.action_keys"]
    my_edit_tool = "my_package.actions:edited_path"   # (tool arguments) -> the call's target, or None

    [project.entry-points."compaction_harness.models"]
    phi-4-mini = "my_package.models:PHI"              # a harness.models.weights.LocalModel

The entry point's name is what a file or flag says (`strategies: [my-compactor]`, `match: semantic`,
`harness import aider`, `--model phi-4-mini`). A plugin is imported only when it is named, so a
broken one never stops the others; one that fails to load is an error naming its package.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator, Mapping
from importlib import metadata
from typing import Any, Generic, TypeVar

GROUP_PREFIX = "compaction_harness."
T = TypeVar("T")


class PluginError(Exception):
    """An installed plugin failed to load: its package, entry point and the error say which."""


def installed(kind: str) -> dict[str, metadata.EntryPoint]:
    """The plugins of a kind (`strategies`) the environment holds, by name, not yet imported."""
    return _entry_points(tuple(sys.path)).get(kind, {})


@functools.lru_cache(maxsize=4)
def _entry_points(path: tuple[str, ...]) -> dict[str, dict[str, metadata.EntryPoint]]:
    # Read once per sys.path: a lookup (an action key per tool call) must not scan every package.
    found: dict[str, dict[str, metadata.EntryPoint]] = {}
    for dist in metadata.distributions():
        for entry in dist.entry_points:
            if entry.group.startswith(GROUP_PREFIX):  # the first of a name on sys.path wins, as for imports
                found.setdefault(entry.group.removeprefix(GROUP_PREFIX), {}).setdefault(entry.name, entry)
    return found


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


class Registry(Generic[T], Mapping[str, T]):
    """The named things of one kind: this package's own, then other packages' (entry points in the
    group `compaction_harness.<kind>`, imported on first use). A name of ours cannot be taken over
    by a plugin. Read like a dict: `name in r`, `r[name]`, `list(r)`, `r.get(name)`."""

    def __init__(self, kind: str, own: Mapping[str, T] | None = None):
        self.kind = kind
        self.own: dict[str, T] = dict(own or {})
        self._loaded: dict[str, T] = {}

    def plugins(self) -> list[str]:
        """Other packages' names of this kind, not yet imported."""
        return [name for name in installed(self.kind) if name not in self.own]

    def __getitem__(self, name: str) -> T:
        if name in self.own:
            return self.own[name]
        if name not in self._loaded:
            if name not in installed(self.kind):
                raise KeyError(name)
            self._loaded[name] = load(self.kind, name)
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self.own or name in installed(self.kind))

    def __iter__(self) -> Iterator[str]:
        return iter([*self.own, *self.plugins()])

    def __len__(self) -> int:
        return len(self.own) + len(self.plugins())
