"""cluster.data_mount_options: validated, carried into every mount of a node's ext4."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kchaos.harness.cluster import Cluster, filesystem
from kchaos.harness.cluster import cluster as cluster_mod
from kchaos.harness.cluster.spec import ClusterSpec, mount_options
from kchaos.harness.cluster.topology import plan_nodes
from kchaos.harness.errors import ClusterError, ConfigError
from kchaos.harness.scenario import library
from kchaos.harness.scenario.loader import load_scenario


def test_a_list_or_a_comma_string_becomes_a_tuple() -> None:
    assert mount_options(None) == ()
    assert mount_options(["noauto_da_alloc", "commit=5"]) == ("noauto_da_alloc", "commit=5")
    assert mount_options(" noauto_da_alloc , data=ordered ,") == ("noauto_da_alloc", "data=ordered")


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (["ro"], "Kafka must write"),
        (["noload"], "journal replayed"),
        (["errors=panic"], "panic the host"),
        (["a,b"], "no comma"),
        (["Noatime"], "not an ext4 mount option"),
        ([5], "not an ext4 mount option"),
        ({"x": 1}, "a list of ext4 mount options"),
    ],
)
def test_bad_options_are_refused_naming_the_field(raw: object, needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        ClusterSpec(kafka_version="3.7.0", data_mount_options=raw)  # type: ignore[arg-type]
    assert err.value.field == "data_mount_options"
    assert needle in str(err.value)


def test_the_spec_round_trips_its_options() -> None:
    spec = ClusterSpec(kafka_version="3.7.0", data_mount_options=("noauto_da_alloc",))
    data = spec.to_dict()
    assert data["data_mount_options"] == ["noauto_da_alloc"]
    assert ClusterSpec.from_dict(data).data_mount_options == ("noauto_da_alloc",)
    older = {k: v for k, v in data.items() if k != "data_mount_options"}  # older state files
    assert ClusterSpec.from_dict(older).data_mount_options == ()


def test_mount_puts_the_options_after_noatime(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def fake_run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(filesystem, "_run", fake_run)
    filesystem.mount("/dev/loop7", Path("/m"), ("noauto_da_alloc",))
    filesystem.mount("/dev/loop7", Path("/m"))
    assert calls == [
        ["mount", "-t", "ext4", "-o", "noatime,noauto_da_alloc", "/dev/loop7", "/m"],
        ["mount", "-t", "ext4", "-o", "noatime", "/dev/loop7", "/m"],
    ]


MOUNTINFO = """\
90 22 7:3 / /var/lib/kchaos/runs/r1/node-1 rw,noatime - ext4 /dev/loop3 rw,noauto_da_alloc
91 22 7:4 / /var/lib/kchaos/runs/r1/node-2 rw,noatime - ext4 /dev/loop4 rw
"""


def test_super_options_read_what_the_kernel_applied() -> None:
    node1 = Path("/var/lib/kchaos/runs/r1/node-1")
    assert filesystem.super_options(node1, MOUNTINFO) == ("rw", "noauto_da_alloc")
    assert filesystem.super_options(Path("/var/lib/kchaos/runs/r1/node-2/"), MOUNTINFO) == ("rw",)
    assert filesystem.super_options(Path("/elsewhere"), MOUNTINFO) == ()


SCENARIO = """\
name: mount-options
description: a scenario that mounts its nodes' filesystems its own way
cluster:
  brokers: 3
  data_mount_options:
    - noauto_da_alloc
    - norecovery
topics: [{name: a}]
workload: {duration: 10s}
"""


def test_a_scenario_error_names_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    with pytest.raises(ConfigError) as err:
        load_scenario(path)
    assert f"{path}:7: cluster.data_mount_options.1:" in str(err.value)
    assert "'norecovery' is not allowed" in str(err.value)
    good = load_scenario(path, overrides=["cluster.data_mount_options=noauto_da_alloc,commit=5"])
    assert good.cluster.data_mount_options == ("noauto_da_alloc", "commit=5")
    assert good.to_dict()["cluster"]["data_mount_options"] == ["noauto_da_alloc", "commit=5"]


def test_the_library_scenario_mounts_without_auto_da_alloc() -> None:
    sc = library.load("kafka-16541-epoch-checkpoint-os-crash", kafka_version="3.7.0")
    assert sc.cluster.data_mount_options == ("noauto_da_alloc",)


def test_the_check_passes_when_the_kernel_applied_each_option() -> None:
    node1 = Path("/var/lib/kchaos/runs/r1/node-1")
    filesystem.check_mount_options(node1, ("noauto_da_alloc",), MOUNTINFO)
    # noatime is a per-mount option; defaults (not listed by the kernel) need no check
    filesystem.check_mount_options(node1, ("noatime", "auto_da_alloc", "data=ordered"), MOUNTINFO)
    # nothing asked: nothing to check, mounted or not
    filesystem.check_mount_options(Path("/elsewhere"), (), MOUNTINFO)


def test_the_check_fails_when_an_option_did_not_take() -> None:
    node2 = Path("/var/lib/kchaos/runs/r1/node-2")
    with pytest.raises(ClusterError) as err:
        filesystem.check_mount_options(node2, ("noauto_da_alloc",), MOUNTINFO)
    assert "mounted without 'noauto_da_alloc'" in str(err.value)
    assert "cluster.data_mount_options" in str(err.value) and "rw" in str(err.value)
    with pytest.raises(ClusterError, match="not mounted"):
        filesystem.check_mount_options(Path("/elsewhere"), ("noauto_da_alloc",), MOUNTINFO)


@pytest.mark.parametrize(("node2_options", "fails"), [("rw", True), ("rw,noauto_da_alloc", False)])
def test_the_cluster_start_checks_each_node_filesystem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, node2_options: str, fails: bool
) -> None:
    """The start fails before any container when node 2's kernel mount lacks the option
    (fakes for Docker, the loop devices and /proc/self/mountinfo)."""
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    spec = ClusterSpec(
        brokers=2, run_id="r1", kafka_version="3.7.0", data_mount_options=("noauto_da_alloc",)
    )
    cluster = Cluster(spec)
    nodes = plan_nodes(cluster.spec, "r1", "10.213.9.0/24")
    lines = [
        f"{90 + i} 22 7:{i} / {n.mount_path} rw,noatime - ext4 /dev/loop{i} "
        + ("rw,noauto_da_alloc" if n.node_id != 2 else node2_options)
        for i, n in enumerate(nodes)
    ]
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(filesystem, "MOUNTINFO", mountinfo)
    made: list[str] = []
    monkeypatch.setattr(Cluster, "client", property(lambda self: None))
    monkeypatch.setattr(
        cluster_mod, "create_network", lambda client, run_id: (_Net(), "10.213.9.0/24")
    )
    monkeypatch.setattr(
        filesystem,
        "create_filesystem",
        lambda image, mount, **kw: made.append(str(mount)) or f"/dev/loop{len(made)}",
    )

    def no_containers(*args: object, **kw: object) -> None:
        raise _Stop

    monkeypatch.setattr(cluster_mod, "run_toxiproxy", no_containers)
    if fails:
        with pytest.raises(ClusterError, match="mounted without 'noauto_da_alloc'") as err:
            cluster._start()
        assert str(nodes[1].mount_path) in str(err.value)
    else:
        with pytest.raises(_Stop):  # every filesystem passed: on to the containers
            cluster._start()
    assert made == [str(n.mount_path) for n in nodes]


class _Net:
    name = "kchaos-r1"


class _Stop(Exception):
    """The fake container start: the test stops there."""
