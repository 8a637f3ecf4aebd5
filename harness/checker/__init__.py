"""Checkers: verdicts from a history (format v1), without Docker or Kafka clients."""

from kchaos.harness.checker.api import CHECKERS, check_facts, check_history, check_run
from kchaos.harness.checker.model import Anomaly, CheckOutcome, Results
from kchaos.harness.rundir.anomalies import KINDS
from kchaos.harness.rundir.runjson import RunSettings

__all__ = [
    "CHECKERS",
    "KINDS",
    "Anomaly",
    "CheckOutcome",
    "Results",
    "RunSettings",
    "check_facts",
    "check_history",
    "check_run",
]
