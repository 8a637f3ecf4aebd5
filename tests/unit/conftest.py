"""Shared by every unit test: :func:`eventually`, the one way a unit test waits for a
background thread (never a bare ``time.sleep`` followed by an assertion), ``fake_clock``,
the one fake clock, and the longer per-test timeout of the Spark tests."""

from __future__ import annotations

import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fakeclock import FakeClock

# How long a unit test waits for a background thread to get somewhere. A bound against a
# hang, never a timing claim: a loaded 2-core machine must pass as an idle one does.
PATIENCE_S = 10.0

Eventually = Callable[..., None]  # the fixture's type, for annotations

# A Spark test starts a JVM (a session, or a standalone cluster): up to 170 s measured on
# the loaded 2-core machine. Every other unit test gets the unit phase's default
# (UNIT_TEST_TIMEOUT in .ci/unit-tests); a module's own timeout marker wins over both.
SPARK_TEST_TIMEOUT_S = 600


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("spark") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SPARK_TEST_TIMEOUT_S))


@pytest.fixture(autouse=True)
def _runs_dir_in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What a command writes under ``runs/`` by default (a batch's durations.json, a run
    without --out) goes to the test's own directory, never the checkout's."""
    monkeypatch.setenv("KCHAOS_RUNS_DIR", str(tmp_path / "runs"))


def wait_until(condition: Callable[[], bool], what: str, timeout: float = PATIENCE_S) -> None:
    """Return once ``condition()`` holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}"
        time.sleep(0.005)


@pytest.fixture
def eventually() -> Eventually:
    """``eventually(condition, what)``: see :func:`wait_until`."""
    return wait_until


@pytest.fixture
def fake_clock() -> FakeClock:
    """A :class:`FakeClock` at 0 s: pass ``fake_clock.monotonic`` and ``fake_clock.sleep``
    (or patch ``time.sleep`` with it) to the code under test."""
    return FakeClock()


# A real run directory written by `kchaos run smoke` at b45787f, main before issues 22 and
# 23 (tests/fixtures/README.md): what today's code must still check, report, analyse and
# replay.
OLD_RUN_ARCHIVE = Path(__file__).resolve().parents[1] / "fixtures" / "old-run-b45787f.tar.xz"
OLD_RUN_ID = "20261126-203730-eadc"


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    """The old run directory, unpacked afresh into this test's tmp_path."""
    with tarfile.open(OLD_RUN_ARCHIVE, "r:xz") as archive:
        archive.extractall(tmp_path, filter="data")
    run_dir = tmp_path / OLD_RUN_ID
    assert (run_dir / "run.json").is_file(), f"{OLD_RUN_ARCHIVE} holds no {OLD_RUN_ID}/"
    return run_dir
