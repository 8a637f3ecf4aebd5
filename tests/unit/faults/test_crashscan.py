"""What a crash left of the leader-epoch checkpoints, read from a node's data directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_fakes import FakeCluster

from kchaos.faults import make_fault
from kchaos.faults.crashscan import CHECKPOINT, after_restart, count_entries, scan, summary


@pytest.mark.parametrize(
    ("data", "entries"),
    [
        (b"", 0),  # Kafka reads an empty file as no entries
        (b"0\n", 0),
        (b"0\n0\n", 0),
        (b"0\n2\n0 0\n3 1200\n", 2),
    ],
)
def test_entries_as_kafka_counts_them(data: bytes, entries: int) -> None:
    assert count_entries(data) == entries


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x00\x00\x00\x00", "malformed version line"),
        (b"1\n0\n", "malformed version line"),
        (b"0\nx\n", "malformed count line"),
        (b"0\n1\n0\n", "malformed entry line"),
        (b"0\n2\n0 0\n", "expected 2 entries, found 1"),
        (b"0\n1\n\xff 0\n", "not UTF-8"),
    ],
)
def test_what_kafka_would_refuse_says_why(data: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        count_entries(data)


def _partition(root: Path, name: str, checkpoint: bytes | None, log: bytes = b"") -> None:
    d = root / name
    d.mkdir()
    if checkpoint is not None:
        (d / CHECKPOINT).write_bytes(checkpoint)
    (d / "00000000000000000000.log").write_bytes(log)
    (d / "00000000000000000000.index").write_bytes(b"\x00" * 64)  # not counted


def test_scan_finds_the_lost_ones_only(tmp_path: Path) -> None:
    _partition(tmp_path, "epochs-0", b"", log=b"x" * 100)  # lost: data but no entry
    _partition(tmp_path, "epochs-1", b"0\n1\n0 0\n", log=b"x" * 100)  # fine
    _partition(tmp_path, "epochs-2", b"")  # no data yet: empty is right
    _partition(tmp_path, "epochs-3", b"\x00" * 9, log=b"x")  # unreadable, data kept
    _partition(tmp_path, "epochs-4", None, log=b"x")  # no checkpoint at all: not read
    _partition(tmp_path, "epochs-5.abc-delete", b"", log=b"x")  # being deleted
    (tmp_path / "meta.properties").write_text("node.id=2\n")
    files = scan(tmp_path)
    assert [f.partition for f in files] == ["epochs-0", "epochs-1", "epochs-2", "epochs-3"]
    assert [f.partition for f in files if f.lost] == ["epochs-0", "epochs-3"]
    out = summary(files)
    assert (out["checked"], out["with_entries"], out["empty"], out["unreadable"]) == (4, 1, 2, 1)
    lost = {x["partition"]: x for x in out["lost"]}
    assert lost["epochs-0"]["size"] == 0 and lost["epochs-0"]["log_bytes"] == 100
    assert lost["epochs-3"]["head"] == "\\x00" * 9
    assert lost["epochs-3"]["error"].startswith("malformed version line")


def test_a_hard_reboot_records_the_checkpoints_its_remount_found(cluster: FakeCluster) -> None:
    node = cluster.node("broker-2")
    _partition(node.mount_path, "epochs-0", b"", log=b"x" * 10)
    _partition(node.mount_path, "epochs-1", b"0\n1\n0 0\n", log=b"x" * 10)
    f = make_fault(cluster, "hard-reboot", "broker-2", wait=False)
    f.start()
    try:
        found = f.detail["epoch_checkpoints"]
        assert list(found) == ["broker-2"]
        assert found["broker-2"]["checked"] == 2
        assert [x["partition"] for x in found["broker-2"]["lost"]] == ["epochs-0"]
        assert found["broker-2"]["kept"] == {"epochs-1": [[0, 0]]}
        # read after the remount, not before
        assert cluster.names("remount") and cluster.names("shutdown")
    finally:
        f.stop()


def test_a_power_loss_records_every_node(cluster: FakeCluster) -> None:
    for name in ("broker-1", "broker-3"):
        _partition(cluster.node(name).mount_path, "epochs-2", b"", log=b"x")
    f = make_fault(cluster, "power-loss", "all", wait=False)
    f.start()
    try:
        found = f.detail["epoch_checkpoints"]
        assert sorted(found) == sorted(n.name for n in cluster.nodes)
        assert {n: len(s["lost"]) for n, s in found.items()} == {
            "broker-1": 1,
            "broker-2": 0,
            "broker-3": 1,
        }
    finally:
        f.stop()


def test_after_restart_shows_where_the_rebuilt_epochs_begin(tmp_path: Path) -> None:
    _partition(tmp_path, "epochs-0", b"0\n1\n0 1858\n", log=b"x")
    (tmp_path / "epochs-0" / "00000000000000001250.log").write_bytes(b"x")
    (tmp_path / "epochs-0" / "00000000000000000000.log").unlink()
    _partition(tmp_path, "epochs-1", b"\x00\x00", log=b"x")
    after = after_restart(tmp_path, ["epochs-0", "epochs-1", "epochs-9"])
    assert after["epochs-0"] == {"entries": [[0, 1858]], "first_segment": 1250}
    assert after["epochs-1"]["entries"]["error"].startswith("malformed version line")
    assert "error" in after["epochs-9"]


@pytest.mark.parametrize(("fault", "target"), [("hard-reboot", "broker-2"), ("power-loss", "all")])
def test_a_stop_records_the_lost_ones_after_the_restart(
    cluster: FakeCluster, fault: str, target: str
) -> None:
    # both crashes that lose the page cache; only broker-2 lost a checkpoint
    node = cluster.node("broker-2")
    _partition(node.mount_path, "epochs-0", b"", log=b"x" * 10)
    f = make_fault(cluster, fault, target)
    f.start()
    # the restarted broker rebuilds the file from the segment it recovered
    (node.mount_path / "epochs-0" / CHECKPOINT).write_bytes(b"0\n1\n0 7\n")
    f.stop()
    assert f.detail["epoch_checkpoints_after_restart"] == {
        "broker-2": {"epochs-0": {"entries": [[0, 7]], "first_segment": 0}}
    }
