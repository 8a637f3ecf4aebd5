"""The JSON Schema generator's rules (kchaos.harness.rundir.schemagen), on a small model of
its own; the scenario's and run.json's schemas are tested with their models."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from kchaos.harness.rundir.schemagen import main, object_schema, render


@dataclass(frozen=True)
class Inner:
    size: int = field(default=1, metadata={"minimum": 1, "description": "how big"})


@dataclass(frozen=True)
class Toy:
    name: str = field(metadata={"pattern": "^[a-z]+$"})
    wait: float = field(default=1.0, metadata={"ref": "duration"})
    host: str | None = field(default=None, metadata={"nullable": True})
    mode: Literal["a", "b"] = "a"
    gone: Inner | None = None
    inner: Inner = field(default_factory=Inner)
    ids: tuple[tuple[int, ...], ...] = field(default=(), metadata={"items": {"minItems": 1}})
    props: Mapping[str, str] = field(default_factory=dict)
    per_node: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    acks: str = field(default="all", metadata={"enum": ["all", 1]})
    hidden: str = field(default="", metadata={"file": False})
    history: Mapping[str, Any] = field(
        default_factory=dict, metadata={"file": "before", "per_release": True, "description": "d"}
    )


INNER = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"size": {"description": "how big", "type": "integer", "minimum": 1}},
}


def test_the_generator_derives_the_schema_from_types_and_metadata() -> None:
    toy = object_schema(Toy)
    assert toy["required"] == ["name"]
    props = toy["properties"]
    assert list(props) == [
        "name", "wait", "host", "mode", "gone", "inner", "ids", "props", "per_node", "acks",
        "before",
    ]  # fmt: skip
    assert props["name"] == {"type": "string", "pattern": "^[a-z]+$"}
    assert props["wait"] == {"$ref": "#/$defs/duration"}
    assert props["host"] == {"type": ["string", "null"]}
    assert props["mode"] == {"enum": ["a", "b"]}
    assert props["gone"] == props["inner"] == INNER
    assert props["ids"] == {
        "type": "array",
        "items": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
    }
    assert props["props"] == {"$ref": "#/$defs/properties"}
    assert props["per_node"] == {
        "type": "object",
        "propertyNames": {"pattern": "^[0-9]+$"},
        "additionalProperties": {"type": "object"},
    }
    assert props["acks"] == {"enum": ["all", 1]}
    before = props["before"]
    assert before["propertyNames"] == {"pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+$"}
    entry = before["additionalProperties"]
    assert "before" not in entry["properties"] and "hidden" not in entry["properties"]
    assert entry["properties"]["inner"] == INNER  # nested objects keep their descriptions


@dataclass(frozen=True)
class Unknown:
    value: complex = 0j


def test_a_type_without_a_rule_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="complex"):
        object_schema(Unknown)


@dataclass(frozen=True)
class Open:
    known: int | None = field(default=None, metadata={"nullable": True})
    elsewhere: str | None = field(default=None, metadata={"file": "other", "ref": "text"})


def test_an_open_object_takes_other_keys_and_renamed_fields() -> None:
    assert object_schema(Open, closed=False) == {
        "type": "object",
        "additionalProperties": True,
        "properties": {
            "known": {"type": ["integer", "null"]},
            "other": {"$ref": "#/$defs/text"},
        },
    }


def test_main_writes_the_rendered_schema_and_prints_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # what both generator modules' __main__ run (the scenario's and run.json's schema)
    path = tmp_path / "toy.schema.json"
    main(lambda: {"toy": object_schema(Toy)}, path)
    text = path.read_text(encoding="utf-8")
    assert text == render({"toy": object_schema(Toy)}) and text.endswith("}\n")
    assert json.loads(text)["toy"]["required"] == ["name"]
    assert capsys.readouterr().out == f"{path}\n"


@dataclass(frozen=True)
class Renamed:
    for_: float | None = field(
        default=None,
        metadata={
            "file": "for",
            "ref": "duration",
            "description": "how long",
            "aliases": {"duration": "the old spelling"},
        },
    )


def test_an_old_spelling_is_a_deprecated_property_not_allowed_with_the_new_one() -> None:
    out = object_schema(Renamed)
    assert list(out["properties"]) == ["for", "duration"]
    assert out["properties"]["for"] == {"description": "how long", "$ref": "#/$defs/duration"}
    assert out["properties"]["duration"] == {
        "description": "the old spelling",
        "$ref": "#/$defs/duration",
        "deprecated": True,
    }
    assert out["dependentSchemas"] == {"duration": {"not": {"required": ["for"]}}}
    bare = object_schema(Renamed, annotate=False)["properties"]
    assert "description" not in bare["duration"] and bare["duration"]["deprecated"] is True
