""".ci/nightly-shards: the nightly merge job's downloaded shard artifacts, each shard's
newest attempt, where `kchaos merge` reads them."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "nightly-shards"


def _artifact(downloads: Path, name: str, attempt_mark: str) -> None:
    art = downloads / name
    (art / "smoke").mkdir(parents=True)
    (art / "shard.json").write_text(attempt_mark)


def _arrange(downloads: Path, runs: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), str(downloads), str(runs)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_each_shard_takes_its_newest_attempt(tmp_path: Path) -> None:
    downloads, runs = tmp_path / "downloads", tmp_path / "runs"
    _artifact(downloads, "kchaos-shard-1-57-1", "1/1")
    _artifact(downloads, "kchaos-shard-2-57-1", "2/1")  # failed, then re-run twice
    _artifact(downloads, "kchaos-shard-2-57-3", "2/3")
    _artifact(downloads, "kchaos-shard-2-57-2", "2/2")
    _artifact(downloads, "kchaos-shard-10-57-1", "10/1")  # sorts after 2 as a number
    done = _arrange(downloads, runs)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in runs.iterdir()) == ["shard-1", "shard-10", "shard-2"]
    assert (runs / "shard-1" / "shard.json").read_text() == "1/1"
    assert (runs / "shard-2" / "shard.json").read_text() == "2/3"
    assert (runs / "shard-10" / "smoke").is_dir()
    assert done.stdout.splitlines()[1].startswith("shard 2: attempt 3 (kchaos-shard-2-57-3)")
    # the older attempts stay where they were downloaded
    assert sorted(p.name for p in downloads.iterdir()) == [
        "kchaos-shard-2-57-1",
        "kchaos-shard-2-57-2",
    ]


def test_other_directories_are_named_and_left_alone(tmp_path: Path) -> None:
    downloads, runs = tmp_path / "downloads", tmp_path / "runs"
    _artifact(downloads, "kchaos-shard-1-57-1", "1/1")
    for other in ("kchaos-nightly-57-1", "kchaos-shard-0-57-1", "kchaos-shard-x-57-1"):
        _artifact(downloads, other, "no")
    done = _arrange(downloads, runs)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in runs.iterdir()] == ["shard-1"]
    for other in ("kchaos-nightly-57-1", "kchaos-shard-0-57-1", "kchaos-shard-x-57-1"):
        assert f"skipped {other}" in done.stderr
        assert (downloads / other).is_dir()


def test_no_shard_artifact_is_an_error(tmp_path: Path) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    done = _arrange(downloads, tmp_path / "runs")
    assert done.returncode == 1
    assert "no shard artifact" in done.stderr
    # a download step that found nothing may not even have made the directory
    assert _arrange(tmp_path / "absent", tmp_path / "runs").returncode == 1


def test_an_existing_shard_directory_is_not_overwritten(tmp_path: Path) -> None:
    downloads, runs = tmp_path / "downloads", tmp_path / "runs"
    _artifact(downloads, "kchaos-shard-1-57-1", "new")
    (runs / "shard-1").mkdir(parents=True)
    (runs / "shard-1" / "shard.json").write_text("old")
    done = _arrange(downloads, runs)
    assert done.returncode == 3
    assert "exists already" in done.stderr
    assert (runs / "shard-1" / "shard.json").read_text() == "old"
    assert (downloads / "kchaos-shard-1-57-1").is_dir()


def test_usage(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert ".ci/nightly-shards DOWNLOAD_DIR RUNS_DIR" in done.stderr
