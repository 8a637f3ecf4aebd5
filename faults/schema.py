"""A JSON Schema of the nemesis spec, generated from the fault registry.

For scenario files (``nemesis:``) and editors. :func:`kchaos.faults.schedule.from_spec` remains
the authority (it also checks target specs and ranges, with field paths and lines); the
schema catches the same structural mistakes earlier and documents every param.
"""

from __future__ import annotations

from typing import Any

from kchaos.faults.base import NO_TARGET, registry
from kchaos.faults.params import Param
from kchaos.faults.trigger import trigger_schema

_KIND_TYPES = {"float": "number", "int": "integer", "bool": "boolean", "str": "string"}
_NUMBER = {"type": "number", "minimum": 0}
_RANGE = {"type": "array", "items": _NUMBER, "minItems": 2, "maxItems": 2}
_DRAW = {
    "type": "object",
    "minProperties": 1,
    "maxProperties": 1,
    "properties": {
        "choice": {"type": "array", "minItems": 1},
        "uniform": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        "randint": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
    },
    "additionalProperties": False,
}


def _param_schema(p: Param) -> dict[str, Any]:
    out: dict[str, Any] = {"description": p.doc, "default": p.default}
    if p.kind == "target":
        out["type"] = ["string", "integer"]
    else:
        out["type"] = _KIND_TYPES[p.kind]
    if p.choices:
        out["enum"] = list(p.choices)
    if p.minimum is not None:
        out["minimum"] = p.minimum
    if p.maximum is not None:
        out["maximum"] = p.maximum
    return out


def _params_by_fault(random: bool) -> list[dict[str, Any]]:
    """Per fault: its params, and ``none`` as the only target of a fault that takes none."""
    rules = []
    for name, cls in sorted(registry().items()):
        props: dict[str, Any] = {}
        for p in cls.params_spec:
            props[p.name] = {"anyOf": [_param_schema(p), _DRAW]} if random else _param_schema(p)
        then: dict[str, Any] = {
            "params": {"type": "object", "properties": props, "additionalProperties": False}
        }
        if cls.default_target == NO_TARGET:
            none = {"const": NO_TARGET}
            then["target"] = {"anyOf": [none, {"type": "array", "items": none}]} if random else none
        rules.append(
            {
                "if": {"properties": {"fault": {"const": name}}, "required": ["fault"]},
                "then": {"properties": then},
            }
        )
    return rules


def nemesis_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a scripted or random nemesis spec."""
    names = sorted(registry())
    target = {"type": ["string", "integer"]}
    scripted_entry = {
        "type": "object",
        "required": ["fault"],
        "properties": {
            "at": _NUMBER,
            "for": _NUMBER,
            "duration": {**_NUMBER, "deprecated": True},  # the old spelling of for
            "fault": {"enum": names},
            "target": target,
            "params": {"type": "object"},
            "when": trigger_schema(),
            "timeout": {"type": "number", "exclusiveMinimum": 0},
            "on_timeout": {"enum": ["skip", "start"]},
        },
        "additionalProperties": False,
        "allOf": [
            {"anyOf": [{"required": ["at"]}, {"required": ["when"]}]},
            {"dependentRequired": {"timeout": ["when"], "on_timeout": ["when"]}},
            {"dependentSchemas": {"duration": {"not": {"required": ["for"]}}}},
            *_params_by_fault(random=False),
        ],
    }
    random_entry = {
        "type": "object",
        "required": ["fault"],
        "properties": {
            "fault": {"enum": names},
            "weight": _NUMBER,
            "for": {"anyOf": [_NUMBER, _RANGE]},
            "target": {"anyOf": [target, {"type": "array", "items": target, "minItems": 1}]},
            "params": {"type": "object"},
        },
        "additionalProperties": False,
        "allOf": _params_by_fault(random=True),
    }
    seed = {"type": ["integer", "string"]}
    number_or_range = {"anyOf": [_NUMBER, _RANGE]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "kchaos nemesis",
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "type": {"const": "scripted"},
                    "seed": seed,
                    "faults": {"type": "array", "items": scripted_entry, "minItems": 1},
                },
                "required": ["faults"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {
                    "type": {"const": "random"},
                    "seed": seed,
                    "start_s": _NUMBER,
                    "duration_s": _NUMBER,
                    "fault_s": number_or_range,
                    "quiet_s": number_or_range,
                    "concurrency": {"type": "integer", "minimum": 1},
                    "stagger_s": _NUMBER,
                    "faults": {"type": "array", "items": random_entry, "minItems": 1},
                },
                "required": ["type", "faults"],
                "additionalProperties": False,
            },
        ],
    }
