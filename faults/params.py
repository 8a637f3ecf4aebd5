"""Typed, documented fault parameters and their validation.

Every fault family declares its parameters as a tuple of :class:`Param`. Validation turns a
raw mapping (from a scenario file or from Python) into a plain dict with defaults filled in,
and raises :class:`kchaos.harness.errors.ConfigError` naming the offending field, e.g.
``nemesis.faults[2].params.latency_ms: must be >= 0, got -5``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kchaos.harness.errors import ConfigError


@dataclass(frozen=True)
class Where:
    """Where a scenario value came from, for error messages: a file, a field path, a line.

    Frozen; :meth:`child` names a nested value. Not the run-file reader's
    :class:`kchaos.harness.rundir.where.LineCursor`, which raises ``HistoryError``.
    """

    file: str | None = None
    field: str = ""
    line: int | None = None

    def child(self, key: str | int, container: Any = None) -> Where:
        name = f"{self.field}[{key}]" if isinstance(key, int) else _join(self.field, key)
        return Where(self.file, name, line_of(container, key) or self.line)

    def error(self, message: str) -> ConfigError:
        return ConfigError(message, file=self.file, line=self.line, field=self.field or None)


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def line_of(container: Any, key: str | int) -> int | None:
    """1-based line of ``key`` in a ruamel.yaml container, when it carries positions."""
    lc = getattr(container, "lc", None)
    if lc is None:
        return None
    try:
        pos = lc.key(key) if isinstance(key, str) else lc.item(key)
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return int(pos[0]) + 1


@dataclass(frozen=True)
class Param:
    """One parameter of a fault family.

    kind: "float", "int", "bool", "str" or "target" (a target spec string, resolved when
    the fault starts). ``choices`` restricts str values; ``minimum``/``maximum`` bound numbers.
    """

    name: str
    kind: str
    default: Any
    doc: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    def check(self, value: Any, where: Where) -> Any:
        if self.kind in ("float", "int"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise where.error(f"must be a number, got {value!r}")
            if self.kind == "int":
                if isinstance(value, float) and not value.is_integer():
                    raise where.error(f"must be an integer, got {value!r}")
                value = int(value)
            else:
                value = float(value)
            if self.minimum is not None and value < self.minimum:
                raise where.error(f"must be >= {self.minimum:g}, got {value!r}")
            if self.maximum is not None and value > self.maximum:
                raise where.error(f"must be <= {self.maximum:g}, got {value!r}")
            return value
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise where.error(f"must be true or false, got {value!r}")
            return value
        if self.kind in ("str", "target"):
            if self.kind == "target" and isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str) or not value:
                raise where.error(f"must be a non-empty string, got {value!r}")
            if self.choices and value not in self.choices:
                raise where.error(f"must be one of {', '.join(self.choices)}; got {value!r}")
            if self.kind == "target":
                from kchaos.faults.targets import parse_target

                if parse_target(value, where).kind == "client":
                    raise where.error(f"must name nodes, not a client process: {value!r}")
            return value
        raise AssertionError(f"unknown param kind {self.kind}")


def validate_params(
    declared: Sequence[Param], raw: Mapping[str, Any] | None, where: Where
) -> dict[str, Any]:
    """Defaults filled in, types checked, unknown names rejected."""
    raw = raw if raw is not None else {}
    if not isinstance(raw, Mapping):
        raise where.error(f"must be a mapping of parameter names to values, got {raw!r}")
    known = {p.name: p for p in declared}
    for key in raw:
        if key not in known:
            names = ", ".join(sorted(known)) or "none"
            raise where.child(str(key), raw).error(
                f"unknown parameter {key!r} (this fault takes: {names})"
            )
    out: dict[str, Any] = {}
    for p in declared:
        if p.name in raw:
            out[p.name] = p.check(raw[p.name], where.child(p.name, raw))
        else:
            out[p.name] = p.default
    return out


def describe_params(declared: Sequence[Param]) -> str:
    """A docstring-style table of parameters (used by docs and ``--help`` texts)."""
    rows = []
    for p in declared:
        extra = f" one of {'|'.join(p.choices)}." if p.choices else ""
        rows.append(f"  {p.name} ({p.kind}, default {p.default!r}): {p.doc}{extra}")
    return "\n".join(rows)
