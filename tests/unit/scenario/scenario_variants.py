"""Library scenarios with one piece of text replaced, and the check that the loader
refuses such a variant at the fault's ``target`` with file, line and field: shared by the
target tests (client and coordinator targets).

(A module of its own, not conftest.py: test modules import from it by a unique name.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from kchaos.harness.errors import ConfigError
from kchaos.harness.scenario import library
from kchaos.harness.scenario.loader import load_scenario


def variant(tmp_path: Path, scenario: str, old: str, new: str) -> Path:
    """The library scenario ``scenario`` written to ``tmp_path`` with ``old`` (which must
    be in it) replaced by ``new``."""
    text = library.resolve(scenario).read_text()
    assert old in text
    path = tmp_path / "s.yaml"
    path.write_text(text.replace(old, new))
    return path


def assert_refused_at_target(path: Path, needle: str) -> None:
    """Loading ``path`` fails with a ConfigError that says ``needle`` and names a line and
    a ``target`` field."""
    with pytest.raises(ConfigError) as err:
        load_scenario(path)
    assert needle in str(err.value)
    assert err.value.line is not None and "target" in str(err.value.field)
