"""Running a transactional worker in a thread, or in a process of its own.

A fault must be able to pause (SIGSTOP) or kill one transactional client without
touching the harness, so by default (``TxnSpec.process``) each transactional worker is a
child process: ``python -m kchaos.workloads.txn_process`` with its settings as JSON.

How its lines reach the one history file: the child writes each event as one JSON line
on its stdout, flushed at once; a reader thread in the harness parses each complete line
and hands it to the run's history sink (``append``), which gives it ``index`` and
``time`` (so ``time`` is when the harness received the line, within a pipe's latency of
the child writing it; a process's own lines keep their order). A line the child had not
finished when it died (no newline) is dropped. When the child exits before the harness
asked it to stop (killed by a fault, crashed), the harness records every transaction
the child had invoked but not completed as ``info`` (``error: "process-exited"``), and
starts a new child with the same process id, ``transactional.id`` and the next
transaction number (its ``txn-init`` fences the old epoch). If the harness itself dies,
the child sees its stdin close, finishes its transaction and exits; the lines it
writes after that are lost with the harness, whose history keeps every complete line
it had received.

Stop: the harness sends the child SIGCONT (a fault may have stopped it) and writes
``stop`` on its stdin; the child ends the transaction under way (committing or aborting
it as planned), closes its client and exits. A child that has not exited after
``timeout`` seconds is killed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import IO, Any

import orjson

from kchaos.harness.rundir.history_writer import HistorySink
from kchaos.workloads.clients import SendCallback, TxnProducerClient, make_consumer
from kchaos.workloads.spec import TxnSpec
from kchaos.workloads.txn import EventSink, TxnCopier, TxnProducer, TxnWorkerBase

log = logging.getLogger(__name__)

PROCESS_EXITED = "process-exited"
_RESTART_BACKOFF_S = 1.0


@dataclass(frozen=True)
class TxnWorkerConfig:
    """Everything one transactional worker needs (JSON-able: it crosses to the child)."""

    process: int
    role: str  # "producer" or "copier"
    transactional_id: str
    bootstrap_servers: str
    spec: TxnSpec
    topics: tuple[str, ...] = ()  # the producer's topics
    lib: str = "confluent-kafka"
    first: int = 0  # the first transaction number
    # lib "java": where its client containers run (java_txn.target_of)
    java: dict[str, str] | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> TxnWorkerConfig:
        data = json.loads(text)
        spec = TxnSpec.from_json(data.pop("spec"))
        data["topics"] = tuple(data["topics"])
        return cls(spec=spec, **data)


def make_worker(config: TxnWorkerConfig, sink: EventSink, stop: threading.Event) -> TxnWorkerBase:
    """The worker of ``config`` with real clients."""
    spec = config.spec
    java = _JavaClients(config) if config.lib == "java" else None
    factory = java.producer if java is not None else _confluent_factory(config)
    common: dict[str, Any] = {"stop": stop, "first": config.first}
    args = (config.process, config.transactional_id, spec, sink, factory)
    if config.role == "copier":
        assert spec.copier is not None
        group = spec.copier.group
        client_id = f"kchaos-copier{config.process}"
        if java is not None:
            # the consumer in the producer's own Java process: its group metadata goes
            # into sendOffsetsToTransaction
            consumer_factory: Callable[[], Any] = partial(
                java.consumer, group, client_id, spec.copier.max_batch
            )
        else:
            consumer_factory = partial(
                make_consumer, config.lib, config.bootstrap_servers, group_id=group,
                client_id=client_id, isolation="read_committed", extra={"log_level": "3"},
            )  # fmt: skip
        return TxnCopier(*args, consumer_factory=consumer_factory, **common)
    return TxnProducer(*args, topics=config.topics, **common)


def _confluent_factory(config: TxnWorkerConfig) -> Callable[[SendCallback], TxnProducerClient]:
    if config.lib != "confluent-kafka":
        raise ValueError(f"no transactional client for library {config.lib!r}")
    from kchaos.workloads.confluent_txn import ConfluentTxnProducer

    spec = config.spec

    def factory(on_done: SendCallback) -> TxnProducerClient:
        extra = {"log_level": "3", **spec.configs}
        return ConfluentTxnProducer(
            config.bootstrap_servers, config.transactional_id, spec.timeout_ms, on_done,
            f"kchaos-txn{config.process}", extra,
        )  # fmt: skip

    return factory


class _JavaClients:
    """Kafka's Java clients of one worker, one container per producer
    (:mod:`kchaos.workloads.java_txn`); a copier's consumer runs in the current one."""

    def __init__(self, config: TxnWorkerConfig) -> None:
        from kchaos.workloads.java_txn import producer_config, runtime_of

        if config.java is None:
            raise ValueError("client java needs where its containers run (TxnWorkerConfig.java)")
        self.config = config
        self.runtime = runtime_of(config.java)
        spec = config.spec
        self.conf = producer_config(config.bootstrap_servers, config.transactional_id,
                                    spec.timeout_ms, f"kchaos-txn{config.process}",
                                    spec.configs)  # fmt: skip
        self.made = 0
        self.current: Any = None  # the last producer made

    def producer(self, on_done: SendCallback) -> TxnProducerClient:
        from kchaos.workloads.java_txn import JavaTxnProducer

        self.made += 1
        self.current = JavaTxnProducer(
            self.runtime, self.config.process, self.conf, on_done, instance=self.made
        )
        return self.current

    def consumer(self, group: str, client_id: str, max_records: int) -> Any:
        from kchaos.workloads.java_txn import BridgeConsumer, consumer_config

        conf = consumer_config(self.config.bootstrap_servers, group, client_id, max_records)
        return BridgeConsumer(lambda: self.current, conf)


