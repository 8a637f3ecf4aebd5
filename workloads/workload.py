"""The facade the runner uses: start every client, stop them, drain, all into one sink.

    with run_dir.history_writer() as history:  # run_dir: the run's RunDir
        with Workload.for_cluster(spec, cluster, history, run_dir=run_dir) as workload:
            workload.start()
            ...                      # faults come and go
            stats = workload.stop()  # producers flush, in-flight sends become info
            ...                      # heal every fault
            result = workload.drain()
        # leaving the block stops the monitor

Process ids: producers ``FIRST_PROCESS ..`` (1, 2, ...), consumers right after them, then the
transactional producers and the copier (``spec.transactions``); a replacement a fault
asked for (``replace_txn_client``) takes the next free id; the monitor is
``"monitor"`` and the drain ``"drain"``. With transactions the drain reads
read_committed and waits for the last stable offsets (workloads.drain).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from kchaos.harness.cluster.api import ToolHost
from kchaos.harness.errors import WorkloadError
from kchaos.harness.rundir.history_writer import HistorySink
from kchaos.harness.rundir.rundir import RunDir
from kchaos.workloads.client_log import log_to_file, stop_logging
from kchaos.workloads.clients import QUIET_LOG_LEVEL, make_consumer
from kchaos.workloads.consumer import ConsumerWorker
from kchaos.workloads.drain import DrainResult, drain
from kchaos.workloads.java_client import JavaConsumerWorker, JavaProducerWorker, JavaRuntime
from kchaos.workloads.java_txn import target_of
from kchaos.workloads.lso import ConsumerStableOffsetSource
from kchaos.workloads.metrics import HarnessMetrics
from kchaos.workloads.monitor import AdminMetadataSource, Monitor, StableOffsetSampling
from kchaos.workloads.producer import ProducerWorker, producer_factory
from kchaos.workloads.spec import FIRST_PROCESS, WorkloadSpec, validate_workload
from kchaos.workloads.txn_process import TxnProcessWorker, TxnThreadWorker, TxnWorkerConfig

log = logging.getLogger(__name__)
METRICS_PORT = 7071
# the longest start() waits for its Java and transactional clients to come up
CLIENT_START_TIMEOUT_S = 60.0
LSO_WAIT_MARGIN_S = 10.0  # beyond the transaction timeout, for the coordinator's abort


@dataclass(frozen=True)
class WorkloadStats:
    """Counts after stop(): sends by outcome, polls and records read."""

    invoked: int
    ok: int
    fail: int
    info: int
    polls: int
    records_read: int
    # transactions (format 1.2): transactions invoked and their outcomes
    txn_invoked: int = 0
    txn_ok: int = 0
    txn_fail: int = 0
    txn_info: int = 0


class Workload:
    def __init__(
        self,
        spec: WorkloadSpec,
        bootstrap_servers: str,
        sink: HistorySink,
        *,
        metrics: HarnessMetrics | None = None,
        metrics_urls: Mapping[int, str] | None = None,
        run_dir: RunDir | None = None,
        monitor: bool = True,
        metrics_port: int | None = None,
        pushgateway: str | None = None,
        run_id: str = "dev",
        java: JavaRuntime | None = None,
    ) -> None:
        validate_workload(spec)
        # harness metrics: served during the run and/or pushed at close when configured
        # (arguments, else KCHAOS_METRICS_PORT / KCHAOS_PUSHGATEWAY)
        env_port = os.environ.get("KCHAOS_METRICS_PORT")
        self.metrics_port = (
            metrics_port if metrics_port is not None else (int(env_port) if env_port else None)
        )
        self.pushgateway = pushgateway or os.environ.get("KCHAOS_PUSHGATEWAY") or None
        if metrics is None and (self.metrics_port is not None or self.pushgateway):
            metrics = HarnessMetrics(run_id)
        self.spec = spec
        self.bootstrap_servers = bootstrap_servers
        self.sink = sink
        self.metrics = metrics
        self.producers: list[Any]
        self.consumers: list[Any]
        self.transactional: list[TxnProcessWorker | TxnThreadWorker] = []
        self._txn_lock = threading.Lock()  # replacements join self.transactional live
        self.clients_up_s = 0.0  # how long start() waited for its clients to come up
        self._run_dir = run_dir
        self._java = java
        if spec.client == "java":
            if java is None:
                raise WorkloadError("client java runs in containers: use Workload.for_cluster")
            self._java_workers(java)
        else:
            self._python_workers()
        if spec.transactions is not None:
            self._txn_workers()
        self.monitor: Monitor | None = None
        if monitor:
            self.monitor = Monitor(
                lambda: AdminMetadataSource(bootstrap_servers),
                spec.topics,
                sink,
                interval=spec.monitor_interval,
                metrics_urls=metrics_urls,
                metrics_path=None if run_dir is None else run_dir.broker_metrics,
                metrics_interval=spec.metrics_interval,
                stable_offsets=self._stable_offset_sampling(),
            )
        self._started = False
        self._stopped = False
        # librdkafka's `debug` log, when a client config asks for one
        self._client_log_path = None if run_dir is None else run_dir.librdkafka_log
        self._client_log: logging.Handler | None = None

    def _stable_offset_sampling(self) -> StableOffsetSampling | None:
        """The monitor's last-stable-offset samples: only in a run with transactions and
        a run directory, on the history's clock (a sink without one gets none)."""
        topics = self.spec.transactional_topics()
        clock = getattr(self.sink, "elapsed_ns", None)
        if not topics or self._run_dir is None:
            return None
        if clock is None:
            log.warning("monitor: the history sink has no clock: no stable-offset samples")
            return None
        lib, servers = _python_lib(self.spec.client), self.bootstrap_servers
        quiet = {"log_level": QUIET_LOG_LEVEL} if lib == "confluent-kafka" else None

        def consumer(isolation: str) -> Any:
            name = "kchaos-monitor-" + isolation.replace("_", "-")
            return make_consumer(
                lib, servers, group_id=None, client_id=name, extra=quiet, isolation=isolation
            )

        return StableOffsetSampling(
            source_factory=lambda: ConsumerStableOffsetSource(consumer, topics),
            writer=self._run_dir.stable_offsets_writer(),
            clock=clock,
        )

    def _python_workers(self) -> None:
        spec, sink, metrics, servers = self.spec, self.sink, self.metrics, self.bootstrap_servers
        first = FIRST_PROCESS
        self.producers = [
            ProducerWorker(
                first + i,
                spec.topics,
                spec.producers,
                sink,
                producer_factory(spec.client, servers, spec.producers, f"kchaos-p{first + i}"),
                metrics=metrics,
            )
            for i in range(spec.producers.count)
        ]
        self.consumers = [
            ConsumerWorker(
                first + spec.producers.count + i,
                spec.topics,
                cspec,
                sink,
                self._consumer_factory(cspec.group if cspec.mode == "subscribe" else None,
                                       cspec.rack, f"kchaos-c{first + spec.producers.count + i}",
                                       cspec.configs, cspec.isolation),
                metrics=metrics,
            )
            for i, cspec in enumerate(spec.consumer_workers())
        ]  # fmt: skip

    def _txn_workers(self) -> None:
        """Transactional producers, then the copier; ``transactional.id`` is the prefix
        and the process id, the same for every restart of that worker."""
        spec = self.spec
        tx = spec.transactions
        assert tx is not None
        # client java: Kafka's Java producer (kchaos.workloads.java_txn); else librdkafka
        lib, java = "confluent-kafka", None
        if spec.client == "java":
            assert self._java is not None
            lib, java = "java", target_of(self._java)
        elif spec.client != "confluent-kafka":
            raise WorkloadError(
                "transactional workers are implemented with confluent-kafka and Kafka's Java "
                f"client only (workload client {spec.client!r})"
            )
        topics = tx.producer_topics(spec.topics)
        configs = [
            TxnWorkerConfig(process, role, txn_id, self.bootstrap_servers, tx,
                            topics if role == "producer" else (), lib=lib, java=java)
            for process, role, txn_id in spec.txn_processes()
        ]  # fmt: skip
        for config in configs:
            if tx.process:
                self.transactional.append(
                    TxnProcessWorker(config, self.sink, log_file=self._txn_log(config.process))
                )
            else:
                self.transactional.append(TxnThreadWorker(config, self.sink))

    # -- the client directory of faults aimed at clients (kchaos.faults.clients) ---------
    def txn_client(self, transactional_id: str) -> TxnProcessWorker:
        """The live worker (a child process) that holds ``transactional_id`` now: the
        newest one started with it that has not been fenced. LookupError when none."""
        with self._txn_lock:
            holders = [w for w in self.transactional if w.transactional_id == transactional_id]
        if not holders:
            known = sorted({w.transactional_id for w in self.transactional})
            raise LookupError(
                f"no transactional worker uses {transactional_id!r} "
                f"(the workload's: {', '.join(known) or 'none'})"
            )
        live = [w for w in holders if not w.fenced]
        if not live:
            raise LookupError(f"every worker of {transactional_id!r} was fenced")
        worker = live[-1]
        if not isinstance(worker, TxnProcessWorker):
            raise LookupError(
                f"{transactional_id!r} runs in a thread of the harness (transactions.process "
                "false): a client fault needs it in a process of its own"
            )
        return worker

    def replace_txn_client(self, transactional_id: str) -> TxnProcessWorker:
        """Start a second instance of ``transactional_id``'s worker, with the next free
        process id (so its lines and values are its own): its ``txn-init`` fences the
        instance that held the id. WorkloadError once the workload is stopping."""
        old = self.txn_client(transactional_id)
        with self._txn_lock:
            if self._stopped or not self._started:
                raise WorkloadError("the workload is not running: no replacement started")
            process = self._next_process()
            config = dataclasses.replace(old.config, process=process, first=0)
            worker = TxnProcessWorker(config, self.sink, log_file=self._txn_log(process))
            self.transactional.append(worker)
            old.supersede()  # the old instance is the zombie: it must not come back
        log.info(
            "txn worker %s replaces %s with the same transactional.id %s",
            process, old.process, transactional_id,
        )  # fmt: skip
        worker.start()
        return worker

    def _txn_log(self, process: int | str) -> Path | None:
        """Where a transactional child process's stderr goes (None: not kept)."""
        return None if self._run_dir is None else self._run_dir.txn_log(process)

    def _next_process(self) -> int:
        """One more than every integer process id the workload uses."""
        used = [int(w.process) for w in [*self.producers, *self.consumers, *self.transactional]]
        return max([FIRST_PROCESS - 1, *used]) + 1

    def _java_workers(self, java: JavaRuntime) -> None:
        """One container per worker; producer i writes topic i mod len(topics) (the tools
        take one topic each), consumer j reads topic j mod len(topics)."""
        spec, sink, servers = self.spec, self.sink, self.bootstrap_servers
        first, topics, n = FIRST_PROCESS, spec.topics, spec.producers.count
        self.producers = [
            JavaProducerWorker(first + i, topics[i % len(topics)], spec.producers, sink, servers,
                               java, slot=i, metrics=self.metrics)
            for i in range(n)
        ]  # fmt: skip
        self.consumers = [
            JavaConsumerWorker(first + n + j, topics[j % len(topics)], cspec, sink, servers,
                               java, slot=n + j)
            for j, cspec in enumerate(spec.consumer_workers())
        ]  # fmt: skip

    @classmethod
    def for_cluster(
        cls,
        spec: WorkloadSpec,
        cluster: ToolHost,
        sink: HistorySink,
        *,
        run_dir: RunDir | None = None,
        metrics: HarnessMetrics | None = None,
        monitor: bool = True,
        metrics_port: int | None = None,
        pushgateway: str | None = None,
    ) -> Workload:
        urls = {n.node_id: f"http://{n.ip}:{METRICS_PORT}/metrics" for n in cluster.brokers}
        return cls(
            spec,
            cluster.bootstrap_servers,
            sink,
            metrics=metrics,
            metrics_urls=urls,
            run_dir=run_dir,
            monitor=monitor,
            metrics_port=metrics_port,
            pushgateway=pushgateway,
            run_id=cluster.run_id,
            java=JavaRuntime.for_cluster(cluster, run_dir) if spec.client == "java" else None,
        )

    def _consumer_factory(
        self,
        group_id: str | None,
        rack: str | None,
        client_id: str,
        extra: Mapping[str, str],
        isolation: str = "read_uncommitted",
    ) -> Any:
        lib, servers = self.spec.client, self.bootstrap_servers
        return lambda: make_consumer(
            lib, servers, group_id=group_id, rack=rack, client_id=client_id, extra=extra,
            isolation=isolation,
        )  # fmt: skip

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        """Start the monitor, then consumers, then producers, then the transactional
        workers, and wait until they are up (:meth:`_await_clients_up`)."""
        if self._started:
            raise WorkloadError("workload already started")
        self._started = True
        if self._client_log_path is not None and self.spec.client == "confluent-kafka":
            self._client_log_path.parent.mkdir(parents=True, exist_ok=True)
            self._client_log = log_to_file(self._client_log_path)
        if self.metrics is not None and self.metrics_port is not None:
            port = self.metrics.serve(self.metrics_port)
            log.info("harness metrics on :%d/metrics", port)
        if self.monitor is not None:
            self.monitor.start()
        for consumer in self.consumers:
            consumer.start()
        for consumer in self.consumers:
            consumer.ready.wait(30)
        for producer in self.producers:
            producer.start()
        for worker in self.transactional:
            worker.start()
        self.clients_up_s = self._await_clients_up(CLIENT_START_TIMEOUT_S)

    def _await_clients_up(self, timeout: float) -> float:
        """Wait, at most ``timeout`` seconds in all, until every client whose start takes
        time has started: a Java producer's tool said startup_complete, a transactional
        worker got its first ``txn-init`` answer (ok, fail or info). The workload's
        duration and the fault schedule count from the return, so a JVM's start (3-7 s
        quiet, 12-16 s on a loaded machine) is not taken from the workload. Returns the
        seconds waited; a client still not up is logged and the run goes on (its lines,
        or their absence, are the history's)."""
        began = time.monotonic()
        deadline = began + timeout
        waits: list[tuple[str, Any]] = [
            (f"producer {p.process}", p.events.started.wait)
            for p in self.producers
            if isinstance(p, JavaProducerWorker)
        ]
        waits += [(f"txn worker {w.process}", w.wait_init_answer) for w in self.transactional]
        late = [name for name, wait in waits if not wait(max(0.0, deadline - time.monotonic()))]
        waited = time.monotonic() - began
        if late:
            log.warning("not up after %.0f s: %s", waited, ", ".join(late))
        elif waits:
            log.info("%d clients up in %.1f s", len(waits), waited)
        return waited

    def stop(self) -> WorkloadStats:
        """Stop producers (flush, then in-flight sends -> info) and consumers.

        Raises WorkloadError if a worker died on an error outside Kafka's own.
        """
        if not self._stopped:
            with self._txn_lock:
                self._stopped = True  # no replacement starts after this
            for producer in [*self.producers, *self.transactional]:
                producer.request_stop()  # all stop sending at once, then each flushes
            try:
                for worker in self.transactional:  # ends its transaction, then exits
                    worker.stop(self.spec.close_timeout + 2 * self._txn_timeout_s())
                for producer in self.producers:
                    try:
                        producer.stop(self.spec.close_timeout)
                    except Exception as exc:  # a client that fails to close
                        log.exception("producer %s: stop failed", producer.process)
                        producer.error = producer.error or exc
            finally:
                for consumer in self.consumers:
                    consumer.stop()
                if self._client_log is not None:
                    stop_logging(self._client_log)
                    self._client_log = None
        errors = [p.error for p in [*self.producers, *self.transactional] if p.error is not None]
        errors += [c.error for c in self.consumers if c.error is not None]
        if errors:
            raise WorkloadError(f"{len(errors)} worker(s) failed; first: {errors[0]!r}")
        return self.stats()

    def stats(self) -> WorkloadStats:
        def total(key: str) -> int:
            return sum(p.counts[key] for p in self.producers)

        def txns(key: str) -> int:
            return sum(w.counts[key] for w in self.transactional)

        return WorkloadStats(
            invoked=total("invoke"),
            ok=total("ok"),
            fail=total("fail"),
            info=total("info"),
            polls=sum(c.polls for c in self.consumers),
            records_read=sum(c.records for c in self.consumers),
            txn_invoked=txns("invoke"),
            txn_ok=txns("ok"),
            txn_fail=txns("fail"),
            txn_info=txns("info"),
        )

    def _txn_timeout_s(self) -> float:
        tx = self.spec.transactions
        return 0.0 if tx is None else tx.timeout_ms / 1000.0

    def run(self, duration: float | None = None) -> WorkloadStats:
        """start(), sleep ``duration`` seconds (default: the spec's), stop()."""
        self.start()
        time.sleep(self.spec.duration if duration is None else duration)
        return self.stop()

    def drain(self, timeout: float | None = None) -> DrainResult:
        """Read every partition to its high watermark (call after faults are healed), for
        at most ``timeout`` seconds (default: the spec's ``drain_timeout``)."""
        lib, servers = _python_lib(self.spec.client), self.bootstrap_servers
        quiet = {"log_level": QUIET_LOG_LEVEL} if lib == "confluent-kafka" else None
        transactions = self.spec.transactions is not None
        isolation = "read_committed" if transactions else "read_uncommitted"
        return drain(
            lambda: make_consumer(
                lib, servers, group_id=None, client_id="kchaos-drain", extra=quiet,
                isolation=isolation,
            ),
            self.spec.topics,
            self.sink,
            deadline_s=self.spec.drain_timeout if timeout is None else timeout,
            metrics=self.metrics,
            hwm_factory=(
                (lambda: make_consumer(lib, servers, group_id=None, client_id="kchaos-drain-hwm",
                                       extra=quiet))
                if transactions else None
            ),
            lso_wait_s=self._txn_timeout_s() + LSO_WAIT_MARGIN_S,
        )  # fmt: skip

    def close(self) -> None:
        """Stop everything still running (idempotent; safe on every exit path)."""
        if self._started and not self._stopped:
            try:
                self.stop()
            except WorkloadError:
                log.exception("workload: a worker had failed")
        if self.monitor is not None:
            self.monitor.stop()
        if self.metrics is not None:
            self.metrics.stop_serving()
            if self.pushgateway:
                try:
                    self.metrics.push(self.pushgateway)
                except Exception as exc:  # metrics must never fail a run
                    log.warning("push to %s failed: %r", self.pushgateway, exc)

    def __enter__(self) -> Workload:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _python_lib(client: str) -> str:
    """The Python library of the harness's own reader (the drain): the run's library, or
    confluent-kafka when the workload's clients are the Java tools."""
    return "confluent-kafka" if client == "java" else client
