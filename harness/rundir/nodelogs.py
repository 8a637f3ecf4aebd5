"""The nodes' own logs in ``logs/<container>/``: which node wrote each, and when an entry was.

The runner copies each node's container log after the run (``harness/run/controller_log.py``)
into a folder named after the container, ``kchaos-<run id>-<node>``, where ``<node>`` is
``broker-<id>`` or ``controller-<id>`` (``harness/cluster/topology.py``: ``container_name``
and ``node_name``; the rundir layer cannot import the cluster's, so the suffix is read
here, and a unit test holds the two to each other).

Every entry of a broker's log starts with log4j's ``[%d]``, ``[2026-11-25 23:08:32,228]``:
the container's local time, to the millisecond. The kchaos image sets no time zone, so
the JVM prints UTC (checked on real runs: a leader's ``Shrinking ISR`` line and the
controller's commit of that shrink, whose time is the metadata record's own epoch
milliseconds, are a few milliseconds apart; any other zone would put them hours apart).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kchaos.harness.rundir.names import SERVER_LOG

if TYPE_CHECKING:  # RunDir lists the node logs with node_logs below
    from kchaos.harness.rundir.rundir import RunDir

#: The zone the nodes' log timestamps are printed in (the image sets no TZ).
LOG_ZONE = UTC

_NODE = re.compile(r"-(broker|controller)-(\d+)$")
_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]")


@dataclass(frozen=True)
class NodeLog:
    """One node's ``server.log`` (its whole container log) and the node it belongs to."""

    container: str
    role: str | None  # "broker" or "controller"; None when the folder's name is not a node's
    node_id: int | None
    path: Path

    def where(self, line: int) -> str:
        """``<container>/server.log:<line>``: a line of this log, relative to ``logs/``."""
        return f"{self.container}/{SERVER_LOG}:{line}"

    def lines(self) -> Iterator[tuple[int, str]]:
        """The log's lines with their numbers (from 1); undecodable bytes replaced."""
        with self.path.open(encoding="utf-8", errors="replace") as fh:
            for number, text in enumerate(fh, 1):
                yield number, text.rstrip("\n")


def node_of(container: str) -> tuple[str, int] | None:
    """(role, node id) of a container's name, ``kchaos-<run id>-broker-2`` -> ("broker", 2)."""
    match = _NODE.search(container)
    if match is None:
        return None
    return match.group(1), int(match.group(2))


def node_logs(logs_dir: Path) -> list[NodeLog]:
    """Every ``logs/<container>/server.log`` there is, by container name."""
    if not logs_dir.is_dir():
        return []
    found = []
    for folder in sorted(p for p in logs_dir.iterdir() if p.is_dir()):
        path = folder / SERVER_LOG
        if not path.is_file():
            continue
        node = node_of(folder.name)
        role, node_id = node if node is not None else (None, None)
        found.append(NodeLog(folder.name, role, node_id, path))
    return found


@dataclass(frozen=True)
class TimedNodeLogs:
    """The node logs a run kept, with the time origin that puts their entries on the
    history's time base (:func:`history_time_ns`)."""

    nodes: tuple[NodeLog, ...]
    origin_unix_ns: int


def timed_node_logs(
    run_dir: RunDir, origin_unix_ns: int | None = None, *, role: str | None = None
) -> TimedNodeLogs | None:
    """The run's node logs (only those of ``role``'s nodes, given one) and their time
    origin: ``origin_unix_ns``, else run.json's ``history_start_unix_ns`` (run.json is
    read only when there are logs and no origin was given). None when the run kept no
    such log (old runs, fixtures) or has no origin: without one no entry can be placed
    on the history's time base."""
    nodes = tuple(n for n in run_dir.node_logs() if role is None or n.role == role)
    if not nodes:
        return None
    if origin_unix_ns is None:
        origin_unix_ns = run_dir.load_run(missing_ok=True).history_start_unix_ns
        if origin_unix_ns is None:
            return None
    return TimedNodeLogs(nodes, origin_unix_ns)


def entry_unix_ms(line: str) -> int | None:
    """The epoch milliseconds of a log entry's ``[yyyy-MM-dd HH:mm:ss,SSS]`` (printed in
    :data:`LOG_ZONE`); None when the line does not start with one (a continuation line,
    the launcher's ``[kchaos]`` lines)."""
    match = _STAMP.match(line)
    if match is None:
        return None
    try:
        when = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=LOG_ZONE)
    except ValueError:
        return None
    return int(when.timestamp()) * 1000 + int(match.group(2))


def history_time_ns(unix_ms: int, origin_unix_ns: int) -> int:
    """A log entry's time on the history's time base (nanoseconds since run.json's
    ``history_start_unix_ns``), the base controller.jsonl's ``time`` is on too."""
    return unix_ms * 1_000_000 - origin_unix_ns
