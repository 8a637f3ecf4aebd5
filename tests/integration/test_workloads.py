"""Workloads against the real shared 3-broker cluster (racks a/b/c, rack-aware selector).

* a no-fault run (KCHAOS_WL_DURATION seconds, 60 by default) with 2 producers and 2
  consumers, one of them fetching from a follower: every acknowledged send is in the drain;
* a broker killed mid-run: ``info`` completions, never ``fail``, nothing failed read back;
* SIGKILL of a harness process mid-run: the history's complete lines all parse.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kchaos.harness.cluster.wait import Until
from kchaos.harness.rundir.history_writer import HistoryWriter, read_history, wait_for_writer
from kchaos.harness.rundir.rundir import RunDir
from kchaos.workloads.spec import ConsumerConfig, ProducerConfig, WorkloadSpec
from kchaos.workloads.topics import ensure_topics
from kchaos.workloads.workload import Workload

pytestmark = [pytest.mark.docker]

REPO = Path(__file__).resolve().parents[2]
DURATION = float(os.environ.get("KCHAOS_WL_DURATION", "60"))
TOPIC_CONFIGS = {"min.insync.replicas": "2"}


def new_topic(cluster: Any, prefix: str, partitions: int = 3) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:6]}"
    ensure_topics(cluster.bootstrap_servers, [topic], partitions=partitions, configs=TOPIC_CONFIGS)
    return topic


def facts(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The durability facts the checkers judge, computed directly from the history."""
    sends: dict[str, dict[str, Any]] = {}
    for e in events:
        if e["f"] == "send" and e["type"] != "invoke":
            assert e["value"] not in sends, f"two completions for {e['value']}"
            sends[e["value"]] = e
    drained: dict[tuple[str, int, int], str] = {}
    for e in events:
        if e["f"] == "drain":
            for r in e["records"]:
                drained[(r["topic"], r["partition"], r["offset"])] = r["value"]
    ends = {(e["topic"], e["partition"]): e for e in events if e["f"] == "drain-end"}
    read: list[dict[str, Any]] = [
        r for e in events if e["f"] == "poll" and e["type"] == "ok" for r in e["records"]
    ]
    return {"sends": sends, "drained": drained, "ends": ends, "read": read}


def assert_durable(
    events: list[dict[str, Any]], topic: str, partitions: int, *, duplicates_ok: bool = False
) -> dict[str, Any]:
    f = facts(events)
    invokes = [e["value"] for e in events if e["f"] == "send" and e["type"] == "invoke"]
    assert len(invokes) == len(set(invokes)), "values must be unique"
    assert set(invokes) == set(f["sends"]), "every invoke needs exactly one completion"
    assert set(f["ends"]) == {(topic, p) for p in range(partitions)}, "every partition drained"
    for (t, p), end in f["ends"].items():
        in_range = [o for (tt, pp, o) in f["drained"] if (tt, pp) == (t, p)]
        assert len(in_range) == end["high_watermark"] - end["log_start_offset"]
    lost = [
        s
        for s in f["sends"].values()
        if s["type"] == "ok"
        and f["drained"].get((s["topic"], s["partition"], s["offset"])) != s["value"]
    ]
    assert not lost, f"{len(lost)} acknowledged sends missing from the drain: {lost[:5]}"
    failed = {v for v, s in f["sends"].items() if s["type"] == "fail"}
    seen = set(f["drained"].values()) | {r["value"] for r in f["read"]}
    assert not failed & seen, f"values whose send failed were read: {sorted(failed & seen)[:5]}"
    if not duplicates_ok:
        drained_values = Counter(f["drained"].values())
        assert not [v for v, n in drained_values.items() if n > 1], "duplicates in the drain"
    for r in f["read"]:
        key = (r["topic"], r["partition"], r["offset"])
        assert f["drained"].get(key) == r["value"], f"read {r} not in the drain"
    return f


