"""One run: scenario -> run dir -> cluster -> workload + nemesis -> heal -> drain ->
teardown -> check -> reports -> history.parquet.

Every exit path (normal end, an error, Ctrl-C, SIGTERM) stops the nemesis (which heals
what it started), runs ``heal_everything`` once more, closes the history (so every
complete line is on disk) and removes the cluster; run.json records how the run ended.
A SIGKILL of the harness cannot be caught: ``kchaos cleanup`` removes what it left.

run.json is written twice: once the run has started (cluster up, features read, history
open, schedule resolved) and once in the ``finally`` path below, before the checker and
the reports read it; in between the run's facts gather in memory
(:mod:`kchaos.harness.run.record` has the order).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from rich.console import Console

from kchaos.harness.errors import ConfigError, KchaosError, RunInterrupted
from kchaos.harness.labels import new_run_id
from kchaos.harness.paths import runs_dir
from kchaos.harness.run import record, reread
from kchaos.harness.run.context import RunContext
from kchaos.harness.run.progress import RunProgress
from kchaos.harness.run.topics import await_full_isr, create_topics
from kchaos.harness.rundir.history_writer import HistorySink
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.rundir.scenario_model import Scenario
from kchaos.harness.scenario.plan import image_source, plan_of

if TYPE_CHECKING:
    from kchaos.harness.images import ImageSet
    from kchaos.reports.build import RunReport

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunResult:
    run_id: str
    run_dir: Path
    exit_code: int  # 0 as expected, 1 not, 2 unknown, 5 not judged, 6 not exercised (rundir.expect)
    summary: dict[str, Any]
    paths: dict[str, str]
    report: RunReport | None = None


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises RunInterrupted in the main thread, so finally blocks run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise RunInterrupted("terminated (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def resolve_run_dir(out: Path | None, run_id: str) -> Path:
    """``--out DIR`` is the run directory itself; by default runs/RUN_ID."""
    path = out if out is not None else runs_dir() / run_id
    if path.exists() and any(path.iterdir()):
        raise ConfigError("output directory exists and is not empty", file=str(path))
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class _Tags:
    kafka: str
    toxiproxy: str
    kafka_version: str


def ensure_images(sc: Scenario, kafka_version: str) -> ImageSet:
    """kchaos.harness.images.ensure_images for the scenario's image source."""
    from kchaos.harness.images import ensure_images as ensure

    return ensure(kafka_version, source=image_source(sc))


class _Live:
    """What the progress line shows, read from the workload and the faults registry."""

    def __init__(self) -> None:
        self.workload: Any = None
        self.nemesis: Any = None

    def status(self) -> str:
        text = ""
        if self.workload is not None:
            counts = {"ok": 0, "fail": 0, "info": 0}
            for p in self.workload.producers:
                for key in counts:
                    counts[key] += int(p.counts.get(key, 0))
            text = f"sends ok {counts['ok']} fail {counts['fail']} info {counts['info']}"
            txn = {"ok": 0, "fail": 0, "info": 0}
            for w in getattr(self.workload, "transactional", ()):
                for key in txn:
                    txn[key] += int(w.counts.get(key, 0))
            if any(txn.values()):
                text += f"  txns ok {txn['ok']} fail {txn['fail']} info {txn['info']}"
        try:
            from kchaos.faults.base import active_faults

            active = [f"{f.name}({','.join(f.target_names)})" for f in active_faults()]
        except Exception:  # noqa: BLE001 - display only
            active = []
        return text + ("  faults: " + " ".join(active) if active else "  no fault active")


