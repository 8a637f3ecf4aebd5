"""slow-sync on a real broker: inside its container, a buffered write to the data
directory stays fast while the same write with fsync is slow during the fault, and both
are fast again after its stop and after the stateless heal."""

from __future__ import annotations

import re

import pytest

from kchaos.faults import active_faults, heal_everything, make_fault
from kchaos.harness.cluster import Cluster, blkio
from kchaos.harness.cluster.api import NodeHandle
from kchaos.harness.cluster.config import DATA_DIR

pytestmark = pytest.mark.docker

PROBE = f"{DATA_DIR}/.kchaos-slow-sync-probe"
# 1 MiB written in 64 KiB blocks; with 1 write and 256 KiB a second allowed, its fsync
# needs about 4 s, the buffered write a few milliseconds
SIZE_ARGS = "bs=65536 count=16"
THROTTLE = {"write_iops": 1, "write_bps": 262144}
SLOW_S = 1.5  # an fsync'd MiB under the throttle takes longer than this
FAST_S = 1.0  # without it (or buffered), far less, even on a loaded host


def timed_write(cluster: Cluster, node: NodeHandle, *, sync: bool) -> float:
    """Seconds a 1 MiB dd into the broker's data directory takes, measured in the
    container (with ``conv=fsync``: the data is synced before dd exits)."""
    conv = " conv=fsync" if sync else ""
    script = (
        f"s=$(date +%s%N); dd if=/dev/zero of={PROBE} {SIZE_ARGS}{conv} 2>/dev/null || exit 7;"
        f' e=$(date +%s%N); rm -f {PROBE}; echo "ns=$((e - s))"'
    )
    code, out = cluster.exec(node, ["sh", "-c", script])
    found = re.search(r"ns=(\d+)", out)
    assert code == 0 and found, f"probe write failed ({code}): {out}"
    return int(found.group(1)) / 1e9


def assert_fast(cluster: Cluster, node: NodeHandle, when: str) -> None:
    buffered, synced = timed_write(cluster, node, sync=False), timed_write(cluster, node, sync=True)
    print(f"{when}: buffered 1 MiB {buffered:.3f} s, fsync'd {synced:.3f} s")
    assert buffered < FAST_S and synced < FAST_S, (when, buffered, synced)


def test_slow_sync_slows_fsync_not_buffered_writes(healthy_cluster: Cluster) -> None:
    c = healthy_cluster
    node = c.node(2)
    assert_fast(c, node, "before")
    f = make_fault(c, "slow-sync", "broker-2", id="f-sync", **THROTTLE)
    try:
        f.start()
        dev = blkio.device_number(node.loop_device)
        assert f.detail["throttles"]["broker-2"] == [
            f"{blkio.WRITE_IOPS} {dev} 1",
            f"{blkio.WRITE_BPS} {dev} 262144",
        ]
        buffered = timed_write(c, node, sync=False)
        synced = timed_write(c, node, sync=True)
        print(f"slow-sync {THROTTLE}: buffered 1 MiB {buffered:.3f} s, fsync'd {synced:.3f} s")
        assert buffered < FAST_S, buffered
        assert synced > SLOW_S and synced > 5 * buffered, (buffered, synced)
        # the other brokers' containers are not throttled
        assert timed_write(c, c.node(3), sync=True) < FAST_S
    finally:
        f.stop()
    assert_fast(c, node, "after stop")

    # the stateless heal finds a throttle it has no record of, and forgets the fault
    g = make_fault(c, "slow-sync", "broker-2", id="f-sync-2", **THROTTLE)
    g.start()
    assert timed_write(c, node, sync=True) > SLOW_S
    done = heal_everything(c)
    assert any("write_iops_device" in line and "broker-2" in line for line in done), done
    assert g not in active_faults() and not g.active
    assert_fast(c, node, "after heal")
    assert not any("blkio" in line for line in heal_everything(c))
