"""The filesystem operations faults use, on a real ext4 loop filesystem of our own, through
the cluster's own methods (an unstarted Cluster: they act on host paths only): freeze
blocks writers, thaw says whether it thawed, shutdown + remount loses unsynced data and
keeps synced data, fill leaves the disk full."""

from __future__ import annotations

import errno
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kchaos.faults import hostfs
from kchaos.harness.cluster import Cluster
from kchaos.harness.cluster.api import NodeHandle

pytestmark = pytest.mark.docker  # needs root, loop devices and mount: the Docker test host


def fs_cluster() -> Any:
    """A Cluster that was never started: its filesystem methods need only the NodeHandle."""
    return Cluster()


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeHandle]:
    image, mount = tmp_path / "fs.img", tmp_path / "mnt"
    mount.mkdir()
    with open(image, "wb") as fh:
        fh.truncate(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], check=True)
    loop = subprocess.run(
        ["losetup", "--find", "--show", str(image)], check=True, capture_output=True, text=True
    ).stdout.strip()
    subprocess.run(["mount", "-t", "ext4", loop, str(mount)], check=True)
    handle = NodeHandle(1, "broker-1", ("broker",), "none", "127.0.0.1", mount, loop, image)
    try:
        yield handle
    finally:
        hostfs.thaw(fs_cluster(), handle)
        subprocess.run(["umount", str(mount)], check=False)
        subprocess.run(["losetup", "-d", loop], check=False)


def test_freeze_blocks_writer_until_thaw(node: NodeHandle) -> None:
    c = fs_cluster()
    assert hostfs.thaw(c, node) is False
    hostfs.freeze(c, node)
    done = threading.Event()

    def writer() -> None:
        (node.mount_path / "w").write_bytes(b"data")
        done.set()

    threading.Thread(target=writer, daemon=True).start()
    assert not done.wait(1.0), "write completed on a frozen filesystem"
    assert hostfs.thaw(c, node) is True
    assert done.wait(5.0)


def test_shutdown_loses_unsynced_keeps_synced(node: NodeHandle) -> None:
    c = fs_cluster()
    synced = node.mount_path / "synced"
    with open(synced, "wb") as fh:
        fh.write(b"s" * 8192)
        fh.flush()
        os.fsync(fh.fileno())
    os.sync()
    (node.mount_path / "unsynced").write_bytes(b"u" * 8192)
    hostfs.shutdown(c, node)
    assert not hostfs.is_healthy(c, node)
    hostfs.remount(c, node)
    assert hostfs.is_healthy(c, node)
    assert synced.read_bytes() == b"s" * 8192
    lost = node.mount_path / "unsynced"
    assert not lost.exists() or lost.read_bytes().strip(b"\0") == b""


def test_fill_leaves_the_disk_full_and_unfill_frees_it(node: NodeHandle) -> None:
    c = fs_cluster()
    size = hostfs.fill(node, "f-1", leave_bytes=0)
    assert size > 50 << 20
    with pytest.raises(OSError) as err:
        (node.mount_path / "more").write_bytes(b"z" * (1 << 20))
    assert err.value.errno == errno.ENOSPC
    (node.mount_path / "more").unlink(missing_ok=True)
    assert [p.name for p in hostfs.unfill(c, node)] == ["kchaos-diskfill-f-1"]
    (node.mount_path / "more").write_bytes(b"z" * (1 << 20))