def _drive(ctx: RunContext) -> None:
    """Topics, workload, nemesis, heal, drain; the history is closed on the way out.

    With ``ctx.metrics``, the workload counts its sends there and the fault and ISR lines
    of the history update it too (MetricsSink)."""
    from kchaos.faults import clients
    from kchaos.faults.base import abort_all
    from kchaos.faults.heal import heal_everything
    from kchaos.faults.nemesis import Nemesis
    from kchaos.workloads.features import read_features
    from kchaos.workloads.metrics import MetricsSink
    from kchaos.workloads.workload import Workload

    sc, cluster, rec = ctx.scenario, ctx.cluster, ctx.record
    progress, metrics, run_dir = ctx.progress, ctx.metrics, ctx.run_dir
    with progress.phase("topics"):
        create_topics(cluster.bootstrap_servers, sc.topics)
        # history format 1.3: the feature levels the cluster finalized (transaction.version)
        rec.update(features=read_features(cluster.bootstrap_servers))
    live = _Live()
    nemesis = None
    with run_dir.history_writer() as history:
        # the wall clock of the history's time 0, to align controller.jsonl with it
        rec.update(history_start_unix_ns=time.time_ns() - history.elapsed_ns())
        plan = plan_of(sc)
        sink: HistorySink = history if metrics is None else MetricsSink(history, metrics)
        with (
            Workload.for_cluster(
                plan.workload, cluster, sink, run_dir=run_dir, metrics=metrics
            ) as workload,
            clients.provide(cluster.run_id, workload),  # client: targets find their worker
        ):
            try:
                with progress.phase("clients"):
                    workload.start()
                live.workload = workload
                if plan.schedule is not None:
                    nemesis = Nemesis(cluster, plan.schedule, sink, wait_ready=True)
                    rec.update(schedule=nemesis.schedule.to_list())
                # everything the run is defined by is known: run.json's first write
                rec.started()
                if nemesis is not None:
                    nemesis.start()
                progress.workload(sc.workload.duration, live.status, lambda: False)
                with progress.phase("stop clients"):
                    stats = workload.stop()
                rec.update(workload_stats=stats)
                with progress.phase("final heal"):
                    if nemesis is not None:
                        nemesis.stop()
                        rec.update(heal_actions=list(nemesis.heal_actions))
                    cluster.wait_ready(120.0)
                    rec.update(full_isr_wait=await_full_isr(cluster, sc))
                with progress.phase("drain"):
                    result = workload.drain()
                rec.update(drain=result)
                with progress.phase("independent reader"):
                    committed = plan.workload.transactions is not None
                    reread.collect(cluster, run_dir, rec, result, committed)
            finally:
                if nemesis is not None:
                    nemesis.stop()
                    # faults that failed to start or heal, triggers that never held
                    rec.update(nemesis_errors=nemesis.errors())
                abort_all()
                try:
                    actions = heal_everything(cluster)
                    if actions:
                        log.warning("heal after the run: %s", actions)
                except Exception as exc:  # noqa: BLE001 - teardown follows anyway
                    log.error("heal after the run failed: %s", exc)


def run_scenario(
    sc: Scenario,
    *,
    out: Path | None = None,
    console: Console | None = None,
    quiet: bool = False,
    command: list[str] | None = None,
    keep_cluster: bool = False,
    extra: dict[str, Any] | None = None,
    prometheus: bool = False,
    parallel: int = 1,
) -> RunResult:
    """Run one scenario end to end; returns the outcome (exit code by ``expect``).

    ``extra`` adds top-level keys to run.json (``replay_of``, ``shrink_of``);
    ``prometheus`` starts a Prometheus server for the run (kchaos.harness.run.prometheus);
    ``parallel``: how many runs the batch runs on this host at once (run.json ``host``)."""
    from kchaos.harness.cluster import Cluster
    from kchaos.harness.run.prometheus import observe_run
    from kchaos.reports.console import make_console

    console = console or make_console()
    progress = RunProgress(console, quiet=quiet)
    run_id = new_run_id()
    # the run's one RunDir: every phase below is handed it
    run_dir = RunDir(resolve_run_dir(out, run_id))
    plan = plan_of(sc)
    kafka_version = plan.cluster.kafka_version
    assert kafka_version is not None  # a ClusterSpec is made with the default filled in
    # in memory until the run has started (rec.started() in _drive) or has failed
    # (rec.finished() below): run.json is written at those two points only
    rec = record.RunRecord(
        run_dir.run_json,
        {
            **record.initial(sc, run_id, kafka_version, command),
            "host": record.host_share(parallel),
            **(extra or {}),
        },
    )
    progress.note(f"run [bold]{sc.name}[/] id {run_id} seed {sc.seed} Kafka {kafka_version}")
    progress.note(f"run directory: {run_dir}")
    began = time.monotonic()
    status = "error"
    error: str | None = None  # why the run did not complete
    report = None
    try:
        with sigterm_as_interrupt():
            with progress.phase("images"):
                images = ensure_images(sc, kafka_version)
            rec.update(image={"kafka": images.kafka, "toxiproxy": images.toxiproxy})
            spec = dataclasses.replace(plan.cluster, images=images, run_id=run_id)
            cluster = Cluster(spec)
            ctx = RunContext(sc, cluster, run_dir, progress, rec)
            started = False
            try:
                with progress.phase(f"cluster ({sc.cluster.brokers} brokers)"):
                    cluster.start()
                started = True
                rec.update(cluster_spec=spec.to_dict())
                with observe_run(cluster, run_dir, rec, server=prometheus) as metrics:
                    _drive(dataclasses.replace(ctx, metrics=metrics))
                status = "completed"
            finally:
                try:
                    if started:
                        _collect(ctx)
                finally:
                    if not keep_cluster:
                        with progress.phase("teardown"):
                            # the run's evidence is collected: no controlled shutdown
                            cluster.cleanup()
    except KeyboardInterrupt:
        status, error = "interrupted", "interrupted"
        raise RunInterrupted("interrupted") from None
    except RunInterrupted as exc:
        status, error = "interrupted", str(exc)
        raise
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        # run.json's final write (its only one for a run that failed before it started),
        # before the checker and the reports read it
        rec.finished(
            status,
            end=record.utc_now(),
            wall_seconds=round(time.monotonic() - began, 1),
            host=record.host_at_end(rec.data.get("host")),
            **({} if error is None else {"error": error}),
        )
        if run_dir.history.is_file():
            report = _judge(run_dir, progress, console)
    if report is None:
        raise KchaosError(f"the run left no readable history in {run_dir}")
    from kchaos.reports.console import print_run

    print_run(report.summary, report.paths, console)
    return RunResult(
        run_id, run_dir.path, report.outcome.exit_code, report.summary, report.paths, report
    )


def _collect(ctx: RunContext) -> None:
    """controller.jsonl, the nodes' logs and every replica's log (replicas.jsonl), while
    the containers still exist."""
    from kchaos.harness.run import replicas
    from kchaos.harness.run.controller_log import collect_after_run, describe

    cluster, run_dir, rec, progress = ctx.cluster, ctx.run_dir, ctx.record, ctx.progress
    topics = [t.name for t in ctx.scenario.topics]
    with progress.phase("controller log and broker logs"):
        after = collect_after_run(cluster, run_dir, rec, topics)
    progress.note(describe(after))
    with progress.phase("replica logs"):
        dumped = replicas.collect(cluster, run_dir, rec, topics)
    progress.note(replicas.describe(dumped))


def _judge(run_dir: RunDir, progress: RunProgress, console: Console) -> RunReport | None:
    """Check the history and write the reports (also for a run cut short)."""
    try:
        from kchaos.harness.checker import check_run

        with progress.phase("check"):
            check_run(run_dir)
    except Exception as exc:  # noqa: BLE001 - the reports say "no results" instead
        console.print(f"[red]check failed: {type(exc).__name__}: {exc}[/]")
    report = None
    try:
        from kchaos.reports.build import write_run_reports

        with progress.phase("reports"):
            report = write_run_reports(run_dir)
    except KchaosError as exc:
        console.print(f"[red]reports failed: {exc}[/]")
    write_history_parquet(run_dir)
    return report


def write_history_parquet(run_dir: RunDir) -> bool:
    """The run's history.parquet (:meth:`RunDir.write_history_parquet`), once the verdict
    and the reports are on disk. It never fails the run: without the copy the analysis
    reads history.jsonl, as for a run from before the copy existed. The seconds it took
    go to the log (run.json has no place for one step's time)."""
    began = time.monotonic()
    try:
        made = run_dir.write_history_parquet()
    except Exception as exc:  # noqa: BLE001 - the copy is a convenience, the run stands
        log.warning("%s not written: %s: %s", run_dir.history_parquet, type(exc).__name__, exc)
        return False
    seconds = time.monotonic() - began
    if made:
        log.info("%s written in %.2f s", run_dir.history_parquet, seconds)
    else:
        log.info("no %s (see above); the analysis reads the JSON lines", run_dir.history_parquet)
    return made
