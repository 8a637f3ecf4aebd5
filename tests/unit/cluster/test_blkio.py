"""kchaos.harness.cluster.blkio on a fake /proc and a fake cgroup hierarchy (plain files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kchaos.harness.cluster import blkio
from kchaos.harness.errors import ClusterError

CID = "4da981371a64687619721837a4b83a67a9673922c6324eab63c190ad7e4563e7"


def fake_host(tmp_path: Path, cgroup_lines: str, *, hierarchy: bool = True) -> tuple[Path, Path]:
    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "42").mkdir(parents=True)
    (proc / "42" / "cgroup").write_text(cgroup_lines)
    if hierarchy:
        group = root / "blkio" / "docker" / CID
        group.mkdir(parents=True)
        for name in blkio.THROTTLE_FILES:
            (group / name).write_text("")
    return proc, root


V1 = f"8:pids:/docker/{CID}\n7:blkio:/docker/{CID}\n1:cpu,cpuacct:/docker/{CID}\n0::/docker/{CID}\n"


def test_group_of_a_docker_container(tmp_path: Path) -> None:
    proc, root = fake_host(tmp_path, V1)
    assert blkio.group_dir(42, proc=proc, root=root) == root / "blkio" / "docker" / CID


def test_group_on_a_cgroup_v2_only_host_is_a_clear_error(tmp_path: Path) -> None:
    proc, root = fake_host(tmp_path, f"0::/docker/{CID}\n", hierarchy=False)
    with pytest.raises(ClusterError, match="no cgroup-v1 blkio group"):
        blkio.group_dir(42, proc=proc, root=root)


def test_group_of_a_gone_process(tmp_path: Path) -> None:
    proc, root = fake_host(tmp_path, V1)
    with pytest.raises(ClusterError, match="cgroups of pid 43"):
        blkio.group_dir(43, proc=proc, root=root)


def test_throttle_then_clear(tmp_path: Path) -> None:
    group = tmp_path / "g"
    group.mkdir()
    for name in blkio.THROTTLE_FILES:
        (group / name).write_text("")
    set_ = blkio.throttle_writes(group, "7:3", iops=2, bps=0)
    assert [str(t) for t in set_] == ["blkio.throttle.write_iops_device 7:3 2"]
    # a plain file keeps what was written; the kernel would keep only non-zero lines
    assert (group / blkio.WRITE_IOPS).read_text() == "7:3 2\n"
    assert (group / blkio.WRITE_BPS).read_text() == "7:3 0\n"
    (group / blkio.WRITE_BPS).write_text("7:3 1048576\n")
    (group / blkio.READ_IOPS).write_text("7:9 5\n")
    removed = blkio.clear_throttles(group, "7:3")
    assert [str(t) for t in removed] == [
        "blkio.throttle.write_iops_device 7:3 2",
        "blkio.throttle.write_bps_device 7:3 1048576",
    ]
    # the other device was left alone; clearing every device removes it, then none is left
    assert [str(t) for t in blkio.read_throttles(group)] == [
        "blkio.throttle.read_iops_device 7:9 5"
    ]
    assert [str(t) for t in blkio.clear_throttles(group)] == [
        "blkio.throttle.read_iops_device 7:9 5"
    ]
    assert blkio.read_throttles(group) == []


def test_negative_limits_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="must be >= 0"):
        blkio.throttle_writes(tmp_path, "7:3", iops=-1, bps=0)


def test_write_to_a_missing_group_is_a_cluster_error(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="write '7:3 1'"):
        blkio.throttle_writes(tmp_path / "gone", "7:3", iops=1, bps=0)


def test_device_number_of_a_block_device() -> None:
    devices = [p for p in Path("/dev").glob("loop[0-9]*") if p.is_block_device()]
    if not devices:
        pytest.skip("no loop device node on this host")
    st = os.stat(devices[0])
    assert blkio.device_number(devices[0]) == f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    with pytest.raises(ClusterError, match="block device /dev/nope"):
        blkio.device_number("/dev/nope")


class _Gone:
    """A Docker client whose containers are all gone."""

    class containers:  # noqa: N801 - mirrors docker.DockerClient.containers
        @staticmethod
        def get(name: str) -> object:
            import docker.errors

            raise docker.errors.NotFound(f"no container {name}")


def test_the_cluster_clears_nothing_on_a_gone_container_and_cannot_throttle_it(
    tmp_path: Path,
) -> None:
    from kchaos.harness.cluster import Cluster
    from kchaos.harness.cluster.api import NodeHandle

    cluster = Cluster()
    cluster._client = _Gone()  # type: ignore[assignment]
    node = NodeHandle(
        1,
        "broker-1",
        ("broker",),
        "kchaos-x-broker-1",
        "10.0.0.11",
        tmp_path,
        "/dev/loop0",
        tmp_path / "i",
    )
    assert cluster.clear_throttles(node) == []  # a heal of a removed run finds nothing
    with pytest.raises(ClusterError, match="kchaos-x-broker-1 is not running"):
        cluster.throttle_writes(node, iops=1, bps=0)
