"""The orchestration of one run (``kchaos run``) and of a suite (``kchaos suite``)."""

from kchaos.harness.errors import RunInterrupted
from kchaos.harness.run.orchestrate import RunResult, run_scenario

__all__ = ["RunInterrupted", "RunResult", "run_scenario"]