def child_command(config: TxnWorkerConfig) -> list[str]:
    """The child's command line: this module, with the worker's settings."""
    return [sys.executable, "-m", "kchaos.workloads.txn_process", config.to_json()]


class _Tracker:
    """What the harness knows of a worker from its lines: counts, open operations."""

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.counts = {"invoke": 0, "ok": 0, "fail": 0, "info": 0}
        self.open: dict[str, dict[str, Any]] = {}  # txn -> its invoke (or "init" -> invoke)
        self.next_number = 0
        self.fenced = False
        self.last_init: dict[str, Any] | None = None  # the last ``ok txn-init`` line
        # set at the first answer to a ``txn-init`` (ok, fail or info): the client is up
        self.init_answered = threading.Event()

    def append(self, event: dict[str, Any]) -> object:
        f, kind = event.get("f"), event.get("type")
        if f == "txn":
            txn = str(event.get("txn"))
            if kind == "invoke":
                self.open[txn] = event
                self.next_number = max(self.next_number, int(txn.rsplit("-", 1)[1]) + 1)
            else:
                self.open.pop(txn, None)
            if kind in self.counts:
                self.counts[str(kind)] += 1
        elif f == "txn-init":
            if kind == "invoke":
                self.open["\0init"] = event
            else:
                self.open.pop("\0init", None)
                self.init_answered.set()
                if kind == "ok":
                    self.last_init = event
        return self.sink.append(event)

    def open_transactions(self) -> list[str]:
        return [key for key in list(self.open) if key != "\0init"]

    def close_open(self, process: int, error: str) -> None:
        """``info`` for every operation a dead process left open."""
        for key, invoke in list(self.open.items()):
            if key == "\0init":
                tid = invoke.get("transactional_id")
                line = {"process": process, "type": "info", "f": "txn-init",
                        "transactional_id": tid, "error": error}  # fmt: skip
            else:
                line = {"process": process, "type": "info", "f": "txn", "txn": key, "error": error}
                self.counts["info"] += 1
            self.sink.append(line)
        self.open.clear()


class _TrackedWorker:
    """What both kinds of worker (thread, process) answer from their config and from
    the tracker of their lines."""

    config: TxnWorkerConfig
    process: int
    _tracker: _Tracker

    @property
    def counts(self) -> dict[str, int]:
        return self._tracker.counts

    @property
    def transactional_id(self) -> str:
        return self.config.transactional_id

    def open_transactions(self) -> list[str]:
        """The ``txn`` names it invoked and has not completed, as its lines say."""
        return self._tracker.open_transactions()

    def init_result(self) -> dict[str, Any] | None:
        """Its last ``ok txn-init`` line (None before one)."""
        return self._tracker.last_init

    def wait_init_answer(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the first answer to its ``txn-init``
        (ok, fail or info): its client has started. False if none came."""
        return self._tracker.init_answered.wait(timeout)

    def address(self) -> str | None:
        """Where its Kafka connections come from: its Java client container's address
        (fixed per process, :func:`~kchaos.workloads.java_txn.client_address`), None for
        librdkafka, which runs in this host's network."""
        if self.config.lib != "java" or not self.config.java:
            return None
        from kchaos.workloads.java_txn import client_address

        return client_address(self.config.java["subnet"], self.process)


class TxnThreadWorker(_TrackedWorker):
    """A transactional worker in a harness thread (``TxnSpec.process`` false)."""

    def __init__(self, config: TxnWorkerConfig, sink: HistorySink) -> None:
        self.process = config.process
        self.config = config
        self._stop = threading.Event()
        self._tracker = _Tracker(sink)
        self.worker = make_worker(config, self._tracker, self._stop)
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    @property
    def pid(self) -> int | None:
        return None

    @property
    def fenced(self) -> bool:
        """Another instance took its ``transactional.id``: it stopped for good."""
        return self.worker.fenced

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"txn-{self.process}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.worker.run()
        except BaseException as exc:
            log.exception("txn worker %s stopped on an unexpected error", self.process)
            self.error = exc

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self, timeout: float) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self.error = self.error or TimeoutError(f"txn worker {self.process} did not stop")


