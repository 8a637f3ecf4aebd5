"""The nodes' logs of a run directory: which node each folder is, and the time of an entry."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kchaos.harness.cluster.spec import ClusterSpec
from kchaos.harness.cluster.topology import plan_nodes
from kchaos.harness.rundir import RunDir, names
from kchaos.harness.rundir.nodelogs import (
    entry_unix_ms,
    history_time_ns,
    node_of,
    timed_node_logs,
)

# a real line of a 4.4.0 broker (runs of 2026-11-25, kip-501-busy-leader)
LINE_440 = (
    "[2026-11-25 23:08:32,228] INFO [Partition slow-0 broker=1] Shrinking ISR from 1,2,3 to 1."
    " Leader: (highWatermark: 0, endOffset: 48). Out of sync replicas: (brokerId: 2,"
    " endOffset: 0, lastCaughtUpTimeMs: 1795648110020) (brokerId: 3, endOffset: 0,"
    " lastCaughtUpTimeMs: 1795648109807). (kafka.cluster.Partition)"
)
# that run's run.json history_start_unix_ns
ORIGIN_440 = 1795648109031284167


def test_the_container_names_the_node_as_the_cluster_names_it() -> None:
    spec = ClusterSpec(brokers=3, controllers=1)
    nodes = plan_nodes(spec, "20261125-230819-7278", "10.213.7.0/24")
    assert {n.container_name: node_of(n.container_name) for n in nodes} == {
        "kchaos-20261125-230819-7278-broker-1": ("broker", 1),
        "kchaos-20261125-230819-7278-broker-2": ("broker", 2),
        "kchaos-20261125-230819-7278-broker-3": ("broker", 3),
        "kchaos-20261125-230819-7278-controller-101": ("controller", 101),
    }
    combined = plan_nodes(ClusterSpec(brokers=2), "r", "10.213.8.0/24")
    assert [node_of(n.container_name) for n in combined] == [("broker", 1), ("broker", 2)]
    assert node_of("kchaos-x-toxiproxy") is None and node_of("notes") is None


def test_a_log_entry_time_is_utc_milliseconds() -> None:
    ms = entry_unix_ms(LINE_440)
    expected = datetime(2026, 11, 25, 23, 8, 32, 228000, tzinfo=UTC)
    assert ms == int(expected.timestamp() * 1000) == 1795648112228
    # on the history's time base: 3.196716 s into that run, 31 ms before the controller
    # committed the shrink (controller.jsonl offset 55, time 3227715833)
    assert history_time_ns(ms, ORIGIN_440) == 3_196_715_833
    assert 3_227_715_833 - history_time_ns(ms, ORIGIN_440) == 31_000_000


def test_lines_without_a_timestamp_have_no_time() -> None:
    assert (
        entry_unix_ms("[kchaos] server properties in /opt/kafka/config/server.properties:") is None
    )
    assert entry_unix_ms("\tat kafka.cluster.Partition.maybeShrinkIsr(Partition.scala:1)") is None
    assert entry_unix_ms("[2026-13-45 99:99:99,000] INFO nonsense") is None


def test_run_dir_lists_the_node_logs_it_kept(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    assert rd.node_logs() == []  # no logs/ at all
    rd.write_node_logs("kchaos-r-broker-2", {names.SERVER_LOG: "a\nb\n"})
    rd.write_node_logs("kchaos-r-controller-101", {names.SERVER_LOG: ""})
    rd.node_logs_dir("kchaos-r-broker-3").mkdir()  # a folder without a server.log
    rd.write_metadata_dump("dump")
    found = rd.node_logs()
    assert [(n.container, n.role, n.node_id) for n in found] == [
        ("kchaos-r-broker-2", "broker", 2),
        ("kchaos-r-controller-101", "controller", 101),
    ]
    assert found[0].path == rd.server_log("kchaos-r-broker-2")
    assert rd.server_log("c") == tmp_path / names.LOGS_DIR / "c" / names.SERVER_LOG
    assert list(found[0].lines()) == [(1, "a"), (2, "b")]
    assert found[0].where(2) == f"kchaos-r-broker-2/{names.SERVER_LOG}:2"


def test_timed_node_logs_need_a_log_and_a_time_origin(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    (tmp_path / names.RUN_JSON).write_text("{not json")  # read only when it is needed
    assert timed_node_logs(rd) is None  # no logs/ at all
    rd.write_node_logs("kchaos-r-controller-101", {names.SERVER_LOG: ""})
    assert timed_node_logs(rd, ORIGIN_440, role="broker") is None  # no broker's log
    rd.write_node_logs("kchaos-r-broker-2", {names.SERVER_LOG: ""})
    given = timed_node_logs(rd, ORIGIN_440, role="broker")
    assert given is not None and given.origin_unix_ns == ORIGIN_440
    assert [n.container for n in given.nodes] == ["kchaos-r-broker-2"]
    (tmp_path / names.RUN_JSON).unlink()
    assert timed_node_logs(rd) is None  # logs, but no origin: no run.json
    (tmp_path / names.RUN_JSON).write_text("{}")
    assert timed_node_logs(rd) is None  # nor a history_start_unix_ns in it
    (tmp_path / names.RUN_JSON).write_text(f'{{"history_start_unix_ns": {ORIGIN_440}}}')
    found = timed_node_logs(rd)
    assert found is not None and found.origin_unix_ns == ORIGIN_440
    assert [n.container for n in found.nodes] == ["kchaos-r-broker-2", "kchaos-r-controller-101"]
