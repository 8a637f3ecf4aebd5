"""Parsing of mount and loop-device tables (no root, no kernel)."""

from __future__ import annotations

import json
from pathlib import Path

from kchaos.harness.cluster.filesystem import (
    EXT4_GOING_FLAGS_NOLOGFLUSH,
    EXT4_IOC_SHUTDOWN,
    is_mounted,
    loop_devices,
    loop_devices_under,
    mounts_under,
)

MOUNTINFO = """\
22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
90 22 7:3 / /var/lib/kchaos/runs/r1/node-1 rw,noatime - ext4 /dev/loop3 rw
91 22 7:4 / /var/lib/kchaos/runs/r1/node-2 rw,noatime - ext4 /dev/loop4 rw
92 91 0:50 / /var/lib/kchaos/runs/r1/node-2/sub rw - tmpfs tmpfs rw
93 22 7:5 / /var/lib/kchaos/runs/r10/node-1 rw - ext4 /dev/loop5 rw
94 22 7:6 / /var/lib/kchaos/runs/r1/with\\040space rw - ext4 /dev/loop6 rw
"""


def test_mounts_under_a_run_deepest_first_and_not_a_sibling_run() -> None:
    found = mounts_under(Path("/var/lib/kchaos/runs/r1"), MOUNTINFO)
    assert found[0] == Path("/var/lib/kchaos/runs/r1/node-2/sub")
    assert set(found) == {
        Path("/var/lib/kchaos/runs/r1/node-1"),
        Path("/var/lib/kchaos/runs/r1/node-2"),
        Path("/var/lib/kchaos/runs/r1/node-2/sub"),
        Path("/var/lib/kchaos/runs/r1/with space"),
    }


def test_is_mounted() -> None:
    assert is_mounted(Path("/var/lib/kchaos/runs/r1/node-1/"), MOUNTINFO)
    assert not is_mounted(Path("/var/lib/kchaos/runs/r1/node-3"), MOUNTINFO)


LOSETUP = json.dumps(
    {
        "loopdevices": [
            {"name": "/dev/loop0", "back-file": "/srv/other.img"},
            {"name": "/dev/loop3", "back-file": "/var/lib/kchaos/runs/r1/node-1.img"},
            {"name": "/dev/loop4", "back-file": "/var/lib/kchaos/runs/r1/node-2.img (deleted)"},
            {"name": "/dev/loop5", "back-file": "/var/lib/kchaos/runs/r10/node-1.img"},
            {"name": "/dev/loop6", "back-file": None},
        ]
    }
)


def test_loop_devices_by_backing_file_including_deleted_ones() -> None:
    assert len(loop_devices(LOSETUP)) == 5
    under = loop_devices_under(Path("/var/lib/kchaos/runs/r1"), LOSETUP)
    assert [d.name for d in under] == ["/dev/loop3", "/dev/loop4"]
    assert under[1].back_file == "/var/lib/kchaos/runs/r1/node-2.img"
    assert loop_devices("") == []


def test_ext4_shutdown_constants() -> None:
    assert EXT4_IOC_SHUTDOWN == 0x8004587D
    assert EXT4_GOING_FLAGS_NOLOGFLUSH == 2
