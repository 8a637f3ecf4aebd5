from __future__ import annotations

from pathlib import Path

import pytest
from faults_fakes import FakeCluster, FakeSink, FakeToxiproxy


@pytest.fixture
def cluster(tmp_path: Path) -> FakeCluster:
    return FakeCluster(3, tmp_path)


@pytest.fixture
def sink() -> FakeSink:
    return FakeSink()


@pytest.fixture
def toxiproxy(monkeypatch: pytest.MonkeyPatch) -> type[FakeToxiproxy]:
    FakeToxiproxy.toxics = {}
    FakeToxiproxy.disabled = set()
    for mod in ("kchaos.faults.network", "kchaos.faults.partition", "kchaos.faults.heal"):
        monkeypatch.setattr(f"{mod}.Toxiproxy", FakeToxiproxy)
    return FakeToxiproxy
