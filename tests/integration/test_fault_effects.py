"""The effect of each remaining fault family on a real broker, and its heal.

Every test measures something during the fault and the same thing after ``stop()``:
bandwidth (throughput near the limit, then much higher), timeout (a send stalls, then
completes), reset-peer / timeout_ms / slow-close on a raw connection through a client proxy,
cut and bridge (which nodes still reach which, and the follower that lost its leader leaves
the ISR), slow disk (produce latency rises with the duty cycle) and disk full (what Kafka
4.4.0 does on ENOSPC). All run on the shared cluster; timings are ratios or generous bounds.
"""

from __future__ import annotations

import socket
import statistics
import struct
import time

import pytest
from confluent_kafka import KafkaError, Message, Producer
from faults_helpers import (
    blocked_pairs,
    controller_record,
    new_topic,
    partition,
    produce,
    wait_for,
    warm_producer,
)

from kchaos.faults import heal_everything, make_fault
from kchaos.faults.targets import active_controller
from kchaos.harness.cluster import Cluster

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

# ApiVersions v0, correlation id 7, null client id: any Kafka listener answers it.
_API_VERSIONS = struct.pack(">hhih", 18, 0, 7, -1)
API_VERSIONS = struct.pack(">i", len(_API_VERSIONS)) + _API_VERSIONS
# A request size far above socket.request.max.bytes: the broker closes the connection.
OVERSIZED = struct.pack(">i", 0x7FFFFFFF)


