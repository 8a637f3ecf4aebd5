"""Each family against the recording fake cluster: what start does, and that stop undoes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from faults_fakes import FakeCluster, FakeToxiproxy

from kchaos.faults import active_faults, make_fault
from kchaos.faults.hostfs import FILL_PREFIX
from kchaos.harness.errors import FaultError


def test_sigstop_pause(cluster: FakeCluster) -> None:
    with make_fault(cluster, "pause", "broker-2") as f:
        assert f.active and f in active_faults()
        assert cluster.jvm[2] == "T"
    assert cluster.jvm[2] == "S"
    assert cluster.names("signal") == [
        ("signal", "broker-2", "STOP"),
        ("signal", "broker-2", "CONT"),
    ]
    assert f not in active_faults()


def test_freezer_duty_cycle(cluster: FakeCluster, eventually: Callable[..., None]) -> None:
    f = make_fault(cluster, "pause", "1", mode="freezer", pause_s=0.05, run_s=0.05)
    f.start()
    eventually(lambda: len(cluster.names("pause")) >= 2, "two pauses of the duty cycle")
    f.stop()
    pauses = len(cluster.names("pause"))
    assert pauses >= 2
    assert len(cluster.names("unpause")) == pauses
    assert cluster.state[1] == "running"


def test_network_toxics(cluster: FakeCluster, toxiproxy: type[FakeToxiproxy]) -> None:
    f = make_fault(
        cluster,
        "latency",
        "leader:t:0",
        id="f-4",
        link="replication",
        direction="downstream",
        latency_ms=300,
        jitter_ms=20,
    )
    with f:
        assert toxiproxy.toxics == {
            ("node-1-replication", "kchaos-f-4-latency-downstream"): {
                "type": "latency",
                "stream": "downstream",
                "latency": 300,
                "jitter": 20,
            }
        }
    assert toxiproxy.toxics == {}
    with make_fault(cluster, "timeout", "broker-3", link="all"):
        assert len(toxiproxy.toxics) == 6  # three proxies, both directions
    with make_fault(cluster, "client-cut", "2", mode="refuse"):
        assert toxiproxy.disabled == {"node-2-client"}
    assert not toxiproxy.disabled


def test_isolate_installs_rules_on_every_side(cluster: FakeCluster) -> None:
    f = make_fault(cluster, "isolate", "broker-2", id="f-9")
    f.start()
    scripts = {c[1]: c[2][2] for c in cluster.names("net_exec")}
    assert set(scripts) == {"broker-1", "broker-2", "broker-3"}
    assert "--dport 19101" in scripts["broker-2"] and "--dport 19103" in scripts["broker-2"]
    assert "--dport 19102" in scripts["broker-1"] and "19103" not in scripts["broker-1"]
    assert f.detail["blocked"] == [
        ["broker-1", "broker-2"],
        ["broker-2", "broker-1"],
        ["broker-2", "broker-3"],
        ["broker-3", "broker-2"],
    ]
    cluster.calls.clear()
    f.stop()
    assert all("-X KCHAOS-f-9" in c[2][2] for c in cluster.names("net_exec"))
    assert len(cluster.names("net_exec")) == 3


def test_one_way_cut_only_touches_the_cut_side(cluster: FakeCluster) -> None:
    with make_fault(cluster, "cut", "broker-1", to="broker-3") as f:
        execs = cluster.names("net_exec")
        assert [c[1] for c in execs] == ["broker-1"]
        assert f.detail["to"] == ["broker-3"]


def test_failed_install_is_undone(cluster: FakeCluster) -> None:
    cluster.exec_code = 4
    with pytest.raises(FaultError, match="exited 4"):
        make_fault(cluster, "split", "broker-1").start()
    assert not active_faults()


def test_disk_faults(cluster: FakeCluster, eventually: Callable[..., None]) -> None:
    with make_fault(cluster, "disk-stall", "broker-3"):
        assert cluster.frozen == {3}
    assert not cluster.frozen
    f = make_fault(cluster, "slow-disk", "broker-1", freeze_ms=20, thaw_ms=20)
    f.start()
    eventually(lambda: len(cluster.names("freeze")) >= 2, "two freezes of the duty cycle")
    f.stop()
    assert len(cluster.names("freeze")) >= 2 and not cluster.frozen


def test_disk_full_file_is_labelled_and_removed(cluster: FakeCluster) -> None:
    node = cluster.node(2)
    with make_fault(cluster, "disk-full", "broker-2", id="f-7", max_mb=1) as f:
        files = list(Path(node.mount_path).iterdir())
        assert [p.name for p in files] == [f"{FILL_PREFIX}f-7"]
        assert files[0].stat().st_size == 2**20 == f.detail["fill_bytes"]["broker-2"]
    assert list(Path(node.mount_path).iterdir()) == []


def test_disk_full_stop_starts_the_broker_kafka_halted(cluster: FakeCluster) -> None:
    halted = "[x] FATAL Shutdown broker because all log dirs in /var/lib/kafka/data have failed"
    with make_fault(cluster, "disk-full", "broker-2", id="f-8", max_mb=1) as f:
        cluster.state[2] = "exited"  # Kafka halted on ENOSPC
        cluster.log_text[2] = "...\n" + halted + "\n"
    assert cluster.state[2] == "running"
    assert ("start_node", "broker-2", True) in cluster.calls
    assert f.detail["restarted"] == ["broker-2"]


def test_disk_full_stop_reads_only_the_brokers_last_life(cluster: FakeCluster) -> None:
    halted = "[x] FATAL Shutdown broker because all log dirs in /var/lib/kafka/data have failed"
    cluster.log_text[2] = "...\n" + halted + "\n"  # an earlier disk-full's halt
    cluster.start_node(cluster.node(2))  # restarted since
    cluster.log_text[2] += "[y] INFO Kafka Server started\n"
    cluster.calls.clear()
    with make_fault(cluster, "disk-full", "broker-2", id="f-10", max_mb=1) as f:
        cluster.state[2] = "exited"  # then killed by another fault, which restarts it
    assert cluster.state[2] == "exited"
    assert not [c for c in cluster.calls if c[0] == "start_node"]
    assert "restarted" not in f.detail


def test_disk_full_stop_leaves_a_broker_down_for_another_reason(cluster: FakeCluster) -> None:
    with make_fault(cluster, "disk-full", "broker-2", id="f-9", max_mb=1) as f:
        cluster.state[2] = "exited"  # killed by another fault, which restarts it itself
    assert cluster.state[2] == "exited"
    assert not [c for c in cluster.calls if c[0] == "start_node"]
    assert "restarted" not in f.detail


def test_kill_restarts_on_stop(cluster: FakeCluster) -> None:
    with make_fault(cluster, "kill", "broker-1"):
        assert cluster.state[1] == "exited"
    assert cluster.state[1] == "running"
    assert [c[0] for c in cluster.calls] == ["stop_node", "start_node"]
    assert cluster.calls[0] == ("stop_node", "broker-1", True)
    with make_fault(cluster, "term", "broker-2", wait=False) as term:
        pass
    assert cluster.calls[2:] == [
        ("stop_node", "broker-2", False),
        ("start_node", "broker-2", False),
    ]
    assert term.detail == {"exit_codes": {"broker-2": 143}}


def test_term_records_each_targets_exit_code(cluster: FakeCluster) -> None:
    # the start line tells a clean stop (143) from one Docker had to SIGKILL (137)
    cluster.exit_codes = {1: 143, 3: 137}
    with make_fault(cluster, "term", "broker-1,broker-3", wait=False) as term:
        assert term.detail == {"exit_codes": {"broker-1": 143, "broker-3": 137}}


def test_power_loss_starts_all_then_waits(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kchaos.faults.hostfs.shutdown", lambda c, n: c._log("shutdown", n.name))
    monkeypatch.setattr("kchaos.faults.hostfs.remount", lambda c, n: c._log("remount", n.name))
    with make_fault(cluster, "power-loss"):
        assert set(cluster.state.values()) == {"exited"}
        assert len(cluster.names("shutdown")) == 3 and len(cluster.names("remount")) == 3
        # every node killed before any filesystem is shut down
        kinds = [c[0] for c in cluster.calls if c[0] in ("stop_node", "shutdown")]
        assert kinds == ["stop_node"] * 3 + ["shutdown"] * 3
    assert [c[2] for c in cluster.names("start_node")] == [False, False, False]
    assert cluster.calls[-1] == ("wait_ready",)


def test_rolling_restart(cluster: FakeCluster) -> None:
    f = make_fault(cluster, "rolling-restart", interval_s=0.01)
    f.start()
    f.stop()
    assert [c[1] for c in cluster.names("restart_node")] == ["broker-1", "broker-2", "broker-3"]
    # each restart is followed by a wait for every ISR to be full, before the next restart
    steps = [c[0] for c in cluster.calls if c[0] in ("restart_node", "wait_isr_full")]
    assert steps == ["restart_node", "wait_isr_full"] * 3
    assert cluster.names("wait_isr_full")[0] == ("wait_isr_full", None)
    codes = {"broker-1": 143, "broker-2": 143, "broker-3": 143}
    assert f.detail == {"exit_codes": codes}  # put in by the stop, the thread done


def test_rolling_restart_without_the_isr_wait(cluster: FakeCluster) -> None:
    with make_fault(cluster, "rolling-restart", "1,2", interval_s=0, wait_isr=False):
        pass
    assert cluster.names("wait_isr_full") == []
    assert [c[1] for c in cluster.names("restart_node")] == ["broker-1", "broker-2"]
