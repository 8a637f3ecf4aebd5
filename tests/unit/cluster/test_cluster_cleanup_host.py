"""Cleanup on host-side leftovers only (no Docker, no mounts): a temporary state root."""

from __future__ import annotations

from pathlib import Path

import pytest

from kchaos.harness.cluster.cleanup import check_run_id, cleanup_run, find_runs
from kchaos.harness.errors import ConfigError


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KCHAOS_STATE_DIR", str(tmp_path))
    return tmp_path


def test_run_ids_cannot_escape_the_state_root() -> None:
    for bad in ["..", "a/b", "", "-x", "../../etc"]:
        with pytest.raises(ConfigError):
            check_run_id(bad)
    assert check_run_id("20261121-010203-a1b2") == "20261121-010203-a1b2"


def test_a_run_directory_is_found_and_deleted(root: Path) -> None:
    run = root / "runs" / "r1"
    (run / "node-1").mkdir(parents=True)
    (run / "cluster.json").write_text("{}")
    (root / "runs" / "r2").mkdir()
    outside = root / "keep-me"
    outside.mkdir()
    assert find_runs(None) == ["r1", "r2"]
    dry = cleanup_run("r1", client=None, dry_run=True)
    assert dry == [f"would delete {run}"]
    assert run.exists()
    done = cleanup_run("r1", client=None)
    assert done == [f"deleted {run}"]
    assert not run.exists()
    assert (root / "runs" / "r2").exists() and outside.exists()
    assert cleanup_run("r1", client=None) == []


def test_the_healer_handed_in_heals_the_attached_run_before_its_removal(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cluster layer does not know the faults: it calls the healer it is given (on the
    attached cluster), and none when it is given none or only looks (dry run)."""
    import kchaos.harness.cluster.cluster as cluster_module

    run = root / "runs" / "r1"
    run.mkdir(parents=True)
    attached = object()
    monkeypatch.setattr(cluster_module, "attach", lambda run_id: attached)
    healed: list[object] = []

    def healer(cluster: object) -> list[str]:
        healed.append(cluster)
        assert run.exists(), "faults are healed before anything is removed"
        return ["healed latency on node-1"]

    assert cleanup_run("r1", client=None, healer=healer, dry_run=True) == [f"would delete {run}"]
    assert healed == []
    assert cleanup_run("r1", client=None, healer=healer) == [
        "healed latency on node-1",
        f"deleted {run}",
    ]
    assert healed == [attached]


def test_a_failing_healer_is_reported_and_the_run_still_removed(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kchaos.harness.cluster.cluster as cluster_module

    run = root / "runs" / "r1"
    run.mkdir(parents=True)
    monkeypatch.setattr(cluster_module, "attach", lambda run_id: object())

    def heal_everything(cluster: object) -> list[str]:
        raise RuntimeError("toxiproxy gone")

    done = cleanup_run("r1", client=None, healer=heal_everything)
    # named after the healer: `kchaos cleanup` prints what it printed before issue 23
    assert done == ["heal_everything failed: toxiproxy gone", f"deleted {run}"]
    assert not run.exists()
