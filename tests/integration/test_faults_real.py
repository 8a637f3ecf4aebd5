"""Fault families against a real 3-broker cluster (shared, short Kafka timeouts)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message, Producer
from faults_helpers import controller_record, new_topic, partition, produce, wait_for, warm_producer

from kchaos.faults import hostfs, make_fault
from kchaos.faults.targets import active_controller
from kchaos.harness.cluster import Cluster

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


def follower_of(leader: int, isr: set[int]) -> int:
    return min(isr - {leader})


@pytest.mark.parametrize("mode", ["sigstop", "freezer"])
def test_paused_follower_leaves_isr_and_returns(healthy_cluster: Cluster, mode: str) -> None:
    c = healthy_cluster
    bs = c.bootstrap_servers
    topic = new_topic(bs, "pause")
    leader, isr = partition(bs, topic)
    victim = follower_of(leader, isr)
    with make_fault(c, "pause", str(victim), mode=mode) as f:
        assert f.target_names == [c.node(victim).name]
        if mode == "freezer":
            assert c.container(c.node(victim)).status == "paused"
        produce(bs, topic, 20, acks="1")
        wait_for(lambda: victim not in partition(bs, topic)[1], 30, "ISR shrink")
    wait_for(lambda: victim in partition(bs, topic)[1], 40, f"ISR expand after the {mode} resume")


def test_frozen_fs_blocks_writes_and_thaw_resumes(healthy_cluster: Cluster) -> None:
    """A baseline first (the producer is connected and the leader acknowledges quickly),
    then no acknowledgement while the leader's filesystem is frozen, then the held record
    acknowledged after the thaw. Without the baseline, a producer that was merely slow to
    connect would pass the frozen window too."""
    c = healthy_cluster
    bs = c.bootstrap_servers
    topic = new_topic(bs, "freeze")
    p = warm_producer(bs, topic, **{"message.timeout.ms": 60000})
    base: list[float] = []
    for _ in range(3):
        p.produce(topic, b"before", on_delivery=lambda err, msg: base.append(_acked(err, msg)))
        p.flush(30)
    window = 4.0
    # the frozen window is long next to a healthy acknowledgement: silence in it is the fault
    assert len(base) == 3 and max(base) < window / 4, base
    done: list[float] = []
    with make_fault(c, "disk-stall", f"leader:{topic}:0"):
        p.produce(topic, b"frozen", on_delivery=lambda err, msg: done.append(_acked(err, msg)))
        t0 = time.monotonic()
        while time.monotonic() - t0 < window:
            p.poll(0.2)
        assert done == [], f"a write was acknowledged on a frozen filesystem: {done}"
    thawed = time.monotonic()
    assert p.flush(30) == 0
    after = time.monotonic() - thawed
    print(f"disk-stall: baseline acks {base} s; the frozen one {after:.2f} s after the thaw")
    assert len(done) == 1 and done[0] >= window, done  # held for the whole frozen window


def _acked(err: KafkaError | None, msg: Message) -> float:
    """A delivery report's produce-to-ack time; fails on a delivery error."""
    assert err is None, err
    latency = msg.latency()
    assert latency is not None
    return float(latency)


