"""Host-side operations on a node's own ext4 filesystem (at ``NodeHandle.mount_path``).

Freezing, thawing, shutting down and remounting a node's data filesystem are operations on
the host mount, not on Docker. Where the cluster offers them (``kchaos.harness.cluster.Cluster``
has ``freeze_fs``, ``thaw_fs``, ``shutdown_fs``, ``remount_fs``, ``is_mounted``; they are
not part of the ClusterHandle protocol), we use its methods; otherwise we do them here
with ioctls and mount(8).

Kernel facts used (checked on the test machine):

* FIFREEZE blocks every writer in uninterruptible sleep until FITHAW; FITHAW on a
  filesystem that is not frozen fails with EINVAL, which is how a heal with no memory
  tells whether it thawed something.
* EXT4_IOC_SHUTDOWN (0x8004587D) with EXT4_GOING_FLAGS_NOLOGFLUSH (2) stops the filesystem
  at once, discarding dirty pages and the unflushed journal; after umount + mount only what
  was written back (or fsynced) is there. A shut-down filesystem still lists directories
  from cache but cannot create a file (EIO): that is how a heal recognises it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kchaos.harness.cluster.api import ClusterHandle, NodeHandle
from kchaos.harness.errors import FaultError, HealError

FIFREEZE = 0xC0045877
FITHAW = 0xC0045878
EXT4_IOC_SHUTDOWN = 0x8004587D
EXT4_GOING_FLAGS_NOLOGFLUSH = 2
FILL_PREFIX = "kchaos-diskfill-"
PROBE_NAME = ".kchaos-probe"


def _own(cluster: ClusterHandle, *methods: str) -> Callable[[NodeHandle], Any] | None:
    """The cluster's own method (the first of these names it has), if any."""
    for method in methods:
        fn = getattr(cluster, method, None)
        if callable(fn):
            return fn
    return None


def _ioctl_dir(path: Path, request: int, arg: int | bytes = 0) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.ioctl(fd, request, arg)
    finally:
        os.close(fd)


def is_mounted(cluster: ClusterHandle, node: NodeHandle) -> bool:
    own = _own(cluster, "is_mounted")
    if own is not None:
        return bool(own(node))
    return mount_entry(node.mount_path) is not None


def mount_entry(path: Path) -> tuple[str, str, str] | None:
    """(fstype, source, options) of the mount at exactly ``path``, from mountinfo."""
    target = str(path)
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return None
    found = None
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) >= 6 and fields[4].replace("\\040", " ") == target:
            fstype, source, super_opts = (right.split() + ["", "", ""])[:3]
            opts = [o for o in fields[5].split(",") if o not in ("rw", "ro")]
            opts += [o for o in super_opts.split(",") if o not in ("rw", "ro") and o not in opts]
            found = (fstype, source, ",".join(opts))
    return found  # the last one wins: it is the mount on top


def freeze(cluster: ClusterHandle, node: NodeHandle) -> None:
    own = _own(cluster, "freeze_fs", "freeze")
    if own is not None:
        try:
            own(node)
        except Exception as exc:
            raise FaultError(f"{node.name}: freeze {node.mount_path}: {exc}") from exc
        return
    if not is_mounted(cluster, node):
        raise FaultError(f"{node.name}: {node.mount_path} is not mounted")
    try:
        _ioctl_dir(node.mount_path, FIFREEZE)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            return  # already frozen (another fault); thaw will release it
        raise FaultError(f"{node.name}: freeze {node.mount_path}: {exc}") from exc


def thaw(cluster: ClusterHandle, node: NodeHandle) -> bool:
    """Thaw the node's filesystem; True when it was frozen."""
    if not is_mounted(cluster, node):
        return False
    own = _own(cluster, "thaw_fs", "thaw")
    if own is not None:
        return bool(own(node))
    try:
        _ioctl_dir(node.mount_path, FITHAW)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return False
        raise HealError(f"{node.name}: thaw {node.mount_path}: {exc}") from exc
    return True


def shutdown(cluster: ClusterHandle, node: NodeHandle) -> None:
    """EXT4_IOC_SHUTDOWN with NOLOGFLUSH: whatever is not written back is lost."""
    own = _own(cluster, "shutdown_fs")
    if own is not None:
        try:
            own(node)
        except Exception as exc:
            raise FaultError(f"{node.name}: ext4 shutdown of {node.mount_path}: {exc}") from exc
        return
    flags = struct.pack("I", EXT4_GOING_FLAGS_NOLOGFLUSH)
    try:
        _ioctl_dir(node.mount_path, EXT4_IOC_SHUTDOWN, flags)
    except OSError as exc:
        raise FaultError(f"{node.name}: ext4 shutdown of {node.mount_path}: {exc}") from exc


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0:
        raise HealError(f"{what}: {' '.join(cmd)}: {proc.stderr.strip() or proc.returncode}")


def loop_backs_image(node: NodeHandle) -> bool:
    """Whether the node's loop device is still attached to its image file."""
    dev = Path(node.loop_device).name
    try:
        backing = Path(f"/sys/block/{dev}/loop/backing_file").read_text().strip()
    except OSError:
        return False
    return Path(backing) == Path(node.image_file)


def remount(cluster: ClusterHandle, node: NodeHandle, options: str | None = None) -> None:
    """Unmount (if mounted) and mount the node's loop device again, same options."""
    own = _own(cluster, "remount_fs")
    if own is not None and loop_backs_image(node):
        try:
            own(node)
        except Exception as exc:
            raise HealError(f"{node.name}: remount {node.mount_path}: {exc}") from exc
        return
    unmount_own, mount_own = _own(cluster, "unmount_fs"), _own(cluster, "mount_fs")
    if unmount_own is not None and mount_own is not None:
        try:
            if is_mounted(cluster, node):
                unmount_own(node)
            if not loop_backs_image(node):
                raise HealError(f"{node.loop_device} no longer backs {node.image_file}")
            mount_own(node)
        except Exception as exc:
            raise HealError(f"{node.name}: remount {node.mount_path}: {exc}") from exc
        return
    entry = mount_entry(node.mount_path)
    fstype = "ext4"
    if entry is not None:
        fstype = entry[0] or "ext4"
        options = options if options is not None else entry[2]
        _run(["umount", str(node.mount_path)], f"{node.name}: umount")
    if not loop_backs_image(node):
        raise HealError(f"{node.name}: {node.loop_device} no longer backs {node.image_file}")
    base = ["mount", "-t", fstype]
    try:
        _run(
            [*base, *(["-o", options] if options else []), node.loop_device, str(node.mount_path)],
            f"{node.name}: mount",
        )
    except HealError:
        if not options:
            raise
        _run([*base, node.loop_device, str(node.mount_path)], f"{node.name}: mount")


def is_healthy(cluster: ClusterHandle, node: NodeHandle) -> bool:
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


def fill_files(cluster: ClusterHandle, node: NodeHandle) -> list[Path]:
    if not is_mounted(cluster, node):
        return []
    try:
        return sorted(node.mount_path.glob(FILL_PREFIX + "*"))
    except OSError:
        return []


def unfill(cluster: ClusterHandle, node: NodeHandle, fault_id: str | None = None) -> list[Path]:
    """Delete this fault's fill file (or every kchaos fill file); returns what was deleted."""
    removed = []
    for path in fill_files(cluster, node):
        if fault_id is None or path.name == f"{FILL_PREFIX}{fault_id}":
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed
