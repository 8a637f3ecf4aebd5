"""Shared fixtures of the analysis tests: ONE Spark session for the whole test session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """An embedded local[2] session, started once and stopped at the end."""
    from kchaos.harness.analysis.session import start_session

    session = start_session("local[2]", app_name="kchaos-tests", driver_memory="1g")
    try:
        yield session
    finally:
        session.stop()
