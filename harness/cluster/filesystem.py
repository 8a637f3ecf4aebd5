"""Each node's own ext4 filesystem on a loop device, and the host-side disk operations.

Layout per node: a sparse image file ``<run dir>/node-<id>.img`` attached to a loop
device, formatted ext4 and mounted at ``<run dir>/node-<id>/``, which is bind-mounted into
the container as Kafka's data directory. Everything here acts on host paths only.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kchaos.harness.errors import ClusterError

FIFREEZE = 0xC0045877  # _IOWR('X', 119, int)
FITHAW = 0xC0045878  # _IOWR('X', 120, int)
EXT4_IOC_SHUTDOWN = 0x8004587D  # _IOR('X', 125, __u32)
EXT4_GOING_FLAGS_NOLOGFLUSH = 2  # drop the journal's unflushed work: a power cut


def _run(
    cmd: list[str], *, check: bool = True, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClusterError(f"{' '.join(cmd)}: {exc}") from exc
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()
        raise ClusterError(f"{' '.join(cmd)} failed ({done.returncode}): {detail}")
    return done


def create_filesystem(
    image_file: Path,
    mount_path: Path,
    *,
    size_mb: int,
    label: str,
    uid: int = 1000,
    options: tuple[str, ...] = (),
) -> str:
    """Sparse file -> ext4 -> loop device -> mounted (with ``options`` after ``noatime``)
    and owned by ``uid``; the loop device.

    On failure whatever was made is undone before the error propagates.
    """
    image_file.parent.mkdir(parents=True, exist_ok=True)
    with open(image_file, "wb") as fh:
        fh.truncate(size_mb * 1024 * 1024)
    # -m 0: no blocks reserved for root, so a full disk is full for every user.
    _run(["mkfs.ext4", "-q", "-F", "-m", "0", "-L", label, "-E", "nodiscard", str(image_file)])
    loop = _run(["losetup", "--find", "--show", str(image_file)]).stdout.strip()
    try:
        mount_path.mkdir(parents=True, exist_ok=True)
        mount(loop, mount_path, options)
        # Kafka reads every sub-directory of a log dir as a partition; drop lost+found.
        lost = mount_path / "lost+found"
        if lost.is_dir():
            lost.rmdir()
        os.chown(mount_path, uid, uid)
        os.chmod(mount_path, 0o775)
    except BaseException:
        if is_mounted(mount_path):
            _run(["umount", str(mount_path)], check=False)
        _run(["losetup", "-d", loop], check=False)
        raise
    return loop


def mount_option_string(options: tuple[str, ...] = ()) -> str:
    """The ``-o`` argument: ``noatime`` always, then the cluster's own options in order
    (ext4 applies them left to right, so a later one wins)."""
    return ",".join(("noatime", *options))


def mount(loop_device: str, mount_path: Path, options: tuple[str, ...] = ()) -> None:
    opts = mount_option_string(options)
    _run(["mount", "-t", "ext4", "-o", opts, loop_device, str(mount_path)])


#: The kernel's list of this process's mounts (the tests point it at a file of their own).
MOUNTINFO = Path("/proc/self/mountinfo")


def super_options(mount_path: Path, mountinfo: str | None = None) -> tuple[str, ...]:
    """The filesystem's own options as the kernel reports them for ``mount_path`` (the
    super options of /proc/self/mountinfo: ``rw,noauto_da_alloc`` ...); () if not mounted."""
    return _mountinfo_options(mount_path, mountinfo)[1]


def _mountinfo_options(
    mount_path: Path, mountinfo: str | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(per-mount options, super options) of the last mount at ``mount_path`` in
    mountinfo (/proc/self/mountinfo by default); ((), ()) if not mounted."""
    if mountinfo is None:
        mountinfo = MOUNTINFO.read_text()
    target = str(mount_path).rstrip("/")
    found: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        parts = head.split()
        if not sep or len(parts) < 6 or _unescape(parts[4]) != target:
            continue
        fields = tail.split()
        supers = tuple(fields[2].split(",")) if len(fields) >= 3 else ()
        found = (tuple(parts[5].split(",")), supers)
    return found


# ext4 options the kernel does not list in mountinfo when they are in force, because they
# are its defaults: asking for one of these cannot be checked, and needs no check.
EXT4_DEFAULTS_NOT_SHOWN = frozenset(
    {"auto_da_alloc", "delalloc", "barrier", "barrier=1", "data=ordered", "commit=5"}
)


