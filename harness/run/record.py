"""run.json: written twice, once when the run has started and once when it has ended.

It carries everything that describes the run (format doc, "The run directory"): the
resolved scenario (its seed, broker and topic configs, producer and consumer configs,
checks and expectation), the Kafka version and images, wall-clock start and end and the
nemesis schedule; each fact once (:func:`initial`).

Order of operations in one run (:func:`kchaos.harness.run.orchestrate.run_scenario`):

1. :func:`initial` and the caller's extra keys (``replay_of``, ``shrink_of``) go into a
   :class:`RunRecord` in memory; nothing is written yet: the run directory holds no
   run.json while the images are made and the cluster starts.
2. Facts learned while the run starts are added in memory (:meth:`RunRecord.update`):
   the image tags, the cluster spec, the Prometheus endpoints, the cluster's finalized
   feature levels, ``history_start_unix_ns`` once the history is open, and the resolved
   nemesis schedule once the nemesis is built.
3. First write (:meth:`RunRecord.started`): right before the nemesis starts (or, without
   a nemesis, before the workload's timed phase), with status ``running``. From here on
   a reader finds every setting the checker needs (the scenario's expect and checks, the
   transaction timeout, ``history_start_unix_ns``).
4. While the run goes on and in the after-run steps (workload stats, heal actions, the
   drain, the independent reader, controller log, node logs, replica dumps, Prometheus
   series, nemesis errors) :meth:`RunRecord.update` and :func:`record_step` only add to
   the record in memory. The steps that need an earlier fact (the controller log needs
   ``history_start_unix_ns``) read it from :attr:`RunRecord.data`, not from the file.
5. Final write (:meth:`RunRecord.finished`), in the run's one ``finally`` path (completed,
   interrupted or error): status, end time, wall seconds and, for a run that did not
   complete, ``error`` (why). A run that failed before step 3 (images, cluster start,
   topics, workload start) gets this write only: one run.json saying what was attempted
   and why it failed.
6. Only then the checker (``kchaos check``'s ``check_run``) and the reports read the run
   directory, so they see the final run.json.

No other module writes a run's run.json while it runs (a unit test scans for writers).
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
from kchaos.harness.rundir.scenario_model import Scenario

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
    """A run's run.json, kept in memory and written at most twice: :meth:`started` and
    :meth:`finished` (see the module docstring for when)."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)
    #: how often the file has been written (0, 1 or 2)
    writes: int = 0

    def update(self, **fields: Any) -> None:
        """Add facts to the record, in memory only. Each value is taken as plain JSON
        data now (:func:`jsonable`), so a later change to the object passed in does not
        change what the run recorded."""
        self.data.update(jsonable(fields))

    def started(self, **fields: Any) -> None:
        """The first write: the run has started and everything it is defined by is known
        (status ``running``)."""
        self.update(**fields, status="running")
        self._write_run_json()

    def finished(self, status: str, **fields: Any) -> None:
        """The final write, from the run's ``finally`` path: ``status`` (completed,
        interrupted or error) and what the after-run steps added. A failure to write is
        logged, not raised: it must not hide the run's own outcome or stop its judging."""
        self.update(**fields, status=status)
        try:
            self._write_run_json()
        except Exception as exc:  # noqa: BLE001 - the run's own error matters more
            log.error("%s not written at the end of the run: %s", self.path, exc)

    def _write_run_json(self) -> None:
        write_run(self.path, self.data)
        self.writes += 1


def record_step(
    rec: RunRecord, key: str, what: str, step: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """Run one optional after-run step; its summary, or its error, goes to run.json[key]
    (in memory: the run's final write puts it in the file).

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
    """run.json's facts known before anything starts (kept in memory until the run has
    started). Each fact once: the resolved scenario holds the seed and every configured
    section (cluster, topics, workload with its producers, consumers and transactions,
    checks, expect); the top level adds only what the scenario does not say (the run's
    id, its resolved Kafka release, its times). Runs before 2026-11-26 also copied the
    cluster, topics, producer, consumer, transactions, checks, expect and seed to the top
    level; the reader (``rundir.runjson``) still takes either."""
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