def probe(address: str, send: bytes, wait: float = 8.0) -> tuple[str, float]:
    """Open a TCP connection, send ``send`` and report what came back first, with the
    time it took: ``response`` (data), ``eof`` (orderly close), ``reset`` (RST) or
    ``silent`` (nothing within ``wait`` seconds)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.settimeout(wait)
        t0 = time.monotonic()
        try:
            s.sendall(send)
            data = s.recv(65536)
        except ConnectionResetError:
            return "reset", time.monotonic() - t0
        except TimeoutError:
            return "silent", time.monotonic() - t0
        return ("response" if data else "eof"), time.monotonic() - t0


def _burst_rate(p: Producer, topic: str, n: int, size: int) -> float:
    """Bytes per second of n records of ``size`` bytes, from the first send to the last ack."""
    errors: list[KafkaError | None] = []
    payload = b"b" * size
    t0 = time.monotonic()
    for _ in range(n):
        p.produce(topic, payload, on_delivery=lambda err, msg: errors.append(err))
        p.poll(0)
    assert p.flush(120) == 0
    elapsed = time.monotonic() - t0
    assert errors == [None] * n, {str(e) for e in errors}
    return n * size / elapsed


def test_bandwidth_limits_throughput_to_the_rate(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    topic = new_topic(c.bootstrap_servers, "bandwidth")
    p = warm_producer(c.bootstrap_servers, topic)
    rate_kbps, n, size = 100, 300, 1000  # 300 KB: about 3 s at the limit
    f = make_fault(
        c,
        "bandwidth",
        f"leader:{topic}:0",
        link="client",
        direction="upstream",
        rate_kbps=rate_kbps,
    )
    with f:
        limited = _burst_rate(p, topic, n, size)
    free = _burst_rate(p, topic, n, size)
    limit = rate_kbps * 1000
    print(f"bandwidth: limit {limit} B/s, limited {limited:.0f} B/s, healed {free:.0f} B/s")
    assert limit / 4 <= limited <= limit * 1.5, f"{limited:.0f} B/s under a {limit} B/s limit"
    assert free >= 4 * limited, f"after heal {free:.0f} B/s, limited {limited:.0f} B/s"


def test_timeout_stalls_a_send_until_the_heal(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    topic = new_topic(c.bootstrap_servers, "timeout")
    # a short request timeout: the send is retried (and dropped again) during the fault,
    # and retried soon after the heal
    p = warm_producer(c.bootstrap_servers, topic, **{"request.timeout.ms": 3000})
    done: list[KafkaError | None] = []
    with make_fault(c, "timeout", f"leader:{topic}:0", link="client", timeout_ms=0):
        p.produce(topic, b"stalled", on_delivery=lambda err, msg: done.append(err))
        t0 = time.monotonic()
        while time.monotonic() - t0 < 7:  # two request timeouts: retried, still dropped
            p.poll(0.2)
        assert done == [], "a send completed through a black hole"
    p.flush(40)
    assert done == [None], "the stalled send did not complete after the heal"


@pytest.mark.parametrize(
    ("fault", "params", "send", "during", "healthy"),
    [
        # RST timeout_ms after the first data (which is swallowed); both directions: up to 2x
        pytest.param(
            "reset-peer",
            {"timeout_ms": 1000},
            API_VERSIONS,
            ("reset", 1.0, 5.0),
            "response",
            id="reset-peer",
        ),
        # data dropped, then an orderly close after timeout_ms
        pytest.param(
            "timeout",
            {"timeout_ms": 1500},
            API_VERSIONS,
            ("eof", 1.5, 5.0),
            "response",
            id="timeout",
        ),
        # the broker closes at once on an oversized request; the proxy holds the close back
        pytest.param(
            "slow-close",
            {"delay_ms": 2000},
            OVERSIZED,
            ("eof", 2.0, 6.0),
            "eof",
            id="slow-close",
        ),
    ],
)
def test_toxic_on_a_raw_connection(
    healthy_cluster: Cluster,
    fault: str,
    params: dict[str, int],
    send: bytes,
    during: tuple[str, float, float],
    healthy: str,
) -> None:
    c = healthy_cluster
    address = c.node(1).proxies["client"].address
    before = probe(address, send)
    with make_fault(c, fault, "1", link="client", **params):
        seen = probe(address, send)
    after = probe(address, send)
    print(f"{fault}: before {before}, during {seen}, after {after}")
    outcome, low, high = during
    assert before[0] == healthy and before[1] < low / 2, before
    assert seen[0] == outcome and low * 0.95 <= seen[1] <= high, (
        f"{fault} {params}: {seen}, expected {outcome} within [{low}, {high}] s"
    )
    assert after[0] == healthy and after[1] < low / 2, f"after heal: {after}"


@pytest.mark.parametrize("fault", ["cut", "bridge"])
def test_partition_decides_which_nodes_talk(healthy_cluster: Cluster, fault: str) -> None:
    c = healthy_cluster
    bs = c.bootstrap_servers
    topic = new_topic(bs, fault, min_isr=1)
    # The fault's ends are picked from a full ISR, so the test waits for one. new_topic
    # returns on the first read that shows it full, and once (CI on f98902b, 2026-11-27,
    # the bridge case right after the cut case) the next read showed two members and the
    # pick failed. The cause was not found: five cut-then-new-topic sequences on this
    # machine never showed it. The reads up to the full one are printed, which a failure's
    # report shows.
    seen: list[tuple[int, set[int]]] = []

    def full() -> tuple[int, set[int]] | None:
        seen.append(partition(bs, topic))
        return seen[-1] if len(seen[-1][1]) == 3 else None

    leader, isr = wait_for(full, 60, f"{topic} ISR full")
    print(f"{fault}: {topic} (leader, ISR) read before the fault: {seen}")
    followers = sorted(isr - {leader})
    assert blocked_pairs(c) == set()
    if fault == "cut":
        # one-way: the follower cannot reach the leader; the leader still reaches it
        cut_off = followers[0]
        f = make_fault(c, "cut", str(cut_off), to=str(leader))
        expected = {(cut_off, leader)}
    else:
        # the bridge talks to both others, which cannot talk to each other. The bridge is
        # the active controller when it is not the leader, so that no broker is fenced.
        controller = active_controller(c)
        bridge = controller if controller in followers else followers[0]
        cut_off = next(i for i in followers if i != bridge)
        f = make_fault(c, "bridge", str(bridge))
        expected = {(cut_off, leader), (leader, cut_off)}
    with f:
        assert blocked_pairs(c) == expected, f.detail
        # a follower that cannot fetch from the leader falls behind as records arrive
        assert produce(bs, topic, 20, acks="1") == [None] * 20
        # read until one answer shows it: the cut-off broker's own metadata may be stale
        shrunk = (leader, isr - {cut_off})
        wait_for(lambda: partition(bs, topic) == shrunk, 40, f"leader {leader}, ISR {shrunk[1]}")
    assert blocked_pairs(c) == set()
    wait_for(lambda: partition(bs, topic)[1] == isr, 60, "ISR full after the heal")


def _paced_latencies(p: Producer, topic: str, seconds: float, every: float = 0.1) -> list[float]:
    """Send one record every ``every`` s for ``seconds``; each one's produce-to-ack time."""
    latencies: list[float] = []

    def acked(err: KafkaError | None, msg: Message) -> None:
        assert err is None, err
        latency = msg.latency()
        assert latency is not None
        latencies.append(latency)

    t0 = time.monotonic()
    sent = 0
    while time.monotonic() - t0 < seconds:
        p.produce(topic, b"s" * 100, on_delivery=acked)
        sent += 1
        while (left := t0 + sent * every - time.monotonic()) > 0:
            p.poll(left)
    p.flush(30)
    assert len(latencies) == sent
    return latencies


def test_slow_disk_latency_rises_with_the_duty_cycle(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    topic = new_topic(c.bootstrap_servers, "slowdisk", min_isr=1)
    p = warm_producer(c.bootstrap_servers, topic)
    target = f"leader:{topic}:0"
    base = statistics.mean(_paced_latencies(p, topic, 4))
    with make_fault(c, "slow-disk", target, freeze_ms=300, thaw_ms=700):
        low = statistics.mean(_paced_latencies(p, topic, 5))
    with make_fault(c, "slow-disk", target, freeze_ms=700, thaw_ms=300):
        high = statistics.mean(_paced_latencies(p, topic, 5))
    after = statistics.mean(_paced_latencies(p, topic, 4))
    means = f"mean ack latency: base {base:.3f}, 30% {low:.3f}, 70% {high:.3f}, after {after:.3f} s"
    print(f"slow-disk: {means}")
    # a record arriving while frozen waits for the thaw: on average duty * freeze_ms / 2
    assert low > base + 0.015, means
    assert high > 2 * low, means
    assert after < high / 3, means


def test_disk_full_takes_the_broker_down_and_heal_brings_it_back(
    healthy_cluster: Cluster,
) -> None:
    """Measured 2026-11-23, Kafka 4.4.0: the first append after the fill fails with
    IOException "No space left on device"; the broker marks its only log dir failed and
    halts ("Shutdown broker because all log dirs in /var/lib/kafka/data have failed"), so
    its container exits. Producers fail over to the new leader. Stopping the fault frees
    the space and, since the broker's log says Kafka halted it, starts it again."""
    c = healthy_cluster
    bs = c.bootstrap_servers
    topic = new_topic(bs, "diskfull")
    leader, isr = partition(bs, topic)
    node = c.node(leader)
    f = make_fault(c, "disk-full", str(leader))
    f.start()
    try:
        assert f.detail["fill_bytes"][node.name] > 0
        conf = {"message.timeout.ms": 60000}
        errors = produce(bs, topic, 50, size=1000, timeout=90, **conf)
        wait_for(lambda: c.container(node).status == "exited", 60, f"{node.name} exited")
        log = c.logs(node, tail=300)
        seen = f"deliveries: {sorted({str(e) for e in errors})}; log tail: {log[-1500:]}"
        wait_for(
            lambda: (
                partition(bs, topic)[0] not in (leader, -1)
                and leader not in partition(bs, topic)[1]
            ),
            30,
            "another leader, the full broker out of the ISR",
        )
    finally:
        f.stop()
    print(f"disk-full: {seen}")
    assert "No space left on device" in log, seen
    assert "all log dirs in /var/lib/kafka/data have failed" in log, seen
    assert errors == [None] * 50, seen  # every record acknowledged by the new leader
    # the stop freed the space and started the halted broker: nothing left for the heal
    assert f.detail.get("restarted") == [node.name], f.detail
    assert c.container(node).status == "running"
    actions = heal_everything(c, wait_ready=True)
    assert not [a for a in actions if "started stopped node" in a], actions
    wait_for(lambda: partition(bs, topic)[1] == isr, 90, f"{node.name} back in the ISR")


def test_latency_adds_its_amount_to_produce_latency(healthy_cluster: Cluster) -> None:
    """A latency toxic on the leader's client proxy, downstream (the acks), adds its
    amount to every produce-to-ack time, and every send still completes (a black hole
    would fail the paced sends, a toxic that was never applied the lower bound).

    Tolerance: the median of each phase is compared. The baseline is the lower of the
    medians before and after the toxic: a toxic only adds delay, and a broker that was
    restarted by the test before (the disk-full test halts one) can still be warming up
    when the first phase runs, which raises that phase alone (a make-test run on
    2026-11-26 failed once here, with librdkafka timing out a connection to a broker
    just before; its text was lost). Below, 10% (the baseline comes from different sends).
    Above, the amount plus 50% or 250 ms, whichever is more: a loaded 2-core machine
    (Toxiproxy, three brokers and the test share it) adds scheduling delay to every hop,
    and more so to the proxy that now buffers the delayed chunks."""
    c = healthy_cluster
    topic = new_topic(c.bootstrap_servers, "latency-acks", min_isr=1)
    p = warm_producer(c.bootstrap_servers, topic)
    amount_ms, low_tol = 300, 0.10
    _paced_latencies(p, topic, 1)  # discarded: connections and the leader settle
    before = statistics.median(_paced_latencies(p, topic, 2))
    f = make_fault(
        c,
        "latency",
        f"leader:{topic}:0",
        link="client",
        direction="downstream",
        latency_ms=amount_ms,
    )
    with f:
        slow = statistics.median(_paced_latencies(p, topic, 3))
    after = statistics.median(_paced_latencies(p, topic, 2))
    amount = amount_ms / 1000
    base = min(before, after)
    rise = slow - base
    medians = (
        f"median ack latency: before {before:.3f}, with {amount_ms} ms {slow:.3f},"
        f" after {after:.3f} s"
    )
    print(f"latency: {medians}")
    assert rise >= amount * (1 - low_tol), medians
    assert rise <= amount + max(amount * 0.5, 0.25), medians
    # the heal takes the delay away: the phase after is back near the one before
    assert after < before + amount / 3, medians


def test_held_controller_requests_delay_the_isr_change_until_the_heal(
    healthy_cluster: Cluster,
) -> None:
    """The leader's AlterPartition is held: its follower is cut off and falls behind, the
    leader decides to shrink the ISR (its own log says so), and the controller's record
    (the KRaft metadata log, replayed as a run's controller.jsonl) shows no change of the
    partition while the hold lasts; the shrink is committed only after the hold ends.
    Without the hold, the controller commits it within milliseconds of the decision."""
    c = healthy_cluster
    bs = c.bootstrap_servers
    # A leader that is not the active controller, as in KIP-903's scenario. Measured
    # 2026-11-25 on 4.4.0: when the held broker is the active controller itself, its
    # shrink was committed 0.23 s after its decision, hold or not; see the report.
    for _ in range(10):
        topic = new_topic(bs, "hold", min_isr=1)
        leader, isr = partition(bs, topic)
        if leader != active_controller(c):
            break
    assert leader != active_controller(c), "every new topic's leader was the controller"
    follower = min(isr - {leader})
    decided = f"[Partition {topic}-0 broker={leader}] Shrinking ISR"
    origin = time.time_ns()
    hold = make_fault(c, "hold-controller-requests", str(leader), sample_s=3)
    cut = make_fault(c, "cut", str(follower), to=str(leader))
    hold.start()
    try:
        assert hold.detail["kept_local_ports"][c.node(leader).name]
        with cut:
            # the follower can no longer fetch: records it lacks make it fall behind
            assert produce(bs, topic, 20, acks="1") == [None] * 20
            wait_for(lambda: decided in c.logs(c.node(leader), tail=500), 40, decided)
            parts, _ = controller_record(c, topic, origin)
            during = [x for x in parts if x.time]
            assert during == [], f"the controller changed {topic}-0 during the hold: {during}"
            assert set(parts[-1].isr) == isr, parts[-1]
            stopped = time.time_ns() - origin
            hold.stop()
            wait_for(lambda: follower not in partition(bs, topic)[1], 45, "the held shrink")
            parts, _ = controller_record(c, topic, origin)
            changes = [x for x in parts if x.time]
            assert changes, "no change of the partition in the controller's record"
            shrink = changes[0]
            # the first change is the held one: the leader's shrink, committed after the heal
            assert (shrink.leader, set(shrink.isr)) == (leader, isr - {follower}), changes
            print(f"hold: healed at {stopped / 1e9:.2f} s, shrink at {shrink.time / 1e9:.2f} s")
            # CreateTime has millisecond resolution: 5 ms of slack
            assert shrink.time >= stopped - 5_000_000, (shrink, stopped)
    finally:
        hold.stop()
    wait_for(lambda: partition(bs, topic)[1] == isr, 60, "ISR full after the heal")
