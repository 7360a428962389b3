"""Reading user files: YAML with the line of every key and item, so that every error names file,
line and field (`errors.InputError`), and refusing what no scenario or eval needs (tags, alias
bombs, deep nesting, keys that are not text)."""

from __future__ import annotations

import typing
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import InputError, Loc, describe_error, format_loc

MAX_FILE_BYTES = 5_000_000  # no scenario or eval is this big; refuse before parsing
MAX_VALUES = 200_000  # YAML aliases can make a small file expand exponentially ("billion laughs")
MAX_DEPTH = 40  # no format nests this deep; deeper input is an attack, not a scenario


def shipped(*parts: str) -> Path:
    """A file this package ships, installed or in a clone: `shipped("prompts", "seed.txt")`."""
    return Path(str(resources.files("harness").joinpath(*parts)))


def shipped_prompt_names() -> list[str]:
    """The summary prompts an eval can name bare (`prompts: [seed, facts-first]`)."""
    return sorted(p.stem for p in shipped("prompts").glob("*.txt"))


class LocatedYaml:
    """A parsed YAML document plus the line on which each key or item starts."""

    def __init__(self, path: Path, data: Any, lines: dict[Loc, int]):
        self.path, self.data, self.lines = path, data, lines

    def line_of(self, loc: Loc) -> int | None:
        # Walk up to the nearest located ancestor: a missing key is reported on its parent.
        for end in range(len(loc), -1, -1):
            if loc[:end] in self.lines:
                return self.lines[loc[:end]]
        return None

    def error(self, loc: Loc, message: str) -> InputError:
        return InputError(self.path, message, self.line_of(loc), format_loc(loc), loc)

    def validate(self, model: type[BaseModel], loc: Loc = (), overrides: dict[str, Any] | None = None) -> Any:
        """Validate `data` at `loc` against a pydantic model, raising the first error located.
        `overrides`: keys that replace the document's (a copy: the document stays as read)."""
        data = self.data
        for key in loc:
            data = data[key]
        if overrides:
            data = {**data, **overrides}
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            # An unknown key is usually a typo of a missing one: report the typo first.
            errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
            typos = {e["loc"][:-1] for e in errors if e["type"] == "extra_forbidden"}
            # A missing key beside an unknown one is the same typo: say it once.
            errors = [e for e in errors if not (e["type"] == "missing" and e["loc"][:-1] in typos)]
            first, *others = [
                self.error(loc + tuple(e["loc"]), describe_error(e, fields_at(model, e["loc"][:-1]))) for e in errors
            ]
            first.others = others
            raise first from None


def fields_at(model: type[BaseModel], loc: Loc) -> list[str]:
    """The keys a document may have at `loc` (what an unknown key there could have meant)."""
    current: Any = model
    for key in loc:
        if isinstance(key, int):
            continue  # an item of a list: the same model as the list
        field = current.model_fields.get(key) if isinstance(current, type) and issubclass(current, BaseModel) else None
        current = _model_in(field.annotation) if field else None
        if current is None:
            return []
    return list(current.model_fields)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation (`list[Turn]`, `Reply | None`, `Annotated[...]`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_in, typing.get_args(annotation)) if m is not None), None)


def load_yaml(path: str | Path) -> LocatedYaml:
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "file not found")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise InputError(path, f"file is larger than {MAX_FILE_BYTES:,} bytes")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text ({exc.reason})") from None
    try:
        # The safe loader only: a scenario file must never be able to construct Python objects.
        _check_depth(text)
        node = yaml.compose(text, Loader=_Loader)
        lines: dict[Loc, int] = {}
        data = _Builder(path, lines).build(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        if problem == "exceeded maximum nesting depth":  # libyaml's own limit, met while scanning ahead
            problem = f"nested more than {MAX_DEPTH} levels deep"
        raise InputError(path, f"invalid YAML: {problem}", mark.line + 1 if mark else None) from None
    return LocatedYaml(path, data, lines)


# libyaml's loader where PyYAML has it (ten times faster: an imported agent session is megabytes).
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before composing: the composer recurses once per level,
    so a deeply nested file would otherwise exhaust the stack. The event stream is flat."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"nested more than {MAX_DEPTH} levels deep",
                    event.start_mark,  # type: ignore[arg-type]  # libyaml's Mark: the same fields, another class
                )
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


# Builds scalars only (we walk mappings and sequences ourselves, to record their lines).
_SCALARS = yaml.constructor.SafeConstructor()


_PLAIN_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


class _Builder:
    """Python values from a composed YAML node, recording the line of every key and item, and
    refusing what no scenario or eval needs: other tags, keys that are not text, nesting deeper
    than MAX_DEPTH, and aliases that expand to more than MAX_VALUES values."""

    def __init__(self, path: Path, lines: dict[Loc, int]):
        self.path, self.lines, self.values = path, lines, 0

    def error(self, node: yaml.Node, loc: Loc, message: str) -> InputError:
        return InputError(self.path, f"invalid YAML: {message}", node.start_mark.line + 1, format_loc(loc))

    def build(self, node: yaml.Node, loc: Loc = ()) -> Any:
        self.lines[loc] = node.start_mark.line + 1
        self.values += 1
        if self.values > MAX_VALUES:
            raise InputError(
                self.path,
                f"invalid YAML: the document expands to more than {MAX_VALUES:,} values (aliases repeating aliases?)",
                node.start_mark.line + 1,
            )
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.tag not in _PLAIN_TAGS:
            raise self.error(node, loc, f"unsupported tag {node.tag!r}")
        if isinstance(node, yaml.MappingNode):
            result = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise self.error(key_node, loc, "a key must be plain text, not a list or mapping")
                key = _SCALARS.construct_object(key_node)
                if not isinstance(key, str):
                    raise self.error(key_node, loc, f"a key must be plain text, not {key!r}")
                if key in result:
                    raise InputError(self.path, f"duplicate key {key!r}", key_node.start_mark.line + 1, format_loc(loc))
                result[key] = self.build(value_node, loc + (key,))
                self.lines[loc + (key,)] = key_node.start_mark.line + 1
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, loc + (i,)) for i, item in enumerate(node.value)]
        return _SCALARS.construct_object(node)
