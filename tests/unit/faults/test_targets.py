from __future__ import annotations

import random
from pathlib import Path

import pytest
from faults_fakes import FakeCluster

from kchaos.faults.targets import TargetSpec, parse_target, resolve
from kchaos.harness.cluster.observe import active_controller_count
from kchaos.harness.errors import ConfigError, FaultError


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("all", TargetSpec("all")),
        ("random", TargetSpec("random", count=1)),
        ("random:2", TargetSpec("random", count=2)),
        ("leader:orders.v1:3", TargetSpec("leader", topic="orders.v1", partition=3)),
        ("broker-2", TargetSpec("named", names=("broker-2",))),
        ("1, broker-3", TargetSpec("named", names=("1", "broker-3"))),
        (2, TargetSpec("named", names=("2",))),
    ],
)
def test_parse(text: str, spec: TargetSpec) -> None:
    assert parse_target(text) == spec
    assert parse_target(str(spec)) == spec


@pytest.mark.parametrize("text", ["random:x", "random:0", "leader:t", "leader:t:x", "a b", ""])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_target(text)


def names(nodes: list) -> list[str]:  # type: ignore[type-arg]
    return [n.name for n in nodes]


def test_resolve_fixed_kinds(tmp_path: Path) -> None:
    c = FakeCluster(5, tmp_path, leader=4, controller=2)
    rng = random.Random(1)
    assert names(resolve(c, "all", rng)) == [f"broker-{i}" for i in range(1, 6)]
    assert names(resolve(c, "leader:t:0", rng)) == ["broker-4"]
    assert names(resolve(c, "controller", rng)) == ["broker-2"]
    assert names(resolve(c, "3,broker-1,1", rng)) == ["broker-1", "broker-3"]
    assert resolve(c, "none", rng) == []
    with pytest.raises(FaultError, match="no such node"):
        resolve(c, "broker-9", rng)
    with pytest.raises(FaultError):
        resolve(c, "random:6", rng)


def test_minority_majority_sizes(tmp_path: Path) -> None:
    for n, minority, majority in [(3, 1, 2), (4, 1, 3), (5, 2, 3), (6, 2, 4)]:
        c = FakeCluster(n, tmp_path / str(n))
        for seed in range(5):
            mino = resolve(c, "minority", random.Random(seed))
            majo = resolve(c, "majority", random.Random(seed))
            assert len(mino) == minority and len(majo) == majority
            assert [x.node_id for x in mino] == sorted(x.node_id for x in mino)


def test_random_is_seeded(tmp_path: Path) -> None:
    c = FakeCluster(5, tmp_path)
    draws = [names(resolve(c, "random:2", random.Random("7/f-3"))) for _ in range(3)]
    assert draws[0] == draws[1] == draws[2]
    seen = {tuple(names(resolve(c, "random", random.Random(s)))) for s in range(40)}
    assert len(seen) == 5  # every broker gets picked by some seed


def test_metrics_parsing() -> None:
    page = (
        "# HELP kafka_controller_kafkacontroller_activecontrollercount x\n"
        "# TYPE kafka_controller_kafkacontroller_activecontrollercount gauge\n"
        "kafka_server_replicamanager_leadercount 3.0\n"
        "kafka_controller_kafkacontroller_activecontrollercount 1.0\n"
    )
    assert active_controller_count(page) == 1.0
    assert active_controller_count(page.replace(" 1.0\n", " 0.0\n")) == 0.0
    assert active_controller_count("") == 0.0
