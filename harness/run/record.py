"""run.json: written when a run starts, rewritten as it goes, completed at its end.

It carries everything that describes the run (format doc, "The run directory"): the
resolved scenario, seed, Kafka version and images, the broker and topic configs, the
producer and consumer configs, wall-clock start and end, the nemesis schedule, and the
keys the checkers read (``producer.acks``, ``cluster.server_properties``, ``topics``,
``checks.*``) at the top level.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kchaos.harness.rundir.files import jsonable
from kchaos.harness.rundir.names import RUN_JSON
from kchaos.harness.rundir.runjson import FORMAT, write_run
from kchaos.harness.scenario.model import Scenario
from kchaos.harness.scenario.plan import producer_fields

__all__ = ["FORMAT", "RunRecord", "initial", "jsonable", "record_step", "utc_now"]


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
    scenario = sc.to_dict()
    producers = sc.workload.producers
    consumers = sc.workload.consumers
    return {
        "format": FORMAT,
        "run_id": run_id,
        "status": "starting",
        "command": command or [],
        "scenario": scenario,
        "seed": sc.seed,
        "kafka_version": kafka_version,
        "image": None,
        "start": utc_now(),
        "end": None,
        "cluster": {
            "brokers": sc.cluster.brokers,
            "controllers": sc.cluster.controllers,
            "server_properties": dict(sc.cluster.server_properties),
            "broker_properties": {str(k): dict(v) for k, v in sc.cluster.broker_properties.items()},
        },
        "topics": scenario["topics"],
        "producer": {
            "client": sc.workload.client,
            "count": producers.count,
            "acks": producers.acks,
            "rate": producers.rate,
            "configs": dict(producers.configs),
            "spec": producer_fields(producers, sc.workload.client),
        },
        "consumer": {
            "client": sc.workload.client,
            "count": consumers.count,
            "mode": consumers.mode,
            "rack": consumers.rack,
            "configs": dict(consumers.configs),
            "isolation": consumers.isolation,
        },
        "transactions": scenario["workload"].get("transactions"),
        "checks": scenario["checks"],
        "expect": scenario["expect"],
    }
