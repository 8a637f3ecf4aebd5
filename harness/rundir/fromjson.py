"""Frozen dataclasses from their JSON form (``dataclasses.asdict`` made plain): the
inverse of :func:`kchaos.harness.rundir.files.jsonable` for the run description's models.

The field types say what each value must be, read the way :mod:`kchaos.harness.rundir.
schemagen` reads them for the schema: ``str``, ``int``, ``float`` (an int is taken),
``bool``; a ``Literal`` one of its values; ``tuple[X, ...]`` a list of X; ``Mapping[K, V]``
an object, its keys made K (``int`` for a node id); a dataclass an object with its
fields, the ones without a default required and no other; ``X | None`` X or null;
``Any`` anything. Kafka properties (``Mapping[str, str]``) take a number or boolean too,
as Kafka reads it (booleans lower-case). A value that is not what its field says raises
``error(path, message)``'s exception, with the path of the value inside ``data``.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kchaos.harness.errors import shown

T = TypeVar("T")
Path_ = tuple[str | int, ...]
Error = Callable[[Path_, str], Exception]


def prop_str(value: Any) -> str:
    """A Kafka property value as Kafka reads it (booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def from_json(cls: type[T], data: Any, error: Error, path: Path_ = ()) -> T:
    """``data`` as a ``cls``, checked field by field."""
    result: T = _value(cls, data, error, path)
    return result


def _fields(cls: type) -> dict[str, tuple[dataclasses.Field[Any], Any]]:
    hints = typing.get_type_hints(cls)
    return {f.name: (f, hints[f.name]) for f in dataclasses.fields(cls) if f.init}


def _dataclass(cls: type, data: Any, error: Error, path: Path_) -> Any:
    if not isinstance(data, Mapping):
        raise error(path, f"expected an object, got {shown(data)}")
    fields = _fields(cls)
    unknown = sorted(str(k) for k in data if k not in fields)
    if unknown:
        raise error((*path, unknown[0]), f"unknown field (allowed: {', '.join(fields)})")
    kwargs: dict[str, Any] = {}
    for name, (f, hint) in fields.items():
        if name in data:
            kwargs[name] = _value(hint, data[name], error, (*path, name))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise error((*path, name), "is required")
    return cls(**kwargs)


def _value(hint: Any, data: Any, error: Error, path: Path_) -> Any:
    if hint is Any:
        return data
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _value(rest[0], data, error, path)
        for arg in rest:  # e.g. bool | Literal["unknown"]: the first that takes it
            try:
                return _value(arg, data, error, path)
            except Exception:  # noqa: BLE001 - the next member of the union may take it
                continue
        raise error(path, f"not one of {_names(rest)}: {shown(data)}")
    if origin is typing.Literal:
        if not any(data == a and type(data) is type(a) for a in args):
            raise error(path, f"{shown(data)} is not one of {list(args)}")
        return data
    if origin is tuple:
        if not isinstance(data, list | tuple):
            raise error(path, f"expected a list, got {shown(data)}")
        item = args[0]
        return tuple(_value(item, v, error, (*path, i)) for i, v in enumerate(data))
    if origin is Mapping or (isinstance(origin, type) and issubclass(origin, Mapping)):
        if not isinstance(data, Mapping):
            raise error(path, f"expected an object, got {shown(data)}")
        key_type, value_type = args
        out = {}
        for k, v in data.items():
            key = _key(key_type, k, error, (*path, str(k)))
            if key_type is str and value_type is str and not isinstance(v, Mapping | list):
                out[key] = prop_str(v)
            else:
                out[key] = _value(value_type, v, error, (*path, str(k)))
        return out
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass(hint, data, error, path)
    if hint is bool:
        if not isinstance(data, bool):
            raise error(path, f"expected true or false, got {shown(data)}")
        return data
    if hint is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise error(path, f"expected an integer, got {shown(data)}")
        return data
    if hint is float:
        if isinstance(data, bool) or not isinstance(data, int | float) or not math.isfinite(data):
            raise error(path, f"expected a number, got {shown(data)}")
        return float(data)
    if hint is str:
        if not isinstance(data, str):
            raise error(path, f"expected a string, got {shown(data)}")
        return data
    raise TypeError(f"no JSON form for {hint!r}")


def _key(key_type: Any, key: Any, error: Error, path: Path_) -> Any:
    if key_type is int:
        try:
            return int(key)
        except (TypeError, ValueError):
            raise error(path, f"expected a node id, got {shown(key)}") from None
    return str(key)


def _names(hints: list[Any]) -> str:
    return " or ".join(getattr(h, "__name__", str(h)) for h in hints)