def kchaos_check(run_dir: Path) -> int:
    """Exit code of `kchaos check RUN_DIR` (the checker always runs: no path around it)."""
    proc = subprocess.run(
        [sys.executable, "-m", "kchaos.cli", "check", str(run_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    print(proc.stdout, proc.stderr)
    return proc.returncode


def test_no_fault_run_every_acknowledged_send_is_drained(
    healthy_cluster: Any, tmp_path: Path
) -> None:
    cluster = healthy_cluster
    topic = new_topic(cluster, "wl-nofault")
    spec = WorkloadSpec(
        topics=(topic,),
        producers=ProducerConfig(count=2, rate=150.0, keys=12, max_in_flight=10000),
        # two readers of every partition, in rack-b: follower fetching (KIP-392); group
        # members are test_incremental_group_protocols_record_full_assignments's
        consumers=ConsumerConfig(count=2, mode="assign", rack="rack-b"),
        duration=DURATION,
    )
    with (
        HistoryWriter(tmp_path / "history.jsonl") as history,
        Workload.for_cluster(spec, cluster, history, run_dir=RunDir(tmp_path)) as workload,
    ):
        workload.start()
        time.sleep(min(15.0, DURATION / 2))
        follower = workload.consumers[1].client
        assert follower is not None
        sources = follower.fetch_sources()
        time.sleep(max(0.0, DURATION - min(15.0, DURATION / 2)))
        stats = workload.stop()
        result = workload.drain(timeout=60)
    assert result.complete, result.failed
    events, torn = read_history(tmp_path / "history.jsonl")
    assert not torn
    f = assert_durable(events, topic, 3)
    assert stats.ok > 0.9 * stats.invoked and stats.fail == 0
    assert len(f["read"]) > 0
    by_consumer = Counter(e["process"] for e in events if e["f"] == "poll" and e.get("records"))
    assert set(by_consumer) == {3, 4}, "both consumers read records"
    # the rack-b consumer fetched at least one partition from broker 2 while it was not leader
    assert any(b == 2 and leader != 2 for leader, b in sources.values()), sources
    metadata = [e for e in events if e["f"] == "metadata"]
    assert metadata and all(e["leader"] in (1, 2, 3) and e["min_insync"] == 2 for e in metadata)
    assert all("elr" in e for e in metadata), "Kafka 4.x reports eligible leader replicas"
    assert (tmp_path / "broker-metrics.jsonl").stat().st_size > 0
    code = kchaos_check(tmp_path)
    assert code == 0, f"kchaos check exit {code} (0 is valid; its output is printed above)"


@pytest.mark.parametrize("lib", ["confluent-kafka", "kafka-python"])
def test_broker_killed_mid_run_gives_info_never_fail(
    healthy_cluster: Any, tmp_path: Path, lib: str
) -> None:
    cluster = healthy_cluster
    topic = new_topic(cluster, f"wl-kill-{lib}")
    spec = WorkloadSpec(
        topics=(topic,),
        producers=ProducerConfig(
            count=2,
            rate=100.0,
            keys=0,
            max_in_flight=10000,
            configs={"delivery.timeout.ms": "4000", "request.timeout.ms": "2000", "linger.ms": "5"},
        ),  # fmt: skip
        consumers=ConsumerConfig(count=1, mode="assign"),
        client=lib,  # type: ignore[arg-type]
        close_timeout=5.0,
        duration=60.0,
    )
    victim = cluster.node(1)
    with (
        HistoryWriter(tmp_path / "history.jsonl") as history,
        Workload.for_cluster(spec, cluster, history, run_dir=RunDir(tmp_path)) as workload,
    ):
        workload.start()
        time.sleep(5)
        cluster.stop_node(victim, hard=True)
        try:
            time.sleep(12)
        finally:
            cluster.start_node(victim)
        time.sleep(5)
        stats = workload.stop()
        cluster.wait_ready(120)
        result = workload.drain(timeout=90)
    assert result.complete, result.failed
    events, _ = read_history(tmp_path / "history.jsonl")
    # duplicates are Kafka's to answer for (the checker reports them): librdkafka re-sends
    # timed-out batches after an epoch bump; this test is about classification
    f = assert_durable(events, topic, 3, duplicates_ok=True)
    infos = [s for s in f["sends"].values() if s["type"] == "info"]
    fails = [s for s in f["sends"].values() if s["type"] == "fail"]
    assert infos, f"a killed broker should leave sends of unknown outcome ({stats})"
    assert stats.info == len(infos) and stats.fail == len(fails) == 0
    shrunk = [e for e in events if e["f"] == "metadata" and 1 not in e["isr"]]
    assert shrunk, "the monitor saw broker 1 leave the ISR"


SIGKILL_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from kchaos.harness.rundir.history_writer import HistoryWriter
    from kchaos.workloads.spec import ConsumerConfig, ProducerConfig, WorkloadSpec
    from kchaos.workloads.workload import Workload
    path, servers, topic = sys.argv[1:4]
    spec = WorkloadSpec(topics=(topic,), duration=60.0,
                        producers=ProducerConfig(count=2, rate=500.0, keys=0, max_in_flight=10000),
                        consumers=ConsumerConfig(count=1, mode="assign"))
    writer = HistoryWriter(path)
    workload = Workload(spec, servers, writer)
    workload.start()
    print("started", flush=True)
    time.sleep(600)
    """
)


def test_sigkill_of_the_harness_leaves_a_readable_history(
    healthy_cluster: Any, tmp_path: Path
) -> None:
    topic = new_topic(healthy_cluster, "wl-sigkill")
    path = tmp_path / "history.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGKILL_SCRIPT, str(path), healthy_cluster.bootstrap_servers, topic],
        cwd=REPO,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"started"
        time.sleep(6)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert wait_for_writer(path, timeout=30)  # the orphaned scribe writes what it got
    events, _torn = read_history(path)  # raises on any bad line but a torn last one
    assert [e["index"] for e in events] == list(range(len(events)))
    kinds = Counter((e["f"], e["type"]) for e in events)
    assert kinds[("send", "invoke")] > 100 and kinds[("send", "ok")] > 50, kinds
    assert kinds[("metadata", "ok")] > 0


def _unsplit(workload: Workload) -> Callable[[], str | None]:
    """None once the consumers hold disjoint, non-empty shares of all 4 partitions."""

    def check() -> str | None:
        held = [{p for _, p in c.assignment} for c in workload.consumers]
        whole = all(held) and not held[0] & held[1] and held[0] | held[1] == {0, 1, 2, 3}
        return None if whole else f"assignments {held}"

    return check


def _reading(workload: Workload, since: list[int], n: int) -> Callable[[], str | None]:
    """None once every consumer has read ``n`` more records than ``since``."""

    def check() -> str | None:
        read = [c.records - s for c, s in zip(workload.consumers, since, strict=True)]
        return None if min(read) >= n else f"records read since the split: {read}"

    return check


@pytest.mark.parametrize(
    "extra",
    [{"partition.assignment.strategy": "cooperative-sticky"}, {"group.protocol": "consumer"}],
    ids=["cooperative", "kip848"],
)
def test_incremental_group_protocols_record_full_assignments(
    healthy_cluster: Any, tmp_path: Path, extra: dict[str, str]
) -> None:
    topic = new_topic(healthy_cluster, "wl-group", partitions=4)
    members = ConsumerConfig(count=2, mode="subscribe", group=f"g-{topic}", configs=extra)
    spec = WorkloadSpec(
        topics=(topic,),
        producers=ProducerConfig(count=1, rate=100.0, keys=0, max_in_flight=10000),
        consumers=members,
        duration=60.0,
    )
    with (
        HistoryWriter(tmp_path / "history.jsonl") as history,
        Workload.for_cluster(spec, healthy_cluster, history, run_dir=RunDir(tmp_path)) as workload,
    ):
        workload.start()
        # wait for the outcome, not for a time: the two members split the partitions, then
        # each reads on its share (a rebalance under load took more than the 12 s this
        # test once slept)
        split = Until("the group's partitions split between both members", _unsplit(workload))
        split.with_startup_timeout(90).wait_until_ready()
        since = [c.records for c in workload.consumers]
        reading = Until("both members reading after the split", _reading(workload, since, 20))
        reading.with_startup_timeout(60).wait_until_ready()
        workload.stop()
        assert workload.drain(timeout=60).complete
    events, _ = read_history(tmp_path / "history.jsonl")
    f = assert_durable(events, topic, 4)
    latest: dict[int, set[int]] = {}
    for e in events:
        if e["f"] == "assign":
            latest[e["process"]] = {p for _, p in e["partitions"]}
        if e["f"] == "send" and e["type"] == "ok" and len(latest) == 2 and all(latest.values()):
            break
    assert set(latest) == {2, 3}
    assert not latest[2] & latest[3] and latest[2] | latest[3] == {0, 1, 2, 3}, latest
    acked = {v for v, s in f["sends"].items() if s["type"] == "ok"}
    assert acked <= {r["value"] for r in f["read"]}, "the group read every acknowledged value"