class TxnProcessWorker(_TrackedWorker):
    """A transactional worker in a child process, restarted when it dies unasked."""

    def __init__(
        self,
        config: TxnWorkerConfig,
        sink: HistorySink,
        *,
        log_file: Path | None = None,
        command: Callable[[TxnWorkerConfig], list[str]] | None = None,
    ) -> None:
        self.process = config.process
        self.config = config
        self._command = command or child_command
        self._tracker = _Tracker(sink)
        self._log_file = log_file  # the child's stderr, appended to (None: inherited)
        self._child: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._superseded = threading.Event()  # another worker holds its id now
        self._supervisor: threading.Thread | None = None
        self.restarts = 0
        self.error: BaseException | None = None

    @property
    def pid(self) -> int | None:
        """The child's pid now (it changes when the child is restarted)."""
        child = self._child
        return None if child is None else child.pid

    @property
    def fenced(self) -> bool:
        """Another instance took its ``transactional.id``: it stopped for good."""
        return self._tracker.fenced

    def start(self) -> None:
        self._supervisor = threading.Thread(
            target=self._supervise, name=f"txn-proc-{self.process}", daemon=True
        )
        self._supervisor.start()

    def _spawn(self) -> subprocess.Popen[bytes]:
        config = replace(self.config, first=self._tracker.next_number)
        log_file: IO[bytes] | None = None
        if self._log_file is not None:
            self._log_file.parent.mkdir(parents=True, exist_ok=True)
            log_file = open(self._log_file, "ab")  # noqa: SIM115
        try:
            return subprocess.Popen(
                self._command(config),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
                start_new_session=True,  # a Ctrl-C of the harness reaches it as "stop"
            )
        finally:
            if log_file is not None:
                log_file.close()

    def _supervise(self) -> None:
        try:
            while True:
                child = self._spawn()
                self._child = child
                assert child.stdout is not None
                for raw in child.stdout:
                    if not raw.endswith(b"\n"):
                        break  # a line the child did not finish
                    try:
                        event = orjson.loads(raw)
                    except orjson.JSONDecodeError:
                        log.warning("txn worker %s wrote a bad line: %r", self.process, raw[:200])
                        continue
                    if isinstance(event, dict) and event.get("f") == "fenced":
                        self._tracker.fenced = True
                        continue
                    self._tracker.append(event)
                code = child.wait()
                self._tracker.close_open(self.process, PROCESS_EXITED)
                if self._stopping.is_set() or self._tracker.fenced or self._superseded.is_set():
                    return
                log.warning("txn worker %s exited (%s) unasked: restarting", self.process, code)
                self.restarts += 1
                if self._stopping.wait(_RESTART_BACKOFF_S):
                    return
        except BaseException as exc:
            log.exception("txn worker %s: supervisor failed", self.process)
            self.error = exc

    def supersede(self) -> None:
        """A replacement took over its ``transactional.id``: when this child exits it is
        not restarted (a restart would initialise the id again and fence the replacement)."""
        self._superseded.set()

    def request_stop(self) -> None:
        self._stopping.set()
        child = self._child
        if child is not None and child.poll() is None:
            # a child a fault stopped (SIGSTOP) could not read "stop": continue it first
            with contextlib.suppress(OSError):
                child.send_signal(signal.SIGCONT)
        if child is not None and child.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                child.stdin.write(b"stop\n")
                child.stdin.close()

    def stop(self, timeout: float) -> None:
        self.request_stop()
        child = self._child
        if child is not None:
            try:
                child.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("txn worker %s did not stop in %.0f s: killed", self.process, timeout)
                child.kill()
                child.wait()
        if self._supervisor is not None:
            self._supervisor.join(timeout + 5)


# -------------------------------------------------------------------- the child's side
class _PipeSink:
    """One JSON line per event on stdout, flushed at once (the harness numbers them)."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._lock = threading.Lock()

    def append(self, event: dict[str, Any]) -> object:
        line = orjson.dumps(event) + b"\n"
        with self._lock:
            self._out.write(line)
            self._out.flush()
        return event


def _watch_stdin(stop: threading.Event) -> None:
    """``stop`` on stdin, or its end (the harness is gone), stops the worker."""
    for line in sys.stdin.buffer:
        if line.strip() == b"stop":
            break
    stop.set()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m kchaos.workloads.txn_process CONFIG_JSON", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    config = TxnWorkerConfig.from_json(argv[0])
    stop = threading.Event()
    threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    sink = _PipeSink(sys.stdout.buffer)
    worker = make_worker(config, sink, stop)
    started = time.monotonic()
    worker.run()
    if worker.fenced:
        sink.append({"f": "fenced"})  # tells the harness not to restart a zombie
    log.info("txn worker %s done after %.1f s: %s", config.process,
             time.monotonic() - started, worker.counts)  # fmt: skip
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # no interpreter finalisation: a fenced worker exits with the stdin reader thread
    # still blocked in a read, and finalisation then aborts on that buffer's lock
    # ("_enter_buffered_busy", exit -6 instead of 0)
    os._exit(code)
