"""Reading the cluster's state for faults: partition leaders and ISRs, live brokers, the
active controller, broker epochs. ``Cluster`` offers each as a ClusterHandle member
(``partition_leader``, ``partition_isr``, ``alive_brokers``, ``active_controller_id``,
``broker_epoch``); the code that reads Kafka lives here, once.

Leaders, ISRs and live brokers come from client metadata through the client proxies; the
active controller from ActiveControllerCount on a controller's metrics endpoint (:7071),
else from ``kafka-metadata-quorum.sh`` in a broker; a broker's epoch from the last
``Successfully registered broker`` line of its own log.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kchaos.harness.errors import ClusterError

LOG_TAIL_LINES = 500  # first read of a broker's log; doubled while lines were missed
LOG_TAIL_MAX = 64_000
LOG_ANCHOR_LINES = 3
_REGISTERED = re.compile(r"Successfully registered broker (\d+) with broker epoch (-?\d+)")
QUORUM_STATUS = [
    "/opt/kafka/bin/kafka-metadata-quorum.sh",
    "--bootstrap-server",
    "localhost:9092",
    "describe",
    "--status",
]


def _topic(admin: Any, topic: str, timeout: float) -> Any:
    try:
        md = admin.list_topics(topic=topic, timeout=timeout)
    except Exception as exc:  # KafkaException and friends
        raise ClusterError(f"metadata request failed: {exc}") from exc
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        raise ClusterError(f"topic {topic!r}: {getattr(t, 'error', None) or 'not in metadata'}")
    return t


def partition_leader(admin: Any, topic: str, partition: int, timeout: float) -> int:
    """Node id of the partition's leader; ClusterError when there is none."""
    p = _topic(admin, topic, timeout).partitions.get(partition)
    if p is None:
        raise ClusterError(f"{topic}-{partition}: no such partition")
    if p.leader is None or p.leader < 0:
        raise ClusterError(f"{topic}-{partition}: partition has no leader")
    return int(p.leader)


def partition_count(admin: Any, topic: str, timeout: float) -> int:
    """How many partitions the topic has; ClusterError when it is not there."""
    partitions = _topic(admin, topic, timeout).partitions
    if not partitions:
        raise ClusterError(f"topic {topic!r}: no partitions in metadata")
    return len(partitions)


def partition_isr(admin: Any, topic: str, partition: int, timeout: float) -> list[int]:
    p = _topic(admin, topic, timeout).partitions.get(partition)
    if p is None:
        raise ClusterError(f"{topic}-{partition}: not in metadata")
    return sorted(int(b) for b in p.isrs)


def alive_brokers(admin: Any, timeout: float) -> set[int]:
    try:
        md = admin.list_topics(timeout=timeout)
    except Exception as exc:  # KafkaException and friends
        raise ClusterError(f"metadata request failed: {exc}") from exc
    return {int(b) for b in md.brokers}


def active_controller_count(metrics_text: str) -> float:
    """The ActiveControllerCount gauge in a Prometheus text page (0 when absent)."""
    for line in metrics_text.splitlines():
        if line.startswith("#") or "activecontrollercount" not in line.lower():
            continue
        try:
            return float(line.rsplit(None, 1)[1])
        except (IndexError, ValueError):
            continue
    return 0.0


def quorum_leader(output: str) -> int | None:
    """The LeaderId printed by ``kafka-metadata-quorum.sh describe --status``."""
    m = re.search(r"LeaderId:\s*(\d+)", output)
    return int(m.group(1)) if m else None


class LogFollower:
    """Reads a log through a ``tail(n) -> text`` call without missing lines: each read
    ends with the lines that ended the previous one (the anchor) unless more lines came
    since than the tail held; then the tail is doubled and the read repeated (up to
    LOG_TAIL_MAX lines). A busy broker logs thousands of lines while it starts, so a fixed
    tail can miss the one line that matters."""

    def __init__(self, tail: Callable[[int], str], lines: int = LOG_TAIL_LINES) -> None:
        self._tail = tail
        self._lines = lines
        self._anchor: list[str] | None = None
        self.epoch: int | None = None
        self.gaps = 0  # reads where even LOG_TAIL_MAX lines did not reach the anchor

    def new_lines(self) -> list[str]:
        """The lines logged since the previous call (on the first call: the last tail)."""
        n = self._lines
        while True:
            lines = self._tail(n).splitlines()
            fresh = self._after_anchor(lines)
            if fresh is not None or self._anchor is None or n >= LOG_TAIL_MAX or len(lines) < n:
                break
            n = min(n * 2, LOG_TAIL_MAX)
        if fresh is None:
            if self._anchor is not None and len(lines) >= n:
                self.gaps += 1
            fresh = lines
        if lines:
            self._anchor = lines[-LOG_ANCHOR_LINES:]
        return fresh

    def _after_anchor(self, lines: list[str]) -> list[str] | None:
        anchor = self._anchor
        if anchor is None:
            return None
        k = len(anchor)
        for i in range(len(lines) - k, -1, -1):
            if lines[i : i + k] == anchor:
                return lines[i + k :]
        return None


def last_registration(log_text: str, broker: int) -> int | None:
    """The broker epoch of the last ``Successfully registered broker`` line for ``broker``."""
    epoch = None
    for m in _REGISTERED.finditer(log_text):
        if int(m.group(1)) == broker:
            epoch = int(m.group(2))
    return epoch


class EpochReader:
    """Broker epochs from the brokers' own logs, ``logs(broker, tail) -> text``; each
    broker's log is followed, so a registration is seen once however busy the log."""

    def __init__(self, logs: Callable[[int, int], str]) -> None:
        self._logs = logs
        self._followers: dict[int, LogFollower] = {}

    def epoch(self, broker: int) -> int | None:
        if broker not in self._followers:
            self._followers[broker] = LogFollower(lambda tail: self._logs(broker, tail))
        follower = self._followers[broker]
        for line in follower.new_lines():
            found = last_registration(line, broker)
            if found is not None:
                follower.epoch = found
        return follower.epoch
