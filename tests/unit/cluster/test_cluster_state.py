"""cluster.json round trip."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kchaos.harness.cluster.spec import ClusterSpec
from kchaos.harness.cluster.state import RunState, load, save, state_path
from kchaos.harness.cluster.topology import plan_nodes
from kchaos.harness.errors import ClusterError


def test_save_and_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    spec = ClusterSpec(brokers=3, racks={1: "a"}, run_id="r7")
    nodes = plan_nodes(spec, "r7", "10.213.7.0/24")
    nodes[0] = dataclasses.replace(nodes[0], loop_device="/dev/loop9")
    st = RunState(
        run_id="r7",
        spec=spec,
        kafka_image="k:1",
        toxiproxy_image="t:1",
        subnet="10.213.7.0/24",
        toxiproxy_ip="10.213.7.2",
        network="kchaos-r7",
        cluster_id="abc",
        nodes=nodes,
        phase="started",
    )
    path = save(st)
    assert path == state_path("r7") == tmp_path / "runs" / "r7" / "cluster.json"
    back = load("r7")
    assert back.nodes == nodes
    assert back.spec.racks == {1: "a"}
    assert back.phase == "started" and back.subnet == "10.213.7.0/24"
    assert back.nodes[0].proxies["client"].address == "10.213.7.2:19001"


def test_missing_and_broken_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    with pytest.raises(ClusterError, match="no saved cluster state"):
        load("nope")
    bad = tmp_path / "runs" / "bad" / "cluster.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{")
    with pytest.raises(ClusterError, match="unreadable"):
        load("bad")
    bad.write_text("{}")
    with pytest.raises(ClusterError, match="malformed"):
        load("bad")
