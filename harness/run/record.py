"""run.json: written when a run starts, rewritten as it goes, completed at its end.

It carries everything that describes the run (format doc, "The run directory"): the
resolved scenario (its seed, broker and topic configs, producer and consumer configs,
checks and expectation), the Kafka version and images, wall-clock start and end and the
nemesis schedule; each fact once (:func:`initial`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kchaos.harness.rundir.files import jsonable
from kchaos.harness.rundir.names import RUN_JSON
from kchaos.harness.rundir.runjson import FORMAT, write_run
from kchaos.harness.scenario.model import Scenario

__all__ = [
    "FORMAT",
    "RunRecord",
    "host_at_end",
    "host_share",
    "initial",
    "jsonable",
    "record_step",
    "utc_now",
]


log = logging.getLogger(__name__)


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class RunRecord:
    path: Path
    data: dict[str, Any] = field(default_factory=dict)

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        self.write()

    def write(self) -> None:
        write_run(self.path, self.data)


def record_step(
    rec: RunRecord, key: str, what: str, step: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """Run one optional after-run step; its summary, or its error, goes to run.json[key].

    Never raises an ordinary exception: evidence collected after a run is never worth
    the run itself.
    """
    try:
        summary = step()
    except Exception as exc:  # noqa: BLE001 - recorded in run.json instead
        log.warning("%s failed: %s", what, exc)
        summary = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        rec.update(**{key: summary})
    except Exception as exc:  # noqa: BLE001
        log.warning("%s not updated with %s: %s", RUN_JSON, what, exc)
    return summary


def initial(sc: Scenario, run_id: str, kafka_version: str, command: list[str] | None) -> dict:
    """run.json as a run starts. Each fact once: the resolved scenario holds the seed and
    every configured section (cluster, topics, workload with its producers, consumers and
    transactions, checks, expect); the top level adds only what the scenario does not say
    (the run's id, its resolved Kafka release, its times). Runs before 2026-11-26 also
    copied the cluster, topics, producer, consumer, transactions, checks, expect and seed
    to the top level; the reader (``rundir.runjson``) still takes either."""
    return {
        "format": FORMAT,
        "run_id": run_id,
        "status": "starting",
        "command": command or [],
        "scenario": sc.to_dict(),
        "kafka_version": kafka_version,
        "image": None,
        "start": utc_now(),
        "end": None,
    }


def load_average() -> list[float] | None:
    """The host's 1, 5 and 15 minute load averages; None where the OS has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def host_share(parallel: int, cpus: int | None = None) -> dict[str, Any]:
    """run.json ``host`` as a run starts: the host's CPUs, how many runs the batch runs
    on it at once (``--parallel``; 1 for a lone run or a sequential batch), the CPUs that
    leaves each run, and the load average then. A verdict reached under load (a slow
    broker, a missed deadline) can so be told from one reached on a quiet host."""
    n = cpus if cpus is not None else os.cpu_count()
    return {
        "cpus": n,
        "parallel": parallel,
        "cpus_per_run": None if not n else round(n / max(parallel, 1), 2),
        "load_avg_start": load_average(),
        "load_avg_end": None,
    }


def host_at_end(host: Any) -> dict[str, Any] | None:
    """``host`` with the load average as the run ends (None: the run wrote none)."""
    if not isinstance(host, dict):
        return None
    return {**host, "load_avg_end": load_average()}
