"""Shared fixtures of the analysis tests: ONE Spark session for the whole test session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """An embedded local[2] session, started once and stopped at the end, with the
    product's own 2 GB driver (1 GB until 2026-11-26: the Parquet-input test's job, 12
    runs in 4 shapes, then ran out of heap while serializing a task once the suite's
    earlier jobs had run, though it passes alone; what makes that peak was not found)."""
    from kchaos.harness.analysis.session import start_session

    session = start_session("local[2]", app_name="kchaos-tests", driver_memory="2g")
    try:
        yield session
    finally:
        session.stop()
