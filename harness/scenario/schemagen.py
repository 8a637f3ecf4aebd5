"""The published JSON Schema of scenario files, generated from the model.

:mod:`kchaos.harness.scenario.model` is the one definition of a scenario: each field of its
frozen dataclasses is a key of the file, with the same name. This module turns the
dataclasses into ``harness/schema/scenario.schema.json`` (package data, what the loader
validates with); :func:`write` regenerates the file and a unit test checks that the file
in the tree is what :func:`render` gives, so the two cannot drift apart.

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
- ``ref``: the name of a shared definition (:data:`DEFS`) used instead of the type's
  schema, e.g. ``duration`` (seconds, or a string such as ``30s``) for a float;
- ``items``: the same vocabulary for the items of a tuple;
- ``nullable``: the file may also say ``null``;
- ``file``: False for a field the file does not have (``Scenario.source``); a string for a
  field the file spells differently;
- ``per_release``: the field is an object keyed by Kafka release whose values hold the
  other fields of its own dataclass again (``expect.before``).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kchaos.harness.checker.replicas import DUPLICATE_CAUSES
from kchaos.harness.rundir.anomalies import KINDS
from kchaos.harness.rundir.tickets import RELEASE_PATTERN
from kchaos.harness.scenario import model

#: Where the generated file lives in the source tree (package data of kchaos.harness).
SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schema" / "scenario.schema.json"

_HEAD: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://kchaos.invalid/schema/scenario.schema.json",
    "title": "kchaos scenario",
    "description": "One chaos experiment: a cluster, its topics, a workload, a nemesis, SLO "
    "checks and what the run must produce. Durations are seconds (a number) or a string "
    'such as "500ms", "30s", "2m".',
}

#: Shared definitions (``$defs``), named by a field's ``ref``.
DEFS: dict[str, Any] = {
    "duration": {
        "description": "Seconds, or a string with a unit: 500ms, 30s, 2m, 1h.",
        "oneOf": [
            {"type": "number", "minimum": 0},
            {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(ms|s|m|h)$"},
        ],
    },
    "properties": {
        "type": "object",
        "description": "Kafka properties; values are written as strings (true/false for booleans).",
        "propertyNames": {"pattern": "^[A-Za-z0-9._-]+$"},
        "additionalProperties": {"type": ["string", "number", "boolean"]},
    },
    "target": {
        "type": ["string", "integer"],
        "description": "Which nodes a fault hits, resolved when it starts (the faults "
        "package's grammar): all, brokers, controllers, random, random:K, minority, "
        "majority, controller (the active one), leader:TOPIC:PARTITION, "
        "coordinator:txn:TRANSACTIONAL_ID, coordinator:group:GROUP, "
        "client:txn:TRANSACTIONAL_ID (a transactional client process: the zombie fault "
        "only), none, a node name (broker-2) or id, several joined by commas.",
    },
    "anomaly": {"enum": list(KINDS)},
    "cause": {"enum": list(DUPLICATE_CAUSES)},
}

# Metadata keys that steer the generator rather than go into the schema.
_STEERING = ("ref", "items", "nullable", "file", "per_release")
# Metadata keywords that stand for the whole schema of the field.
_REPLACING = ("enum", "oneOf", "type")
_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _hints(cls: type) -> dict[str, Any]:
    # the model imports Plan for type checking only; the file has no plan
    return typing.get_type_hints(cls, localns={"Plan": Any})


def _file_fields(cls: type) -> list[tuple[str, dataclasses.Field[Any], Any]]:
    """(name in the file, field, type) of every field the file has, in model order."""
    hints = _hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        name = f.metadata.get("file", f.name)
        if name is not False:
            out.append((str(name), f, hints[f.name]))
    return out


def object_schema(cls: type, annotate: bool = True, skip: str = "") -> dict[str, Any]:
    """The schema of a dataclass: an object with exactly its fields (but ``skip``)."""
    props: dict[str, Any] = {}
    required = []
    for name, f, hint in _file_fields(cls):
        if name == skip:
            continue
        if f.metadata.get("per_release"):
            props[name] = _per_release(cls, name, f.metadata)
            continue
        props[name] = _field(hint, f.metadata, annotate)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(name)
    out: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if required:
        out["required"] = required
    out["properties"] = props
    return out


def _per_release(cls: type, name: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """``expect.before``: per release bound, the section's own fields once more (not
    nested again; described once, in the section itself)."""
    entry = object_schema(cls, annotate=False, skip=name)
    return {
        "description": meta["description"],
        "type": "object",
        "propertyNames": {"pattern": RELEASE_PATTERN},
        "additionalProperties": entry,
    }


def _field(hint: Any, meta: Mapping[str, Any], annotate: bool = True) -> dict[str, Any]:
    """The schema of one value of type ``hint`` with its field's ``meta``."""
    out: dict[str, Any] = {}
    if annotate and "description" in meta:
        out["description"] = meta["description"]
    if "ref" in meta:
        out["$ref"] = f"#/$defs/{meta['ref']}"
    elif not any(k in meta for k in _REPLACING):
        out.update(_type(hint, meta.get("items", {})))
        if meta.get("nullable"):
            out["type"] = [out["type"], "null"]
    for key, value in meta.items():
        if key not in _STEERING and key != "description":
            out[key] = value
    return out


def _type(hint: Any, items: Mapping[str, Any]) -> dict[str, Any]:
    """The schema a type gives by itself (``items``: the metadata of a tuple's items)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"no schema for {hint}: give one in the field's metadata")
        return _type(rest[0], items)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return object_schema(hint)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": _field(args[0], items)}
    if origin is Mapping:
        key, value = args
        if key is str and value is str:
            return {"$ref": "#/$defs/properties"}
        out: dict[str, Any] = {"type": "object"}
        if key is int:
            out["propertyNames"] = {"pattern": "^[0-9]+$"}
        if value is not Any:
            out["additionalProperties"] = _type(value, {})
        return out
    raise TypeError(f"no schema for {hint}: give one in the field's metadata")


def generate() -> dict[str, Any]:
    """The scenario file's JSON Schema (draft 2020-12), from the model."""
    body = object_schema(model.Scenario)
    return {**_HEAD, **body, "$defs": DEFS}


def render() -> str:
    """The text of ``scenario.schema.json``: :func:`generate`, two-space indented."""
    return json.dumps(generate(), indent=2, ensure_ascii=False) + "\n"


def write(path: Path = SCHEMA_FILE) -> Path:
    """Regenerate the published schema file (after a change to the model)."""
    path.write_text(render(), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write())
