"""Helpers for the faults Docker tests: topics, ISR, leaders, producing, waiting, and
which nodes reach which."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kchaos.harness.cluster import Cluster
from kchaos.harness.run.controller_log import read_metadata_log
from kchaos.harness.run.metadata_records import convert, parse_dump
from kchaos.harness.rundir.controller import BrokerLine, PartitionLine

T = TypeVar("T")


def wait_for(cond: Callable[[], T], timeout: float, what: str, every: float = 0.5) -> T:
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = cond()
            if last:
                return last
        except Exception as exc:  # noqa: BLE001 - metadata calls fail during faults
            last = exc
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout:g}s waiting for {what} (last: {last!r})"
            )
        time.sleep(every)


def controller_record(
    c: Cluster, topic: str, origin_unix_ns: int
) -> tuple[list[PartitionLine], list[BrokerLine]]:
    """The controller's own record now, as a run's controller.jsonl holds it: the KRaft
    metadata log dumped inside a controller node and replayed. Partition 0 of ``topic``'s
    states and every broker's registrations, in log order; ``time`` is ns since
    ``origin_unix_ns`` (0 for what came before it)."""
    node, text = read_metadata_log(c)
    result = convert(
        parse_dump(text, source=f"metadata log of {node}"),
        origin_unix_ns=origin_unix_ns,
        topics=[topic],
    )
    assert not result.incomplete, result.warnings
    parts = [x for x in result.lines if isinstance(x, PartitionLine) and x.partition == 0]
    brokers = [x for x in result.lines if isinstance(x, BrokerLine)]
    return parts, brokers


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})


def new_topic(bootstrap: str, prefix: str, rf: int = 3, min_isr: int = 2) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    a = admin(bootstrap)
    # the request may wait 25 s for the broker the metadata names as controller: with the
    # admin's 5 s socket timeout as its bound, one broker just restarted by the test before
    # failed it ("Failed while waiting for controller", its ApiVersions unanswered for 5 s;
    # make test, 2026-11-27)
    topics = [NewTopic(name, 1, rf, config={"min.insync.replicas": str(min_isr)})]
    fut = a.create_topics(topics, request_timeout=25)[name]
    fut.result(30)
    wait_for(lambda: len(partition(bootstrap, name)[1]) == rf, 60, f"{name} ISR full")
    return name


def partition(bootstrap: str, topic: str, a: AdminClient | None = None) -> tuple[int, set[int]]:
    """(leader, ISR) of partition 0, from metadata."""
    a = a or admin(bootstrap)
    for _ in range(20):  # a broker may not know a just-created topic yet
        md = a.list_topics(topic=topic, timeout=8)
        parts = md.topics[topic].partitions
        if 0 in parts:
            return parts[0].leader, set(parts[0].isrs)
        time.sleep(0.5)
    raise AssertionError(f"{topic}: partition 0 missing from metadata")


def produce(
    bootstrap: str,
    topic: str,
    n: int,
    *,
    size: int = 100,
    acks: str = "all",
    timeout: float = 30.0,
    **conf: Any,
) -> list[KafkaError | None]:
    """Send n records and wait for their delivery reports; the error of each (None = ok)."""
    results: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, **conf})
    payload = b"x" * size
    for i in range(n):
        while True:
            try:
                p.produce(
                    topic,
                    value=payload,
                    key=str(i).encode(),
                    on_delivery=lambda err, msg: results.append(err),
                )
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    p.flush(timeout)
    return results


def warm_producer(bootstrap: str, topic: str, **conf: object) -> Producer:
    """A producer (acks=1, no linger) that has sent one record to the topic and has its
    connection and metadata, so that what is measured next is only the fault."""
    p = Producer(
        {"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0, **conf}  # type: ignore[dict-item]
    )
    done: list[KafkaError | None] = []
    p.produce(topic, b"warm", on_delivery=lambda err, msg: done.append(err))
    p.flush(30)
    assert done == [None], done
    return p


def reaches(c: Cluster, src: int, dst: int) -> bool:
    """Whether node ``src`` can open a TCP connection to ``dst``'s replication proxy."""
    proxy = c.node(dst).proxies["replication"]
    script = f"exec 3<>/dev/tcp/{proxy.listen_host}/{proxy.listen_port}"
    code, _ = c.exec(c.node(src), ["timeout", "3", "bash", "-c", script])
    return code == 0


def blocked_pairs(c: Cluster) -> set[tuple[int, int]]:
    ids = [n.node_id for n in c.nodes]
    return {(a, b) for a in ids for b in ids if a != b and not reaches(c, a, b)}
