"""Checkers: verdicts from a history (format v1), without Docker or Kafka clients."""

from kchaos.harness.checker.api import CHECKERS, check_facts, check_history, check_run
from kchaos.harness.checker.config import RunConfig
from kchaos.harness.checker.model import Anomaly, CheckOutcome, Results
from kchaos.harness.rundir.anomalies import KINDS

__all__ = [
    "CHECKERS",
    "KINDS",
    "Anomaly",
    "CheckOutcome",
    "Results",
    "RunConfig",
    "check_facts",
    "check_history",
    "check_run",
]
