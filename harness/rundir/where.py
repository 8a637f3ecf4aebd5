"""Where a JSON-lines reader is, for bad-input messages ``file:line: field: what``.

The readers of history.jsonl, controller.jsonl, replicas.jsonl and the independent
reader's file name the file, the 1-based line and the field of what they refuse.

:class:`LineCursor` moves along one run file and raises :class:`HistoryError` (bad run
data). It is not :class:`kchaos.faults.params.Where`, the frozen place of a value in a
scenario file (file, field path, YAML line) that raises :class:`ConfigError`.
"""

from __future__ import annotations

from typing import Any, NoReturn

from kchaos.harness.errors import HistoryError, shown

#: How a message names a JSON type.
NAMES = {int: "an integer", str: "a string", list: "a list", dict: "an object"}


class LineCursor:
    """The run file and the line being read, for error messages ``file:line: field: what``.

    One cursor serves a whole file: the reader moves it with :meth:`at` as it goes.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.no = 0

    def at(self, no: int) -> LineCursor:
        self.no = no
        return self

    def fail(self, message: str, field: str | None = None) -> NoReturn:
        raise HistoryError(message, file=self.path, line=self.no, field=field)

    def expect(self, event: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
        """``event[key]``, which must exist and be of (exactly) ``kind``."""
        if key not in event:
            self.fail("missing field", key)
        value = event[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if type(value) not in kinds:
            names = " or ".join(NAMES.get(k, k.__name__) for k in kinds)
            self.fail(f"expected {names}, got {shown(value, 60)}", key)
        return value

    def natural(self, event: dict[str, Any], key: str) -> int:
        """``event[key]``, which must be an integer of at least 0 (offsets, partitions)."""
        value = self.expect(event, key, int)
        if value < 0:
            self.fail(f"must not be negative, got {value}", key)
        return int(value)

    def int_list(self, event: dict[str, Any], key: str) -> list[int]:
        items = self.expect(event, key, list)
        for item in items:
            if type(item) is not int:
                self.fail(f"expected a list of integers, got {shown(item)}", key)
        return items