def test_latency_on_leader_replication_shrinks_isr(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    bs = c.bootstrap_servers
    topic = new_topic(bs, "latency", min_isr=1)
    leader, _ = partition(bs, topic)
    stop = threading.Event()

    def load() -> None:
        p = Producer({"bootstrap.servers": bs, "acks": "1"})
        while not stop.is_set():
            p.produce(topic, b"y" * 200)
            p.poll(0.05)
        p.flush(10)

    loader = threading.Thread(target=load, daemon=True)
    loader.start()
    try:
        f = make_fault(
            c,
            "latency",
            f"leader:{topic}:0",
            link="replication",
            direction="downstream",
            latency_ms=8000,
        )
        with f:
            assert f.detail["proxies"] == [f"node-{leader}-replication"]
            wait_for(lambda: partition(bs, topic)[1] == {leader}, 40, "ISR shrunk to leader")
        wait_for(lambda: len(partition(bs, topic)[1]) == 3, 60, "ISR full after heal")
    finally:
        stop.set()
        loader.join(15)


def test_isolating_the_leader_elects_another(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    bs = c.bootstrap_servers
    topic = new_topic(bs, "isolate")
    leader, _ = partition(bs, topic)
    with make_fault(c, "isolate", f"leader:{topic}:0", clients=True) as f:
        assert f.target_names == [c.node(leader).name]
        new = wait_for(
            lambda: partition(bs, topic)[0] not in (leader, -1) and partition(bs, topic)[0],
            45,
            "a new leader",
        )
        assert new != leader
    wait_for(lambda: len(partition(bs, topic)[1]) == 3, 60, "old leader back in the ISR")


def test_client_cut_makes_sends_time_out(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    bs = c.bootstrap_servers
    topic = new_topic(bs, "clientcut")
    with make_fault(c, "client-cut", f"leader:{topic}:0"):
        conf = {"message.timeout.ms": 4000, "request.timeout.ms": 2000}
        errors = produce(bs, topic, 3, timeout=20, **conf)
        assert len(errors) == 3
        assert all(e is not None and e.code() == KafkaError._MSG_TIMED_OUT for e in errors), errors
    assert produce(bs, topic, 3) == [None, None, None]


def _segment(mount: Path, topic: str) -> bytes:
    return (mount / f"{topic}-0" / "00000000000000000000.log").read_bytes()


def test_hard_reboot_loses_unflushed_records_and_rejoins(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    bs = c.bootstrap_servers
    topic = new_topic(bs, "reboot")
    leader, _ = partition(bs, topic)
    node = c.node(leader)
    assert produce(bs, topic, 3000, size=1000) == [None] * 3000
    before = _segment(node.mount_path, topic).rstrip(b"\0")
    assert len(before) > 3_000_000
    f = make_fault(c, "hard-reboot", str(leader), timeout_s=90)
    f.start()
    try:
        assert hostfs.is_mounted(c, node) and hostfs.is_healthy(c, node)
        seg = node.mount_path / f"{topic}-0" / "00000000000000000000.log"
        after = seg.read_bytes().rstrip(b"\0") if seg.exists() else b""
        # what the page cache held but the disk never got is gone
        assert len(after) < len(before), (len(after), len(before))
    finally:
        f.stop()
    wait_for(lambda: len(partition(bs, topic)[1]) == 3, 90, "rebooted broker back in ISR")
    # the other replicas had everything acknowledged: nothing lost cluster-wide
    from confluent_kafka import Consumer

    cons = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    cons.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 3000 and time.monotonic() < deadline:
        seen += sum(1 for m in cons.consume(500, 1.0) if m.error() is None)
    cons.close()
    assert seen == 3000


def test_whole_cluster_power_loss_recovers(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    bs = c.bootstrap_servers
    topic = new_topic(bs, "power")
    assert produce(bs, topic, 200) == [None] * 200
    f = make_fault(c, "power-loss", timeout_s=150)
    f.start()
    try:
        assert f.target_names == [n.name for n in c.nodes]
        for node in c.nodes:
            assert c.container(node).status == "exited"
            assert hostfs.is_healthy(c, node)
    finally:
        f.stop()  # starts every node and waits until the cluster is ready
    topic2 = new_topic(bs, "after-power")
    assert produce(bs, topic2, 20) == [None] * 20


@pytest.mark.parametrize("fault", ["kill", "term"])
def test_crash_moves_leadership_and_restart_rejoins(healthy_cluster: Cluster, fault: str) -> None:
    c = healthy_cluster
    bs = c.bootstrap_servers
    topic = new_topic(bs, fault)
    leader, _ = partition(bs, topic)
    with make_fault(c, fault, f"leader:{topic}:0", timeout_s=90) as f:
        assert c.container(c.node(leader)).status == "exited"
        wait_for(lambda: partition(bs, topic)[0] not in (leader, -1), 30, "a new leader")
        assert produce(bs, topic, 10) == [None] * 10
    wait_for(lambda: len(partition(bs, topic)[1]) == 3, 60, "restarted broker back in ISR")
    print(f"{fault}: detail {f.detail}")
    if fault == "term":
        assert f.detail == {"exit_codes": {c.node(leader).name: 143}}


def test_rolling_restart_keeps_the_cluster_serving(healthy_cluster: Cluster) -> None:
    """Each target restarted once, in the fault's order (node id), and the next one goes
    down only after the previous one is back in the ISR: read from the controller's own
    record (the KRaft metadata log), which holds every registration and ISR change, so
    nothing between two samples can be missed."""
    c = healthy_cluster
    bs = c.bootstrap_servers
    topic = new_topic(bs, "rolling")
    origin = time.time_ns()
    f = make_fault(c, "rolling-restart", "1,2", interval_s=0, timeout_s=90)
    with f:
        pass  # stop waits until every target was restarted and every ISR is full again
    assert f.target_names == [c.node(1).name, c.node(2).name]
    # SIGTERM, and each JVM ran its shutdown (Docker's stop did not have to SIGKILL it)
    assert f.detail == {"exit_codes": {c.node(1).name: 143, c.node(2).name: 143}}
    parts, brokers = controller_record(c, topic, origin)
    story = [(x.offset, f"broker {x.broker} epoch {x.broker_epoch}") for x in brokers if x.time]
    story += [(x.offset, f"{topic} isr {sorted(x.isr)}") for x in parts if x.time]
    seen = "controller record since the fault: " + "; ".join(w for _, w in sorted(story))
    print(f"rolling-restart: {seen}")
    last_epoch = {x.broker: x.broker_epoch for x in brokers if not x.time}
    registered: dict[int, list[int]] = {}  # broker -> offsets of its new registrations
    down: dict[int, int] = {}  # broker -> offset of its first shutdown or fence
    for x in brokers:
        if not x.time:
            continue
        if x.broker_epoch not in (-1, last_epoch.get(x.broker)):
            registered.setdefault(x.broker, []).append(x.offset)
            last_epoch[x.broker] = x.broker_epoch
        if (x.shutting_down or x.fenced) and x.broker not in down:
            down[x.broker] = x.offset
    assert {b: len(r) for b, r in registered.items()} == {1: 1, 2: 1}, seen
    assert down.keys() == {1, 2}, seen
    assert down[1] < registered[1][0] < down[2] < registered[2][0], seen
    full = [x.offset for x in parts if x.time and set(x.isr) == set(x.replicas)]
    # each restart took its broker out of the ISR before it registered again; the ISR was
    # whole again before broker 2 went down, and again at the end. The removal is not
    # always after the broker's own "down" line: the controller may commit it first (seen
    # 2026-11-26 on 4.4.0: ISR [2, 3] at offset 1451, broker 1 fenced at 1459, with no
    # controlled-shutdown line before them), so the window is from the fault's start to
    # the broker's new registration.
    assert any(1 not in x.isr for x in parts if x.time and x.offset < registered[1][0]), seen
    back = [o for o in full if registered[1][0] < o < down[2]]
    assert back, seen
    assert any(2 not in x.isr for x in parts if x.time and back[0] < x.offset < registered[2][0]), (
        seen
    )
    assert full and full[-1] > registered[2][0] and parts[-1].offset == full[-1], seen
    assert produce(bs, topic, 10) == [None] * 10


def test_splitting_off_the_controller_elects_another(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    old = active_controller(c)
    with make_fault(c, "split", "controller") as f:
        assert f.target_names == [c.node(old).name]
        new = wait_for(
            lambda: active_controller(c) != old and active_controller(c),
            40,
            "a controller in the majority",
        )
        assert new in {n.node_id for n in c.nodes} - {old}
