"""What the checkers read from run.json: :class:`RunConfig`, Kafka's defaults otherwise.

The settings and the keys they come from are defined with the run.json model, in
:mod:`kchaos.harness.rundir.runjson` (``RunSettings``, ``settings_of``); the checkers
know them by this name.
"""

from __future__ import annotations

from kchaos.harness.rundir.runjson import RunSettings as RunConfig
from kchaos.harness.rundir.runjson import acks_is_all

__all__ = ["RunConfig", "acks_is_all"]
