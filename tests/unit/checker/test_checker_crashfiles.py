"""epoch-checkpoint-lost: a crash left a leader-epoch checkpoint with no entry beside a log
that kept data (KAFKA-16541), read from the crash fault's start line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checker_hist import H, counts
from ticket_hist import assert_tells_apart, crash_history, library_scenario

KIND = "epoch-checkpoint-lost"
SCENARIO = library_scenario("kafka-16541-epoch-checkpoint-os-crash.yaml")


def _lost(partition: str, size: int = 0, log_bytes: int = 4096) -> dict[str, Any]:
    return {
        "partition": partition,
        "size": size,
        "entries": 0 if size == 0 else None,
        "error": None if size == 0 else "malformed version line '\\x00\\x00'",
        "log_bytes": log_bytes,
        "head": "" if size == 0 else "\\x00\\x00",
    }


def _scan(*lost: dict[str, Any], checked: int = 7) -> dict[str, Any]:
    return {
        "checked": checked,
        "with_entries": checked - len(lost),
        "empty": sum(1 for x in lost if x["entries"] == 0),
        "unreadable": sum(1 for x in lost if x["entries"] is None),
        "lost": list(lost),
    }


def _history(detail: dict[str, Any] | None, fault: str = "hard-reboot") -> H:
    return crash_history([("f-1", fault, 1.0)], "broker-2", lasting=5.0, detail=detail)


def test_each_lost_checkpoint_is_one_reported_anomaly(tmp_path: Path) -> None:
    detail = {"epoch_checkpoints": {"broker-2": _scan(_lost("epochs-0"), _lost("epochs-3", 8))}}
    r = _history(detail).check(tmp_path)
    assert counts(r) == {KIND: 2}
    assert r.valid is True  # reported only: the other replicas may still hold the data
    first, second = r.anomalies[KIND].examples
    assert (first["node"], first["partition"], first["checkpoint_bytes"]) == (
        "broker-2",
        "epochs-0",
        0,
    )
    assert first["fault"] == "hard-reboot" and first["time_s"] > 0
    assert second["error"].startswith("malformed") and second["log_bytes"] == 4096
    assert r.stats["crash-files"]["checked"] == 7


def test_every_node_of_a_power_loss_is_read(tmp_path: Path) -> None:
    detail = {
        "epoch_checkpoints": {
            "broker-1": _scan(_lost("epochs-1")),
            "broker-3": _scan(_lost("epochs-2"), _lost("__cluster_metadata-0")),
        }
    }
    r = _history(detail, fault="power-loss").check(tmp_path)
    assert counts(r) == {KIND: 3}
    assert r.stats["crash-files"]["nodes"] == 2


def test_complete_checkpoints_are_not_flagged(tmp_path: Path) -> None:
    r = _history({"epoch_checkpoints": {"broker-2": _scan()}}).check(tmp_path)
    assert counts(r) == {}
    assert r.stats["crash-files"]["crashes"] == 1


def test_a_failed_scan_or_a_fault_without_one_judges_nothing(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    r = _history({"epoch_checkpoints": {"broker-2": {"error": "EIO"}}}).check(tmp_path / "a")
    assert counts(r) == {} and r.stats["crash-files"]["unscanned"] == 1
    (tmp_path / "b").mkdir()
    r = _history(None, fault="kill").check(tmp_path / "b")
    assert counts(r) == {} and r.stats["crash-files"]["crashes"] == 0


def _results(tmp_path: Path, lost: bool) -> dict[str, Any]:
    scan = _scan(_lost("epochs-0")) if lost else _scan()
    return _history({"epoch_checkpoints": {"broker-2": scan}}).check(tmp_path).to_json()


def test_the_library_scenario_tells_the_two_releases_apart(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    affected_run, fixed_run = _results(tmp_path / "a", True), _results(tmp_path / "b", False)
    assert_tells_apart(SCENARIO, KIND, ("3.7.0", affected_run), ("3.9.1", fixed_run))
