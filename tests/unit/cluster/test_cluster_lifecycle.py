"""Cluster object behaviour that needs no Docker: cleanup on failed start, lookups."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kchaos.cli.cluster import cluster_cmd
from kchaos.harness.cluster import Cluster, ClusterSpec
from kchaos.harness.cluster import cluster as cluster_mod
from kchaos.harness.cluster.state import RunState, save
from kchaos.harness.cluster.topology import plan_nodes
from kchaos.harness.errors import ClusterError


def test_a_failed_start_cleans_up_and_re_raises(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    calls: list[str] = []

    def boom(self: Cluster) -> None:
        calls.append("start")
        raise ClusterError("no luck")

    monkeypatch.setattr(Cluster, "_start", boom)
    monkeypatch.setattr(Cluster, "cleanup", lambda self: calls.append("cleanup"))
    with pytest.raises(ClusterError, match="no luck"), Cluster(ClusterSpec(run_id="t1")):
        pass
    assert calls == ["start", "cleanup"]


def test_an_interrupted_start_cleans_up_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    calls: list[str] = []

    def interrupted(self: Cluster) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Cluster, "_start", interrupted)
    monkeypatch.setattr(Cluster, "cleanup", lambda self: calls.append("cleanup"))
    with pytest.raises(KeyboardInterrupt):
        Cluster(ClusterSpec(run_id="t2")).start()
    assert calls == ["cleanup"]


def test_a_run_id_in_use_is_refused_and_nothing_of_it_is_removed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two runs on one host with the same id (the same second, the same 16 random bits):
    the second is refused before it creates anything, and neither its failed start nor
    its stop removes what the first run owns (cleanup selects by run id)."""
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    calls: list[str] = []
    monkeypatch.setattr(Cluster, "_start", lambda self: calls.append("start"))
    monkeypatch.setattr(cluster_mod, "cleanup_run", lambda run_id, **kw: calls.append(run_id))
    first = Cluster(ClusterSpec(run_id="same"))
    first.start()
    assert (tmp_path / "runs" / "same").is_dir()
    second = Cluster(ClusterSpec(run_id="same"))
    with pytest.raises(ClusterError, match="run id same is in use"):
        second.start()
    assert second.foreign
    second.stop()
    assert second.cleanup() == []
    assert calls == ["start"]  # only the first run started; nobody cleaned anything
    first.cleanup()
    assert calls == ["start", "same"]


def test_reserving_a_run_id_creates_its_state_directory_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path / "state"))
    cluster_mod.reserve_run_id("20261206-203000-a1b2")
    assert (tmp_path / "state" / "runs" / "20261206-203000-a1b2").is_dir()
    cluster_mod.reserve_run_id("20261206-203000-a1b3")  # another id: fine
    with pytest.raises(ClusterError, match="kchaos cleanup --run 20261206-203000-a1b2"):
        cluster_mod.reserve_run_id("20261206-203000-a1b2")


def test_attach_rebuilds_handles_from_saved_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    spec = ClusterSpec(brokers=3, run_id="r9")
    st = RunState(
        run_id="r9",
        spec=spec,
        subnet="10.213.9.0/24",
        toxiproxy_ip="10.213.9.2",
        nodes=plan_nodes(spec, "r9", "10.213.9.0/24"),
    )
    save(st)
    c = cluster_mod.attach("r9")
    assert c.run_id == "r9" and c.subnet == "10.213.9.0/24"
    assert c.bootstrap_servers == "10.213.9.2:19001,10.213.9.2:19002,10.213.9.2:19003"
    assert c.toxiproxy_url == "http://10.213.9.2:8474"
    assert c.node(2) is c.node("broker-2")
    assert c.metrics_url(c.node(3)) == "http://10.213.9.13:7071/metrics"
    assert [n.node_id for n in c.brokers] == [1, 2, 3] == [n.node_id for n in c.controllers]
    with pytest.raises(ClusterError):
        c.node(7)


def test_cluster_up_rejects_a_malformed_property() -> None:
    result = CliRunner().invoke(cluster_cmd, ["up", "--property", "no-equals-sign"])
    assert result.exit_code != 0
    assert "NAME=VALUE" in result.output


class _Container:
    """Stands in for a docker container: records signals and waits on a shared log."""

    def __init__(self, name: str, log: list[str], clock: list[float], exits_after: float):
        self.name, self.log, self.clock, self.exits_after = name, log, clock, exits_after
        self.status = "running"

    def kill(self, signal: str) -> None:
        self.log.append(f"{signal} {self.name}")

    def wait(self, timeout: float) -> None:
        self.log.append(f"wait {self.name} {timeout:g}")
        if self.exits_after > timeout:
            self.clock[0] += timeout
            raise TimeoutError(self.name)
        self.clock[0] += self.exits_after
        self.status = "exited"


def _stoppable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exits_after: dict[str, float]
) -> tuple[Cluster, list[str]]:
    """A cluster of two brokers and a dedicated controller, over fake containers."""
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    spec = ClusterSpec(brokers=2, controllers=1, run_id="s1")
    nodes = plan_nodes(spec, "s1", "10.213.9.0/24")
    save(
        RunState(
            run_id="s1", spec=spec, subnet="10.213.9.0/24", toxiproxy_ip="10.213.9.2", nodes=nodes
        )
    )
    log: list[str] = []
    clock = [100.0]
    containers = {
        n.container_name: _Container(n.name, log, clock, exits_after[n.name]) for n in nodes
    }
    monkeypatch.setattr(cluster_mod.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(cluster_mod, "get_container", lambda client, name: containers[name])
    monkeypatch.setattr(Cluster, "client", property(lambda self: None))
    monkeypatch.setattr(Cluster, "cleanup", lambda self: log.append("cleanup") or [])
    return cluster_mod.attach("s1"), log


@pytest.mark.parametrize(
    ("exits_after", "expected"),
    [
        pytest.param(
            {"broker-1": 2.0, "broker-2": 1.0, "controller-101": 0.5},
            [
                "SIGTERM broker-1",
                "SIGTERM broker-2",
                "wait broker-1 20",
                "wait broker-2 18",
                "SIGTERM controller-101",
                "wait controller-101 17",
                "cleanup",
            ],
            id="brokers-before-the-controller",
        ),
        # a broker that never exits uses up the one deadline: nothing is waited for after
        # it, the controller is not signalled, and the cleanup removes (kills) what is left
        pytest.param(
            {"broker-1": 999.0, "broker-2": 1.0, "controller-101": 0.5},
            ["SIGTERM broker-1", "SIGTERM broker-2", "wait broker-1 20", "cleanup"],
            id="one-deadline-for-the-whole-stop",
        ),
    ],
)
def test_stop_order_and_deadline(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    exits_after: dict[str, float],
    expected: list[str],
) -> None:
    c, log = _stoppable(tmp_path, monkeypatch, exits_after)
    c.stop(timeout=20.0)
    assert log == expected
