"""Is the cluster serving? Probes used while starting and after restarts.

* :func:`answers_requests`: one raw ApiVersions request straight to a node's listener. A
  KRaft broker processes requests only once it has caught up with the metadata log and
  been unfenced, so an answer means "this process is up", even when the controller still
  remembers an older incarnation of the same node.
* :func:`registered_brokers` and :func:`isr_problems`: the cluster's own metadata, through
  the client proxies, as a client sees it.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

PROBE_TOPIC = "kchaos-probe"
_API_VERSIONS_KEY = 18


def answers_requests(host: str, port: int, timeout: float = 2.0) -> bool:
    """True when the Kafka listener at host:port answers an ApiVersions (v0) request."""
    client_id = b"kchaos-ready"
    correlation = 0x6B63
    body = struct.pack(">hhih", _API_VERSIONS_KEY, 0, correlation, len(client_id)) + client_id
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(struct.pack(">i", len(body)) + body)
            head = _recv_exact(sock, 8)
    except OSError:
        return False
    if head is None:
        return False
    _size, got = struct.unpack(">ii", head)
    return bool(got == correlation)


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def admin_client(bootstrap: str, **extra: Any) -> AdminClient:
    """A quiet AdminClient (librdkafka logs connection refusals as errors while brokers
    start; those are expected here)."""
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": 5000,
        "socket.connection.setup.timeout.ms": 5000,
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 1000,
        "log_level": 0,
    }
    conf.update(extra)
    return AdminClient(conf)


def registered_brokers(admin: AdminClient, timeout: float = 5.0) -> set[int]:
    """Ids of the brokers the cluster metadata lists as alive (unfenced)."""
    try:
        md = admin.list_topics(timeout=timeout)
    except KafkaException:
        return set()
    return {int(b) for b in md.brokers}


def ensure_topic(
    admin: AdminClient, name: str, partitions: int, rf: int, timeout: float = 10.0
) -> None:
    """Create the topic unless it exists (errors are left to the ISR check to report)."""
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=rf)],
        operation_timeout=timeout,
        request_timeout=timeout,
    )
    for fut in futures.values():
        try:
            fut.result(timeout=timeout + 5)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" in str(exc) or "already exists" in str(exc):
                continue
            raise


def isr_problems(
    admin: AdminClient, topics: Iterable[str] | None, timeout: float = 5.0
) -> list[str]:
    """What keeps the topics' ISRs from being full; empty when every partition has a
    leader and every replica in sync. ``topics`` None: every topic the cluster lists
    (internal ones too), read in one metadata request."""
    if topics is None:
        try:
            md = admin.list_topics(timeout=timeout)
        except KafkaException as exc:
            return [f"metadata unavailable ({exc})"]
        return [p for name, tmd in sorted(md.topics.items()) for p in _topic_problems(name, tmd)]
    problems: list[str] = []
    for topic in topics:
        try:
            md = admin.list_topics(topic=topic, timeout=timeout)
        except KafkaException as exc:
            problems.append(f"{topic}: metadata unavailable ({exc})")
            continue
        problems += _topic_problems(topic, md.topics.get(topic))
    return problems


def _topic_problems(topic: str, tmd: Any) -> list[str]:
    if tmd is None or tmd.error is not None:
        return [f"{topic}: {getattr(tmd, 'error', None) or 'missing'}"]
    problems = [] if tmd.partitions else [f"{topic}: no partitions"]
    for pid, pmd in sorted(tmd.partitions.items()):
        if pmd.leader < 0 or sorted(pmd.isrs) != sorted(pmd.replicas) or pmd.error is not None:
            problems.append(
                f"{topic}-{pid}: leader={pmd.leader} isr={sorted(pmd.isrs)} "
                f"replicas={sorted(pmd.replicas)}"
            )
    return problems
