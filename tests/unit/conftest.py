"""Shared by every unit test: :func:`eventually`, the one way a unit test waits for a
background thread (never a bare ``time.sleep`` followed by an assertion)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

# How long a unit test waits for a background thread to get somewhere. A bound against a
# hang, never a timing claim: a loaded 2-core machine must pass as an idle one does.
PATIENCE_S = 10.0

Eventually = Callable[..., None]  # the fixture's type, for annotations


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
