from __future__ import annotations

from pathlib import Path

import pytest
from faults_fakes import FakeCluster, FakeSink, FakeToxiproxy


@pytest.fixture
def cluster(tmp_path: Path) -> FakeCluster:
    FakeToxiproxy.toxics = {}
    FakeToxiproxy.disabled = set()
    return FakeCluster(3, tmp_path)


@pytest.fixture
def sink() -> FakeSink:
    return FakeSink()


@pytest.fixture
def toxiproxy() -> type[FakeToxiproxy]:
    """The state of the fake Toxiproxy that FakeCluster.toxiproxy hands out."""
    FakeToxiproxy.toxics = {}
    FakeToxiproxy.disabled = set()
    return FakeToxiproxy
