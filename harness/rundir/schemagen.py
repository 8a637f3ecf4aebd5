"""JSON Schema from frozen dataclasses: how the scenario model and run.json's model give
their published schemas (issue 23: one definition of the run description).

It lives here, in the run-directory package at the bottom of the layers, so that both
``rundir.runjson`` and ``scenario.schemagen`` can use it. Standard library only.

A field's type gives its JSON type: ``str``, ``int``, ``float``, ``bool`` a string,
integer, number, boolean; a ``Literal`` an enum; ``tuple[X, ...]`` an array of X; a
``Mapping[str, str]`` a set of Kafka properties (``$defs/properties``);
``Mapping[int, X]`` an object keyed by node id; any other ``Mapping[str, X]`` an object of
X; a dataclass an object with exactly its fields, the ones without a default required;
``X | None`` is X (None is what leaving the key out gives).

A field's ``metadata`` says what the type cannot:

- JSON Schema keywords (``description``, ``minimum``, ``maximum``, ``pattern``,
  ``minLength``, ``minItems``), added as they are; ``enum``, ``oneOf`` or ``type`` replace
  the type's schema, for a field whose file form is wider than its model type (``acks``
  may be a number in the file, ``data_mount_options`` one comma-separated string);
- ``ref``: the name of a shared definition (the schema's ``$defs``) used instead of the
  type's schema, e.g. ``duration`` (seconds, or a string such as ``30s``) for a float;
- ``items``: the same vocabulary for the items of a tuple;
- ``nullable``: the file may also say ``null``;
- ``file``: False for a field the file does not have (``Scenario.source``); a string for a
  field the file spells differently (run.json's ``image`` for ``RunJson.kafka_image``);
- ``per_release``: the field is an object keyed by Kafka release whose values hold the
  other fields of its own dataclass again (a scenario's ``expect.before``);
- ``aliases``: old spellings of the field the file may still use, each with its
  description: a property of the same schema marked ``deprecated``, which the object
  refuses together with the field (a scenario step's ``duration`` for ``for``).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kchaos.harness.rundir.tickets import RELEASE_PATTERN

# Metadata keys that steer the generator rather than go into the schema.
_STEERING = ("ref", "items", "nullable", "file", "per_release", "aliases")
# Metadata keywords that stand for the whole schema of the field.
_REPLACING = ("enum", "oneOf", "type")
_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}

#: Names an annotation may use that are not importable at run time (a name imported for
#: type checking only), for fields the file does not have.
Names = Mapping[str, Any]


def object_schema(
    cls: type, *, names: Names | None = None, closed: bool = True, annotate: bool = True
) -> dict[str, Any]:
    """The schema of a dataclass: an object with its fields (``closed``: and no other key;
    ``annotate``: with the fields' descriptions)."""
    return _object(cls, names or {}, closed, annotate)


def render(schema: Mapping[str, Any]) -> str:
    """A schema file's text: two-space indented JSON and a newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write(schema: Mapping[str, Any], path: Path) -> Path:
    """Write a generated schema file (after a change to its model)."""
    path.write_text(render(schema), encoding="utf-8")
    return path


def main(generate: Callable[[], Mapping[str, Any]], path: Path) -> None:
    """A generator module's ``__main__``: write the schema file and print its path."""
    print(write(generate(), path))


def _file_fields(cls: type, names: Names) -> list[tuple[str, dataclasses.Field[Any], Any]]:
    """(name in the file, field, type) of every field the file has, in model order."""
    hints = typing.get_type_hints(cls, localns=dict(names))
    out = []
    for f in dataclasses.fields(cls):
        name = f.metadata.get("file", f.name)
        if name is not False:
            out.append((str(name), f, hints[f.name]))
    return out


def _object(
    cls: type, names: Names, closed: bool, annotate: bool, skip: str = ""
) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required = []
    exclusive: dict[str, Any] = {}  # an old spelling -> not together with the new one
    for name, f, hint in _file_fields(cls, names):
        if name == skip:
            continue
        if f.metadata.get("per_release"):
            props[name] = _per_release(cls, names, name, f.metadata)
            continue
        props[name] = _field(hint, f.metadata, names, annotate)
        for alias, text in f.metadata.get("aliases", {}).items():
            old = {k: v for k, v in props[name].items() if k != "description"}
            props[alias] = {**({"description": text} if annotate else {}), **old}
            props[alias]["deprecated"] = True
            exclusive[alias] = {"not": {"required": [name]}}
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(name)
    out: dict[str, Any] = {"type": "object", "additionalProperties": not closed}
    if required:
        out["required"] = required
    out["properties"] = props
    if exclusive:
        out["dependentSchemas"] = exclusive
    return out


def _per_release(cls: type, names: Names, name: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """Per release bound, the object's own fields once more (not nested again, and
    described once, in the object itself)."""
    return {
        "description": meta["description"],
        "type": "object",
        "propertyNames": {"pattern": RELEASE_PATTERN},
        "additionalProperties": _object(cls, names, True, False, skip=name),
    }


def _field(
    hint: Any, meta: Mapping[str, Any], names: Names, annotate: bool = True
) -> dict[str, Any]:
    """The schema of one value of type ``hint`` with its field's ``meta``."""
    out: dict[str, Any] = {}
    if annotate and "description" in meta:
        out["description"] = meta["description"]
    if "ref" in meta:
        out["$ref"] = f"#/$defs/{meta['ref']}"
    elif not any(k in meta for k in _REPLACING):
        out.update(_type(hint, meta.get("items", {}), names))
        if meta.get("nullable"):
            out["type"] = [out["type"], "null"]
    for key, value in meta.items():
        if key not in _STEERING and key != "description":
            out[key] = value
    return out


def _type(hint: Any, items: Mapping[str, Any], names: Names) -> dict[str, Any]:
    """The schema a type gives by itself (``items``: the metadata of a tuple's items)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"no schema for {hint}: give one in the field's metadata")
        return _type(rest[0], items, names)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _object(hint, names, True, True)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": _field(args[0], items, names)}
    if origin is Mapping:
        key, value = args
        if key is str and value is str:
            return {"$ref": "#/$defs/properties"}
        out: dict[str, Any] = {"type": "object"}
        if key is int:
            out["propertyNames"] = {"pattern": "^[0-9]+$"}
        if value is not Any:
            out["additionalProperties"] = _type(value, {}, names)
        return out
    raise TypeError(f"no schema for {hint}: give one in the field's metadata")
