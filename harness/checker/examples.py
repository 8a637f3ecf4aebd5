"""A second, targeted look at the history: the line indexes behind each example.

The first pass keeps no per-line data for reads (that would grow with events). Once the
checkers have picked their few examples, one regular-expression scan of the raw bytes
(read in pieces) finds the lines that mention an example's values; only those lines are parsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from kchaos.harness.checker.model import Anomaly

MAX_NEEDLES = 300
# A value longer than this is looked for by its first bytes only (a regular expression of
# a 30 MB literal takes gigabytes to compile); each candidate line is then parsed and the
# whole value compared, so the indexes found are the same.
MAX_NEEDLE_CHARS = 256
CHUNK_BYTES = 1 << 22


def add_line_indexes(path: str | Path, anomalies: dict[str, Anomaly]) -> None:
    """Extend each example's ``index`` with every line that mentions its value(s)."""
    wanted: dict[str, list[dict[str, Any]]] = {}
    for anomaly in anomalies.values():
        for ex in anomaly.examples:
            vals = list(ex.get("values", ()))
            if "value" in ex and ex["value"] not in vals:
                vals.append(ex["value"])
            for v in vals:
                if isinstance(v, str) and len(wanted) < MAX_NEEDLES:
                    wanted.setdefault(v, []).append(ex)
    if not wanted:
        return
    needles = []
    for v in wanted:
        if len(v) <= MAX_NEEDLE_CHARS:
            needle = orjson.dumps(v)  # with both quotes, escaped as in the file
        else:  # the opening quote and the escaped first characters
            needle = orjson.dumps(v[:MAX_NEEDLE_CHARS])[:-1]
        needles.append(re.escape(needle))
    pattern = re.compile(b"(?:" + b"|".join(needles) + b")")
    found: dict[int, set[int]] = {}
    with open(path, "rb") as fh:
        for buf in _whole_lines(fh):
            done_until = -1
            for match in pattern.finditer(buf):
                if match.start() < done_until:
                    continue
                start = buf.rfind(b"\n", 0, match.start()) + 1
                end = buf.find(b"\n", match.end())
                end = len(buf) if end < 0 else end
                done_until = end
                _note_line(memoryview(buf)[start:end], wanted, found)
    for ex_id, indexes in found.items():
        found_ex = _by_id(anomalies, ex_id)
        if found_ex is not None:
            found_ex["index"] = sorted(set(found_ex.get("index", [])) | indexes)


def _whole_lines(fh: BinaryIO, chunk: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The file in pieces of whole lines (the last one may lack its newline).

    Read piece by piece rather than mapped whole: memory stays near one piece, or one
    line where a line is longer than a piece, however large the history is.
    """
    parts: list[bytes] = []
    while True:
        data = fh.read(chunk)
        if not data:
            if parts:
                yield b"".join(parts)
            return
        end = data.rfind(b"\n") + 1
        if end == 0:  # inside a line longer than a piece: gather it
            parts.append(data)
            continue
        rest = data[end:]
        parts.append(data[:end] if rest else data)
        del data
        piece = b"".join(parts) if len(parts) > 1 else parts[0]
        parts = [rest] if rest else []
        yield piece
        del piece


def _note_line(
    line: bytes | memoryview, wanted: dict[str, list[dict[str, Any]]], found: dict[int, set[int]]
) -> None:
    try:
        ev = orjson.loads(line)
    except orjson.JSONDecodeError:
        return
    if not isinstance(ev, dict) or not isinstance(ev.get("index"), int):
        return
    mentioned = [ev.get("value")]
    for key in ("records", "sends", "consumed"):  # sends, consumed: a txn line (1.2)
        items = ev.get(key)
        if isinstance(items, list):
            mentioned += [r.get("value") for r in items if isinstance(r, dict)]
    for v in mentioned:
        if isinstance(v, str) and v in wanted:
            for ex in wanted[v]:
                found.setdefault(id(ex), set()).add(ev["index"])


def _by_id(anomalies: dict[str, Anomaly], ex_id: int) -> dict[str, Any] | None:
    for anomaly in anomalies.values():
        for ex in anomaly.examples:
            if id(ex) == ex_id:
                return ex
    return None
