"""How a run directory's files are written and read, in one place.

* :func:`atomic_write`: a file appears whole or not at all. Everything is written to
  ``NAME.tmp`` beside it and renamed over ``NAME`` once closed; on any exception the
  temporary file is removed and the old ``NAME`` (if any) is left as it was.
* :func:`write_json`: a JSON document through :func:`atomic_write` (indented, as people
  read these files).
* :func:`jsonable`: any value as plain JSON data (mappings, lists, strings, numbers,
  booleans, null).
* :func:`read_object`: a JSON object file; :func:`json_lines`: a JSON-lines file whose
  every line must be an object (replicas.jsonl, reread.jsonl).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import orjson

from kchaos.harness.errors import HistoryError

#: What a temporary file's name adds to the final one.
TMP_SUFFIX = ".tmp"


def tmp_path(path: Path) -> Path:
    """Where :func:`atomic_write` puts ``path``'s content until it is complete."""
    return path.with_name(path.name + TMP_SUFFIX)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A binary file to write ``path`` through: renamed over ``path`` when the block ends
    without an exception, removed when it raises (no partial file is ever seen)."""
    target = Path(path)
    tmp = tmp_path(target)
    try:
        with tmp.open("wb") as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """``data`` as ``path``'s whole content, atomically."""
    with atomic_write(path) as fh:
        fh.write(data)


def write_json(
    path: str | os.PathLike[str], data: Any, *, indent: bool = True, sort_keys: bool = False
) -> None:
    """``data`` (after :func:`jsonable`) as a JSON file, atomically."""
    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    write_bytes(path, orjson.dumps(jsonable(data), option=option))


def line_writer(fh: IO[bytes]) -> Callable[[Any], None]:
    """A function writing one JSON line to ``fh`` per call: bytes as they are (a line
    already serialised), anything else as JSON (through :func:`jsonable` when orjson
    cannot take it as it is: a tuple key, a set)."""
    dumps = orjson.dumps

    def put(line: Any) -> None:
        if not isinstance(line, bytes):
            try:
                line = dumps(line)
            except TypeError:
                line = dumps(jsonable(line))
        fh.write(line + b"\n")

    return put


def jsonable(value: Any) -> Any:
    """Plain JSON data for ``value``.

    Mappings become objects with string keys (a tuple key such as ``(topic, partition)``
    becomes ``"topic/partition"``); lists, tuples, sets and frozensets become lists;
    dataclass instances become objects of their fields; an enum member becomes its
    value; subclasses of str, int, float and bool (YAML loaders' scalar types) become the
    plain type; None stays None; anything else (a Path, a datetime) becomes its string.
    """
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, str | int | float):  # bool has no subclasses
        return next(kind(value) for kind in (str, int, float) if isinstance(value, kind))
    if isinstance(value, Mapping):
        return {_key(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, tuple):
        return "/".join(str(k) for k in key)
    if isinstance(key, enum.Enum):
        return str(key.value)
    return str(key)


def read_object(path: Path) -> dict[str, Any] | None:
    """A JSON object file of a run directory (run.json, results.json, summary.json);
    None when absent, HistoryError naming the file when it is not a JSON object."""
    if not path.exists():
        return None
    if not path.is_file():
        raise HistoryError("is not a regular file", file=str(path))
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise HistoryError(f"not JSON: {exc}", file=str(path)) from None
    except OSError as exc:
        raise HistoryError(f"cannot read: {exc.strerror}", file=str(path)) from None
    if not isinstance(data, dict):
        raise HistoryError(
            f"expected a JSON object, got {type(data).__name__}", file=str(path), line=1
        )
    return data


def json_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each line of a JSON-lines file with its number (1-based), every one an object;
    a line that is not (a blank one included) is a HistoryError naming file and line."""
    name = str(path)
    with open(path, "rb") as fh:
        for no, raw in enumerate(fh, 1):
            try:
                line: Any = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise HistoryError(f"not JSON ({exc})", file=name, line=no) from None
            if type(line) is not dict:
                raise HistoryError("expected a JSON object", file=name, line=no)
            yield no, line
