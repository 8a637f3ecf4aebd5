"""Scenarios the tests vary, shared by the scenario tests: ``BASE``, a small scenario
written here (the bad-input and step-length tests), library scenarios with one piece of
text replaced, and the check that the loader refuses such a variant at the fault's
``target`` with file, line and field (the client and coordinator target tests).

(A module of its own, not conftest.py: test modules import from it by a unique name.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from kchaos.harness.errors import ConfigError
from kchaos.harness.scenario import library
from kchaos.harness.scenario.loader import load_scenario

# One step, a pause with a length; the bad-input tests name its lines by number.
BASE = """\
name: t1
description: A small scenario that the unit tests vary, long enough to pass.
cluster:
  brokers: 3
  server_properties:
    replica.lag.time.max.ms: 5000
topics:
  - name: t
    partitions: 2
    replication_factor: 3
    configs:
      min.insync.replicas: 2
workload:
  duration: 60s
nemesis:
  steps:
    - fault: pause
      at: 10s
      for: 5s
      target: random
"""


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
