"""Fixtures of the image builder's unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from images_fakes import FakeTools


@pytest.fixture
def fake_tools() -> FakeTools:
    return FakeTools()


@pytest.fixture
def compose_copy(tmp_path: Path) -> Path:
    """A private copy of compose/ so tests may change inputs."""
    import shutil

    from kchaos.harness import paths

    dst = tmp_path / "compose"
    shutil.copytree(paths.COMPOSE_DIR / "kafka", dst / "kafka")
    shutil.copytree(paths.COMPOSE_DIR / "toxiproxy", dst / "toxiproxy")
    shutil.copytree(paths.COMPOSE_DIR / "kafka-notools", dst / "kafka-notools")
    return dst
