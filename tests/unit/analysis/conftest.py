"""Shared fixtures of the analysis tests: ONE Spark session for the whole test session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """An embedded local[2] session, started once and stopped at the end, with a 1 GB
    driver: the whole analysis suite fits in it since the session keeps only the last 20
    queries' plans (harness/analysis/session.py; with Spark's default of 1000, the
    Parquet-input test's job ran out of heap once the earlier tests' jobs had run, which
    the suite had worked around with 2 GB until 2026-11-26)."""
    from kchaos.harness.analysis.session import start_session

    session = start_session("local[2]", app_name="kchaos-tests", driver_memory="1g")
    try:
        yield session
    finally:
        session.stop()
