"""A second, targeted look at the history: the line indexes behind each example.

The first pass keeps no per-line data for reads (that would grow with events). Once the
checkers have picked their few examples, one regular-expression scan of the raw bytes
finds the lines that mention an example's values; only those lines are parsed.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path
from typing import Any

import orjson

from harness.checker.model import Anomaly

MAX_NEEDLES = 300


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
    pattern = re.compile(
        b'"(?:' + b"|".join(re.escape(orjson.dumps(v)[1:-1]) for v in wanted) + b')"'
    )
    found: dict[int, set[int]] = {}
    with open(path, "rb") as fh:
        try:
            buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # empty file
            return
        with buf:
            done_until = -1
            for match in pattern.finditer(buf):
                if match.start() < done_until:
                    continue
                start = buf.rfind(b"\n", 0, match.start()) + 1
                end = buf.find(b"\n", match.end())
                end = len(buf) if end < 0 else end
                done_until = end
                _note_line(buf[start:end], wanted, found)
    for ex_id, indexes in found.items():
        found_ex = _by_id(anomalies, ex_id)
        if found_ex is not None:
            found_ex["index"] = sorted(set(found_ex.get("index", [])) | indexes)


def _note_line(
    line: bytes, wanted: dict[str, list[dict[str, Any]]], found: dict[int, set[int]]
) -> None:
    try:
        ev = orjson.loads(line)
    except orjson.JSONDecodeError:
        return
    if not isinstance(ev, dict) or not isinstance(ev.get("index"), int):
        return
    mentioned = [ev.get("value")]
    records = ev.get("records")
    if isinstance(records, list):
        mentioned += [r.get("value") for r in records if isinstance(r, dict)]
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
