from pathlib import Path

import pytest
from sample_runs import LOST, VALID, make_run


@pytest.fixture
def lost_run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run-lost", results=LOST)


@pytest.fixture
def valid_run(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run-valid", results=VALID)
