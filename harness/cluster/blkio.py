"""Write throttles on a node's data device, in its container's cgroup-v1 blkio group.

The blkio controller of cgroup v1 limits the I/O that a group's own tasks submit to a
device (``blkio.throttle.write_iops_device``, ``...write_bps_device``: one line
``MAJ:MIN LIMIT`` per device, and ``MAJ:MIN 0`` removes the line). Buffered writes only
dirty the page cache: the kernel's writeback threads and ext4's journal thread send them
to the device later, from the root group, unthrottled. What the container's own tasks
submit is throttled: the data an ``fsync``/``fdatasync`` writes out, and O_DIRECT
writes. So a throttle on the node's loop device leaves ``write(2)`` fast and makes every
sync of the broker slow (measured on this host: a 4 KiB write + fsync 0.53 s at 2 IOPS,
10 MB of buffered writes in 10 ms).

The group of a running container is read from its PID 1's ``/proc/<pid>/cgroup`` (the
``blkio`` line), whatever Docker's cgroup driver named it. A stopped container has no
group, and a restarted one gets a new group without any throttle. Host side only; needs
root and a cgroup-v1 blkio hierarchy (a cgroup-v2-only host has none: ClusterError).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kchaos.harness.errors import ClusterError

PROC = Path("/proc")
CGROUP_ROOT = Path("/sys/fs/cgroup")
WRITE_IOPS = "blkio.throttle.write_iops_device"
WRITE_BPS = "blkio.throttle.write_bps_device"
READ_IOPS = "blkio.throttle.read_iops_device"
READ_BPS = "blkio.throttle.read_bps_device"
#: Every throttle file a heal clears (kchaos writes only the two write ones).
THROTTLE_FILES: tuple[str, ...] = (WRITE_IOPS, WRITE_BPS, READ_IOPS, READ_BPS)


@dataclass(frozen=True)
class Throttle:
    """One line of a throttle file: ``device`` (``MAJ:MIN``) limited to ``limit``."""

    file: str
    device: str
    limit: int

    def __str__(self) -> str:
        return f"{self.file} {self.device} {self.limit}"


def device_number(device: str | Path) -> str:
    """``MAJ:MIN`` of a block device node such as ``/dev/loop3``."""
    try:
        st = os.stat(device)
    except OSError as exc:
        raise ClusterError(f"block device {device}: {exc}") from exc
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def group_dir(pid: int, *, proc: Path = PROC, root: Path = CGROUP_ROOT) -> Path:
    """The blkio group directory of process ``pid`` (its ``/proc/<pid>/cgroup`` line
    whose controllers include ``blkio``, under the hierarchy mounted at ``root/blkio``)."""
    try:
        text = (proc / str(pid) / "cgroup").read_text()
    except OSError as exc:
        raise ClusterError(f"cgroups of pid {pid}: {exc}") from exc
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and "blkio" in parts[1].split(","):
            hierarchy = root / "blkio"
            if not hierarchy.is_dir():
                break
            group = hierarchy / parts[2].lstrip("/")
            if not (group / WRITE_IOPS).exists():
                raise ClusterError(f"pid {pid}: {group} has no {WRITE_IOPS}")
            return group
    raise ClusterError(
        f"pid {pid} is in no cgroup-v1 blkio group (is {root}/blkio mounted? slow-sync "
        "needs the blkio controller of cgroup v1)"
    )


def read_throttles(group: Path) -> list[Throttle]:
    """Every throttle line in the group's four throttle files (missing files: none)."""
    found = []
    for name in THROTTLE_FILES:
        try:
            text = (group / name).read_text()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ClusterError(f"read {group / name}: {exc}") from exc
        for line in text.splitlines():
            fields = line.split()
            # the kernel lists only devices with a limit; "0" means none (a plain file)
            if len(fields) == 2 and fields[1].isdigit() and int(fields[1]) > 0:
                found.append(Throttle(name, fields[0], int(fields[1])))
    return found


def _write(group: Path, name: str, device: str, limit: int) -> None:
    try:
        (group / name).write_text(f"{device} {limit}\n")
    except OSError as exc:
        raise ClusterError(f"write '{device} {limit}' to {group / name}: {exc}") from exc


def throttle_writes(group: Path, device: str, *, iops: int, bps: int) -> list[Throttle]:
    """Limit the group's writes to ``device``: ``iops`` per second and ``bps`` bytes per
    second (0 leaves that limit off, removing one set before). Returns the lines set."""
    if iops < 0 or bps < 0:
        raise ClusterError(f"write limits must be >= 0, got iops={iops} bps={bps}")
    _write(group, WRITE_IOPS, device, iops)
    _write(group, WRITE_BPS, device, bps)
    return [Throttle(n, device, v) for n, v in ((WRITE_IOPS, iops), (WRITE_BPS, bps)) if v]


def clear_throttles(group: Path, device: str | None = None) -> list[Throttle]:
    """Remove every throttle line of the group (of ``device`` only, when given);
    returns the lines removed."""
    removed = []
    for t in read_throttles(group):
        if device is None or t.device == device:
            _write(group, t.file, t.device, 0)
            removed.append(t)
    return removed
