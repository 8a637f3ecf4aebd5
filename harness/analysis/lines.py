"""Plain-Python checks of single history lines, used only on the error path.

Spark tells the job THAT some line is corrupt; these functions say WHICH line and WHAT is
wrong with it, so the message names file, line and field as the project requires.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from kchaos.harness.analysis.schema import (
    ACTIONS,
    ISOLATIONS,
    OPTIONAL,
    RECORD_FIELDS,
    REQUIRED,
    TXN_SEND_OPTIONAL,
    TXN_SEND_REQUIRED,
    TYPES,
)
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.history import F_TXN, F_TXN_END, INVOKE, numbered


def _type_ok(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, types)


def line_problem(text: str) -> tuple[str | None, str] | None:
    """(field, what is wrong) for one line, or None when the line is fine."""
    try:
        event = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return None, f"not JSON ({exc})"
    return event_problem(event)


def event_problem(event: Any) -> tuple[str | None, str] | None:
    """(field, what is wrong) for one parsed line, or None when it fits the schema."""
    if not isinstance(event, dict):
        return None, "not a JSON object"
    for name, types in REQUIRED.items():
        if name not in event or event[name] is None:
            return name, "missing"
        if not _type_ok(event[name], types):
            return name, f"expected {' or '.join(t.__name__ for t in types)}"
    if event["type"] not in TYPES:
        return "type", f"unknown type {event['type']!r}"
    for name, types in OPTIONAL.items():
        if event.get(name) is not None and not _type_ok(event[name], types):
            return name, f"expected {' or '.join(t.__name__ for t in types)}"
    for key in ("records", "consumed"):
        for i, record in enumerate(event.get(key) or []):
            if not isinstance(record, dict):
                return f"{key}[{i}]", "expected an object"
            for name, types in RECORD_FIELDS.items():
                if record.get(name) is None or not _type_ok(record[name], types):
                    return f"{key}[{i}].{name}", "missing or mistyped"
    return _txn_problem(event)


def _txn_problem(event: dict[str, Any]) -> tuple[str | None, str] | None:
    """The format 1.2 fields: isolation, a txn's sends, the offsets it commits; 1.3's
    txn-end line (an invoke naming its txn and a known action)."""
    if event.get("isolation") is not None and event["isolation"] not in ISOLATIONS:
        return "isolation", f"unknown isolation {event['isolation']!r}"
    if event["f"] == F_TXN_END:
        if event["type"] != INVOKE:
            return "type", "a txn-end line is an invoke"
        if event.get("txn") is None:
            return "txn", "missing"
        if event.get("action") not in ACTIONS:
            return "action", f"unknown action {event.get('action')!r} (commit or abort)"
    invoke = event["f"] == F_TXN and event["type"] == INVOKE
    if invoke and not event.get("sends"):
        return "sends", "a txn invoke without sends"
    for i, send in enumerate(event.get("sends") or []):
        if not isinstance(send, dict):
            return f"sends[{i}]", "expected an object"
        required = TXN_SEND_REQUIRED if invoke else {"value": TXN_SEND_REQUIRED["value"]}
        for name, types in required.items():
            if send.get(name) is None or not _type_ok(send[name], types):
                return f"sends[{i}].{name}", "missing or mistyped"
        for name, types in {**TXN_SEND_OPTIONAL, **TXN_SEND_REQUIRED}.items():
            if send.get(name) is not None and not _type_ok(send[name], types):
                return f"sends[{i}].{name}", "mistyped"
    offsets = event.get("offsets") if event["f"] == F_TXN else None  # a commit's: not read
    if offsets is not None:
        if not isinstance(offsets, dict):
            return "offsets", "expected an object on a txn line"
        if offsets.get("group") is not None and not _type_ok(offsets["group"], (str,)):
            return "offsets.group", "expected str"
        for i, pos in enumerate(offsets.get("positions") or []):
            if not (
                isinstance(pos, list)
                and len(pos) == 3
                and _type_ok(pos[0], (str,))
                and _type_ok(pos[1], (int,))
                and _type_ok(pos[2], (int,))
            ):
                return f"offsets.positions[{i}]", "expected [topic, partition, next offset]"
    return None


def last_line(path: Path) -> str:
    """The last non-empty line of a file, read from its end."""
    with path.open("rb") as fh:
        fh.seek(0, 2)
        end = fh.tell()
        block = 1 << 16
        data = b""
        pos = end
        while pos > 0:
            step = min(block, pos)
            pos -= step
            fh.seek(pos)
            data = fh.read(step) + data
            stripped = data.rstrip(b"\r\n\t ")
            if b"\n" in stripped or pos == 0:
                return stripped.rsplit(b"\n", 1)[-1].decode("utf-8", "replace")
    return ""


def count_lines(path: Path) -> int:
    """The number of the last non-empty line (1-based)."""
    number = 0
    last_nonempty = 0
    with path.open("rb") as fh:
        for raw in fh:
            number += 1
            if raw.strip():
                last_nonempty = number
    return last_nonempty


def first_bad_line(path: Path, skip_last: bool) -> HistoryError:
    """The error for the first bad line of ``path`` (a torn last line excepted), read
    with the run directory's history reader (blank lines skipped, as Spark does)."""
    last = count_lines(path) if skip_last else -1
    for number, event in numbered(path):
        if number == last:
            continue
        problem = (None, "not JSON") if event is None else event_problem(event)
        if problem is not None:
            field, what = problem
            return HistoryError(what, file=str(path), line=number, field=field)
    return HistoryError("a line does not fit history format v1", file=str(path))