def check_mount_options(
    mount_path: Path, options: tuple[str, ...], mountinfo: str | None = None
) -> None:
    """ClusterError unless every option asked for is in force on the filesystem mounted
    at ``mount_path``, as the kernel reports it (mountinfo's per-mount and super options:
    ``noauto_da_alloc`` shows there once it took). An option the kernel ignored or
    renamed would let a scenario that needs it (KAFKA-16541's ``noauto_da_alloc``) run
    without it and pass for the wrong reason."""
    if not options:
        return
    per_mount, supers = _mountinfo_options(mount_path, mountinfo)
    shown = set(per_mount) | set(supers)
    if not shown:
        raise ClusterError(f"{mount_path} is not mounted: its mount options cannot be checked")
    missing = [o for o in options if o not in shown and o not in EXT4_DEFAULTS_NOT_SHOWN]
    if missing:
        raise ClusterError(
            f"the data filesystem at {mount_path} was mounted without "
            f"{', '.join(repr(o) for o in missing)} (cluster.data_mount_options): the kernel "
            f"reports {','.join(sorted(shown))}; does this kernel's ext4 support it?"
        )


def unmount(mount_path: Path, *, lazy_fallback: bool = False) -> None:
    done = _run(["umount", str(mount_path)], check=False)
    if done.returncode != 0:
        if lazy_fallback:
            _run(["umount", "-l", str(mount_path)])
        else:
            raise ClusterError(f"umount {mount_path} failed: {done.stderr.strip()}")


def sync(mount_path: Path) -> None:
    """Write back every dirty page of the filesystem mounted at ``mount_path`` (syncfs)."""
    _run(["sync", "--file-system", str(mount_path)])


def _ioctl_dir(mount_path: Path, request: int, arg: int | bytes = 0) -> None:
    fd = os.open(mount_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.ioctl(fd, request, arg)
    finally:
        os.close(fd)


def freeze(mount_path: Path) -> None:
    """FIFREEZE: every writer to the filesystem blocks until :func:`thaw`. Freezing a
    filesystem that is already frozen (EBUSY) is not an error: one thaw releases it."""
    try:
        _ioctl_dir(mount_path, FIFREEZE)
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            raise ClusterError(f"freeze {mount_path}: {exc}") from exc


def thaw(mount_path: Path) -> bool:
    """FITHAW; False when the filesystem was not frozen (EINVAL, expected)."""
    try:
        _ioctl_dir(mount_path, FITHAW)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return False
        raise ClusterError(f"thaw {mount_path}: {exc}") from exc
    return True


def shutdown_nologflush(mount_path: Path) -> None:
    """EXT4_IOC_SHUTDOWN with NOLOGFLUSH: the filesystem stops at once, unwritten data is
    lost as on a power cut. Follow with unmount and mount to bring it back."""
    try:
        _ioctl_dir(mount_path, EXT4_IOC_SHUTDOWN, struct.pack("I", EXT4_GOING_FLAGS_NOLOGFLUSH))
    except OSError as exc:
        raise ClusterError(f"ext4 shutdown of {mount_path}: {exc}") from exc


def loop_backs(loop_device: str, image_file: Path) -> bool:
    """Whether ``loop_device`` is still attached to ``image_file`` (False once torn down)."""
    try:
        backing = Path(f"/sys/block/{Path(loop_device).name}/loop/backing_file").read_text()
    except OSError:
        return False
    return Path(backing.strip()) == Path(image_file)


def _unescape(field: str) -> str:
    # /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit() and i + 4 <= len(field):
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts_under(root: Path, mountinfo: str | None = None) -> list[Path]:
    """Mount points at or below ``root``, deepest first (the order to unmount them)."""
    if mountinfo is None:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    root_s = str(root).rstrip("/")
    found = []
    for line in mountinfo.splitlines():
        parts = line.split()
        if len(parts) < 5:
            continue
        point = _unescape(parts[4])
        if point == root_s or point.startswith(root_s + "/"):
            found.append(Path(point))
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def is_mounted(path: Path, mountinfo: str | None = None) -> bool:
    target = Path(str(path).rstrip("/"))
    return target in mounts_under(target, mountinfo)


@dataclass(frozen=True)
class LoopDevice:
    name: str
    back_file: str


def loop_devices(losetup_json: str | None = None) -> list[LoopDevice]:
    """Every attached loop device with its backing file (from ``losetup -J``)."""
    if losetup_json is None:
        done = _run(["losetup", "--list", "--json", "--output", "NAME,BACK-FILE"], check=False)
        losetup_json = done.stdout
    if not losetup_json.strip():
        return []
    data = json.loads(losetup_json)
    devices = []
    for entry in data.get("loopdevices", []):
        back = (entry.get("back-file") or "").strip()
        # A deleted backing file is shown as "<path> (deleted)".
        if back.endswith(" (deleted)"):
            back = back[: -len(" (deleted)")]
        devices.append(LoopDevice(name=entry.get("name", ""), back_file=back))
    return devices


def loop_devices_under(root: Path, losetup_json: str | None = None) -> list[LoopDevice]:
    root_s = str(root).rstrip("/") + "/"
    return [d for d in loop_devices(losetup_json) if d.back_file.startswith(root_s)]


def detach(loop_device: str) -> None:
    _run(["losetup", "-d", loop_device])
