from pathlib import Path

import pytest

from kchaos.reports.sample import LOST, VALID, make_run


@pytest.fixture
def lost_run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run-lost", results=LOST)


@pytest.fixture
def valid_run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run-valid", results=VALID)
