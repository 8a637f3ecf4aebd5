from __future__ import annotations

import pytest
from faults_fakes import FakeCluster, FakeToxiproxy

from kchaos.faults import active_faults, heal_everything, make_fault
from kchaos.faults.hostfs import FILL_PREFIX
from kchaos.harness.errors import HealError


def test_heal_finds_leftovers_without_memory(
    cluster: FakeCluster, toxiproxy: type[FakeToxiproxy]
) -> None:
    cluster.frozen.add(1)
    cluster.jvm[2] = "T"
    cluster.state[3] = "paused"
    toxiproxy.toxics[("node-1-client", "kchaos-f-1-x")] = {}
    toxiproxy.disabled.add("node-2-client")
    (cluster.node(1).mount_path / f"{FILL_PREFIX}f-3").write_bytes(b"x")
    done = heal_everything(cluster)
    text = "\n".join(done)
    assert "thawed filesystem of broker-1" in text
    assert "SIGCONT to the stopped JVM of broker-2" in text
    assert "unpaused container of broker-3" in text
    assert "toxiproxy: removed toxic kchaos-f-1-x on node-1-client" in text
    assert "toxiproxy: removed proxy node-2-client disabled" in text
    assert "deleted disk-fill file" in text
    assert not cluster.frozen and cluster.jvm[2] == "S" and cluster.state[3] == "running"
    assert not toxiproxy.toxics and not toxiproxy.disabled
    # iptables heal script ran in every running container
    heals = [c for c in cluster.names("net_exec") if "KCHAOS*)" in " ".join(c[2])]
    assert len(heals) == 3
    # thaw comes before anything that could block on a frozen filesystem
    assert cluster.calls[0][0] == "thaw"


def test_heal_of_a_healthy_cluster_reports_nothing(
    cluster: FakeCluster, toxiproxy: type[FakeToxiproxy]
) -> None:
    assert heal_everything(cluster) == []


def test_heal_stops_duty_cycles_and_starts_stopped_nodes(
    cluster: FakeCluster, toxiproxy: type[FakeToxiproxy]
) -> None:
    f = make_fault(cluster, "pause", "broker-1", pause_s=0.01, run_s=0.01)
    f.start()
    cluster.state[2] = "exited"
    done = heal_everything(cluster, wait_ready=True)
    assert "started stopped node broker-2" in done
    assert cluster.calls[-1] == ("wait_ready",)
    n = len(cluster.names("signal"))
    import time

    time.sleep(0.05)
    assert len(cluster.names("signal")) == n  # the duty cycle no longer runs
    assert cluster.jvm[1] == "S"
    # the heal undid the pause: it is no longer listed as active, and its stop is a no-op
    assert f not in active_faults() and not f.active
    f.stop()


def test_a_heal_with_errors_keeps_the_faults_active(
    cluster: FakeCluster, toxiproxy: type[FakeToxiproxy], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: object) -> list[str]:
        raise HealError("toxiproxy down")

    f = make_fault(cluster, "pause", "broker-1", pause_s=0.01, run_s=0.01)
    f.start()
    monkeypatch.setattr(FakeToxiproxy, "leftovers", broken)
    heal_everything(cluster)
    assert f in active_faults() and f.active  # not known to be undone
    f.stop()
    assert f not in active_faults()


def test_strict_heal_raises_after_trying_everything(
    cluster: FakeCluster, toxiproxy: type[FakeToxiproxy], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: object) -> list[str]:
        raise HealError("toxiproxy down")

    monkeypatch.setattr(FakeToxiproxy, "leftovers", broken)
    cluster.jvm[1] = "T"
    with pytest.raises(HealError, match="toxiproxy down"):
        heal_everything(cluster, strict=True)
    assert cluster.jvm[1] == "S"
    assert any(x.startswith("error: toxiproxy") for x in heal_everything(cluster))
