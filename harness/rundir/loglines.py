"""Kafka's own account of its defence: log lines a scenario requires (``expect.log_lines``).

A fixed release shows that a bug is fixed only when the mechanism of the bug demonstrably
ran and Kafka defended against it. Where Kafka logs that defence (KIP-903's controller
refusing a stale ISR request, KAFKA-15489's isolated leader resigning, KAFKA-15375's
recovery after a failed start), the scenario names the line and the run must show it.

This module holds the one definition of such a line (:class:`LogLine`), finds each in the
nodes' logs the run kept (``logs/<container>/server.log``) and writes results.json's
``evidence.lines``, one entry per required line:

    {"contains": "rejected the request with INELIGIBLE_REPLICA", "node": 1,
     "why": "...", "effect": "seen", "count": 13,
     "observed": "kchaos-...-broker-1/server.log:812: [2026-...] INFO ..."}

``effect`` uses the words of ``evidence.faults``: ``seen`` (found, ``observed`` quotes the
first), ``not-seen`` (the node's log was read and does not have it), ``not-measured`` (the
run kept no log of that node). :func:`kchaos.harness.rundir.expect.evaluate` makes a run
whose required line is not ``seen`` "not exercised".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kchaos.harness.rundir.nodelogs import NodeLog

#: How much of a found line ``observed`` quotes.
QUOTED = 300

SEEN = "seen"
NOT_SEEN = "not-seen"
NOT_MEASURED = "not-measured"

ErrorAt = Callable[[tuple[str | int, ...], str], Exception]


@dataclass(frozen=True)
class LogLine:
    """One line a run's node logs must have: ``contains`` in the log of node ``node``
    (a broker or controller id; None: any node's)."""

    contains: str = field(
        metadata={
            "description": "Text the line contains, exactly as Kafka writes it (case "
            "matters); with regex, a Python regular expression searched in the line.",
            "minLength": 3,
        }
    )
    node: int | None = field(
        default=None,
        metadata={
            "description": "The node (broker or controller id) whose log must have it; "
            "absent: any node's.",
            "nullable": True,
            "minimum": 0,
        },
    )
    why: str = field(
        default="",
        metadata={"description": "What the line shows (Kafka's defence, the mechanism running)."},
    )
    regex: bool = field(
        default=False,
        metadata={
            "description": "contains is a regular expression (to tell 'Recovering 19 "
            "logs' from a fresh node's 'Recovering 0 logs')."
        },
    )

    def matches(self, text: str) -> bool:
        if self.regex:
            return _compiled(self.contains).search(text) is not None
        return self.contains in text

    @property
    def label(self) -> str:
        where = "any node" if self.node is None else f"node {self.node}"
        return f"{self.contains!r} in {where}'s log"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"contains": self.contains, "node": self.node, "why": self.why}
        if self.regex:
            out["regex"] = True
        return out

    def same(self, entry: Mapping[str, Any]) -> bool:
        """Whether an ``evidence.lines`` entry is this line's."""
        return (
            entry.get("contains") == self.contains
            and entry.get("node") == self.node
            and bool(entry.get("regex", False)) == self.regex
        )


def parse_log_lines(raw: Any, error: ErrorAt) -> tuple[LogLine, ...]:
    """``expect.log_lines`` of a scenario or run.json: a list of ``{contains, node?,
    why?}``; ``error(path, message)`` makes the exception for a bad entry (its path is
    relative to the list)."""
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise error((), f"expected a list of lines, got {type(raw).__name__}")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise error((i,), f"expected an object with 'contains', got {type(item).__name__}")
        unknown = sorted(set(item) - {"contains", "node", "why", "regex"})
        if unknown:
            raise error((i, unknown[0]), "unknown field (expected contains, node, why, regex)")
        contains = item.get("contains")
        if not isinstance(contains, str) or len(contains.strip()) < 3:
            raise error((i, "contains"), "expected the text of the line (3 characters or more)")
        node = item.get("node")
        if node is not None and (isinstance(node, bool) or not isinstance(node, int) or node < 0):
            raise error((i, "node"), f"expected a node id, got {node!r}")
        why = item.get("why", "")
        if not isinstance(why, str):
            raise error((i, "why"), f"expected text, got {type(why).__name__}")
        regex = item.get("regex", False)
        if not isinstance(regex, bool):
            raise error((i, "regex"), f"expected true or false, got {regex!r}")
        if regex:
            try:
                _compiled(contains)
            except re.error as exc:
                raise error((i, "contains"), f"not a regular expression: {exc}") from None
        out.append(LogLine(contains, node, why, regex))
    return tuple(out)


def line_evidence(wanted: Sequence[LogLine], logs: Iterable[NodeLog]) -> list[dict[str, Any]]:
    """results.json's ``evidence.lines``: each wanted line looked for in the logs of its
    node (every node's, for a line with no node). Each log is read once."""
    logs = list(logs)
    found: dict[LogLine, list[tuple[NodeLog, int, str]]] = {w: [] for w in wanted}
    for log in logs:
        mine = [w for w in wanted if w.node is None or w.node == log.node_id]
        if not mine:
            continue
        for number, text in log.lines():
            for w in mine:
                if w.matches(text):
                    found[w].append((log, number, text))
    out = []
    for w in wanted:
        hits = found[w]
        entry = w.to_json()
        if hits:
            log, number, text = hits[0]
            entry.update(
                effect=SEEN, count=len(hits), observed=f"{log.where(number)}: {text[:QUOTED]}"
            )
        elif not any(w.node is None or w.node == log.node_id for log in logs):
            kept = "no node's log" if w.node is None else f"no log of node {w.node}"
            entry.update(effect=NOT_MEASURED, count=0, observed=f"the run kept {kept}")
        else:
            read = [log.container for log in logs if w.node is None or w.node == log.node_id]
            entry.update(
                effect=NOT_SEEN, count=0, observed=f"not in {', '.join(read)}'s server.log"
            )
        out.append(entry)
    return out


def unseen_lines(wanted: Any, results: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``expect.log_lines`` entries (plain data, as run.json holds them) that
    results.json's ``evidence.lines`` does not show ``seen``, each with why: (label,
    reason). A results.json without the entry (checked before lines existed) has not
    shown it."""
    try:
        lines = parse_log_lines(wanted, _plain)
    except ValueError:
        return [("expect.log_lines", "unreadable")]
    evidence = results.get("evidence")
    entries = evidence.get("lines") if isinstance(evidence, Mapping) else None
    entries = [e for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []
    out = []
    for line in lines:
        entry = next((e for e in entries if line.same(e)), None)
        if entry is None:
            out.append((line.label, "not looked for (results.json has no such evidence line)"))
        elif entry.get("effect") != SEEN:
            out.append((line.label, f"{entry.get('effect')}: {entry.get('observed', '')}"))
    return out


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _plain(path: tuple[str | int, ...], message: str) -> Exception:
    where = ".".join(str(p) for p in path)
    return ValueError(f"{where}: {message}" if where else message)
