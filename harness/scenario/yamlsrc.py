"""Reading YAML with line numbers, and applying ``--set`` overrides to the plain data.

A scenario is first loaded into plain dicts and lists together with a *line map*: the
1-based line of every key and list item, by path. Every later error (schema, semantic
check, override) looks its path up there, so that it can name the file and the line.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, ScalarEvent
from ruamel.yaml.reader import ReaderError

from kchaos.harness.errors import ConfigError, shown

Path_ = tuple[str | int, ...]

# Paths below which the rest of a dotted --set path is one Kafka property name.
_PROPERTY_MAPS: tuple[tuple[str, ...], ...] = (
    ("cluster", "server_properties"),
    ("cluster", "broker_properties", "*"),
    ("topics", "*", "configs"),
    ("workload", "producers", "configs"),
    ("workload", "consumers", "configs"),
    ("workload", "transactions", "configs"),
    ("nemesis", "steps", "*", "params"),
)


@dataclass
class Source:
    """Plain data of one scenario with where each part came from."""

    data: dict[str, Any]
    file: str
    lines: dict[Path_, int] = field(default_factory=dict)
    origins: dict[Path_, str] = field(default_factory=dict)  # path -> "--set" etc.
    # path -> line within its origin (a property's line in a --broker-config file)
    origin_lines: dict[Path_, int] = field(default_factory=dict)

    def where(self, path: Path_) -> tuple[str, int | None]:
        """(file, line) of the nearest part of ``path`` that has a known origin."""
        for n in range(len(path), -1, -1):
            prefix = path[:n]
            if prefix in self.origins:
                return self.origins[prefix], self.origin_lines.get(prefix)
            if prefix in self.lines:
                return self.file, self.lines[prefix]
        return self.file, None

    def error(self, path: Path_, message: str) -> ConfigError:
        file, line = self.where(path)
        return ConfigError(message, file=file, line=line, field=dotted(path) or None)


def dotted(path: Path_) -> str:
    return ".".join(str(p) for p in path)


# A scenario is a few levels deep; anything much deeper is a mistake or an attack, and
# ruamel.yaml's constructor (recursive) would end in a RecursionError at a few hundred.
MAX_DEPTH = 40
# Aliases can repeat a collection many times over (a "billion laughs"): the plain copy of
# a scenario may hold at most this many values.
MAX_NODES = 20_000
_MAX_NUMBER = 1000  # characters of an unquoted number (Python refuses ints of 4300 digits)


def _shape(text: str, file: str) -> None:
    """Refuse, from the event stream (an iterative parse), the YAML that the constructor
    cannot take: nesting deeper than MAX_DEPTH and an alias inside its own anchor."""
    open_anchors: list[Any] = []
    for event in YAML(typ="rt").parse(text):
        if isinstance(event, CollectionStartEvent):
            open_anchors.append(event.anchor)
            if len(open_anchors) > MAX_DEPTH:
                raise ConfigError(
                    f"nested more than {MAX_DEPTH} levels deep",
                    file=file,
                    line=event.start_mark.line + 1,
                )
        elif isinstance(event, CollectionEndEvent):
            open_anchors.pop()
        elif (
            isinstance(event, ScalarEvent)
            and not event.style
            and len(event.value) > _MAX_NUMBER
            and event.value.lstrip("+-.")[:1].isdigit()
        ):
            raise ConfigError(
                f"a number of {len(event.value)} characters is out of range",
                file=file,
                line=event.start_mark.line + 1,
            )
        elif isinstance(event, AliasEvent) and event.anchor in open_anchors:
            raise ConfigError(
                f"alias *{shown(str(event.anchor), 40)[1:-1]} refers to a collection that "
                "contains it (a recursive alias)",
                file=file,
                line=event.start_mark.line + 1,
            )


def _yaml_error(exc: Exception, text: str, file: str) -> ConfigError:
    """A ruamel.yaml error as one line naming the file and, where it can, the line."""
    if isinstance(exc, MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        return ConfigError(f"invalid YAML: {problem}", file=file, line=line)
    if isinstance(exc, ReaderError):
        position = exc.position if isinstance(exc.position, int) else 0
        line = text.count("\n", 0, max(0, position)) + 1
        char = exc.character
        code = f"#x{char:04x}" if isinstance(char, int) else shown(char)
        return ConfigError(
            f"invalid YAML: character {code} is not allowed in a YAML file", file=file, line=line
        )
    return ConfigError(f"invalid YAML: {shown(str(exc), 200)}", file=file)


def _plain(node: Any, path: Path_, lines: dict[Path_, int], count: list[int] | None = None) -> Any:
    count = count if count is not None else [0]
    count[0] += 1
    if count[0] > MAX_NODES:
        raise ConfigError(
            f"more than {MAX_NODES} values once aliases are expanded", field=dotted(path) or None
        )
    if isinstance(node, CommentedMap):
        out: dict[str, Any] = {}
        for key, value in node.items():
            child = (*path, str(key))
            with contextlib.suppress(KeyError, TypeError, AttributeError):
                lines[child] = node.lc.key(key)[0] + 1
            out[str(key)] = _plain(value, child, lines, count)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for i, value in enumerate(node):
            with contextlib.suppress(KeyError, TypeError, AttributeError):
                lines[(*path, i)] = node.lc.item(i)[0] + 1
            items.append(_plain(value, (*path, i), lines, count))
        return items
    if isinstance(node, str):
        return str(node)
    return node


def load_yaml(text: str, file: str) -> Source:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        _shape(text, file)
        node = yaml.load(text)
    except YAMLError as exc:
        raise _yaml_error(exc, text, file) from None
    except RecursionError:  # _shape bounds the depth; this is a last line of defence
        raise ConfigError("invalid YAML: nested too deeply", file=file) from None
    except ValueError as exc:  # a value the constructor cannot convert
        raise ConfigError(f"invalid YAML: {shown(str(exc), 200)}", file=file) from None
    if not isinstance(node, CommentedMap):
        raise ConfigError("a scenario must be a YAML mapping", file=file, line=1)
    lines: dict[Path_, int] = {(): 1}
    try:
        data = _plain(node, (), lines)
    except ConfigError as exc:
        raise ConfigError(exc.detail, file=file, field=exc.field) from None
    return Source(data=data, file=file, lines=lines)


def _parse_value(text: str) -> Any:
    """A --set value is read as a YAML scalar: 30 is a number, false a boolean."""
    if text == "":
        return ""
    try:
        _shape(text, "--set")
        value = YAML(typ="safe").load(text)
    except (YAMLError, RecursionError, ValueError):
        return text
    return text if value is None and text not in ("null", "~") else value


def _split_path(key: str) -> list[str]:
    parts = key.split(".")
    for prefix in _PROPERTY_MAPS:
        n = len(prefix)
        if len(parts) > n and all(p == "*" or p == q for p, q in zip(prefix, parts, strict=False)):
            return [*parts[:n], ".".join(parts[n:])]
    return parts


def apply_override(src: Source, assignment: str) -> None:
    """Apply one ``--set dotted.path=value`` to the plain data (creating mappings)."""
    key, sep, raw = assignment.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"expected KEY=VALUE, got {assignment!r}", file="--set")
    parts = _split_path(key)
    node: Any = src.data
    path: list[str | int] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(
                    f"no item {part!r} in a list of {len(node)}", file="--set", field=key
                )
            index = int(part)
            path.append(index)
            if last:
                node[index] = _parse_value(raw)
            else:
                node = node[index]
            continue
        if not isinstance(node, dict):
            raise ConfigError(f"{dotted(tuple(path))!r} is not a mapping", file="--set", field=key)
        path.append(part)
        if last:
            node[part] = _parse_value(raw)
        else:
            node = node.setdefault(part, {})
    src.origins[tuple(path)] = "--set"
