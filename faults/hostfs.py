"""A fault's view of a node's own ext4 filesystem (at ``NodeHandle.mount_path``).

Freezing, thawing, shutting down, remounting and throttling the data device are the
cluster's own operations (``NodeFilesystems.freeze_fs`` and friends, implemented once in
``kchaos.harness.cluster.filesystem`` and ``...blkio``); here they get the fault's error types
(FaultError when a fault cannot start, HealError when a heal fails). Filling the disk,
and telling whether a filesystem is healthy, are the faults' own.

A shut-down filesystem still lists directories from cache but cannot create a file (EIO):
that is how a heal recognises one.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from kchaos.harness.cluster import filesystem
from kchaos.harness.cluster.api import NodeFilesystems, NodeHandle
from kchaos.harness.errors import ClusterError, FaultError, HealError

FILL_PREFIX = "kchaos-diskfill-"
PROBE_NAME = ".kchaos-probe"


def is_mounted(cluster: NodeFilesystems, node: NodeHandle) -> bool:
    return cluster.is_mounted(node)


def freeze(cluster: NodeFilesystems, node: NodeHandle) -> None:
    if not cluster.is_mounted(node):
        raise FaultError(f"{node.name}: {node.mount_path} is not mounted")
    try:
        cluster.freeze_fs(node)
    except ClusterError as exc:
        raise FaultError(f"{node.name}: {exc}") from exc


def thaw(cluster: NodeFilesystems, node: NodeHandle) -> bool:
    """Thaw the node's filesystem; True when it was frozen."""
    if not cluster.is_mounted(node):
        return False
    try:
        return cluster.thaw_fs(node)
    except ClusterError as exc:
        raise HealError(f"{node.name}: {exc}") from exc


def shutdown(cluster: NodeFilesystems, node: NodeHandle) -> None:
    """EXT4_IOC_SHUTDOWN with NOLOGFLUSH: whatever is not written back is lost."""
    try:
        cluster.shutdown_fs(node)
    except ClusterError as exc:
        raise FaultError(f"{node.name}: {exc}") from exc


def loop_backs_image(node: NodeHandle) -> bool:
    """Whether the node's loop device is still attached to its image file."""
    return filesystem.loop_backs(node.loop_device, node.image_file)


def remount(cluster: NodeFilesystems, node: NodeHandle) -> None:
    """Unmount (if mounted) and mount the node's loop device again."""
    try:
        cluster.remount_fs(node)
    except ClusterError as exc:
        raise HealError(f"{node.name}: remount {node.mount_path}: {exc}") from exc


def throttle(cluster: NodeFilesystems, node: NodeHandle, iops: int, bps: int) -> list[str]:
    """Throttle the writes the node's container submits to its data device; the lines set."""
    try:
        return cluster.throttle_writes(node, iops=iops, bps=bps)
    except ClusterError as exc:
        raise FaultError(f"{node.name}: {exc}") from exc


def unthrottle(cluster: NodeFilesystems, node: NodeHandle) -> list[str]:
    """Remove every blkio throttle of the node's container; the lines removed."""
    try:
        return cluster.clear_throttles(node)
    except ClusterError as exc:
        raise HealError(f"{node.name}: {exc}") from exc


def is_healthy(cluster: NodeFilesystems, node: NodeHandle) -> bool:
    """Mounted and able to create a file (False on a shut-down fs). Never call on a
    frozen filesystem: thaw first."""
    if not is_mounted(cluster, node):
        return False
    probe = node.mount_path / PROBE_NAME
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY, 0o600)
    except OSError:
        return False
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return True


def fill(node: NodeHandle, fault_id: str, leave_bytes: int, max_bytes: int = 0) -> int:
    """Allocate a labelled file that leaves ``leave_bytes`` free; returns its size."""
    st = os.statvfs(node.mount_path)
    free = st.f_bavail * st.f_frsize if os.geteuid() else st.f_bfree * st.f_frsize
    size = max(0, free - leave_bytes)
    if max_bytes:
        size = min(size, max_bytes)
    path = node.mount_path / f"{FILL_PREFIX}{fault_id}"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        if size:
            # Allocate in steps, so a filesystem a few blocks short still ends up full.
            done, step = 0, 64 << 20
            while done < size and step >= 4096:
                n = min(step, size - done)
                try:
                    os.posix_fallocate(fd, done, n)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    step //= 2
                    continue
                done += n
            size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    return size


def fill_files(cluster: NodeFilesystems, node: NodeHandle) -> list[Path]:
    if not is_mounted(cluster, node):
        return []
    try:
        return sorted(node.mount_path.glob(FILL_PREFIX + "*"))
    except OSError:
        return []


def unfill(cluster: NodeFilesystems, node: NodeHandle, fault_id: str | None = None) -> list[Path]:
    """Delete this fault's fill file (or every kchaos fill file); returns what was deleted."""
    removed = []
    for path in fill_files(cluster, node):
        if fault_id is None or path.name == f"{FILL_PREFIX}{fault_id}":
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed
