"""Producer workers: each sends unique values and records every send in the history.

Per send: an ``invoke`` line before the record is handed to the client, then exactly one
completion -- ``ok`` with partition and offset, ``fail`` (certainly not written) or
``info`` (unknown) as decided by :mod:`kchaos.workloads.classify`. On stop, the worker flushes
for ``close_timeout`` seconds; sends still unacknowledged then complete as ``info``
(``error: "closed-in-flight"``) and any later callback for them is ignored.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kchaos.harness.errors import ClientFatal, SendRefused
from kchaos.harness.rundir.history_writer import HistorySink, LineTemplate, json_text, line_template
from kchaos.workloads.classify import classify
from kchaos.workloads.clients import (
    ProducerClient,
    SendCallback,
    SendResult,
    make_producer,
)
from kchaos.workloads.metrics import HarnessMetrics
from kchaos.workloads.spec import ProducerConfig, producer_settings
from kchaos.workloads.values import RateLimiter, padder

log = logging.getLogger(__name__)

ProducerFactory = Callable[[SendCallback], ProducerClient]
CLOSED_IN_FLIGHT = "closed-in-flight"
_QUEUE_FULL_BACKOFF_S = 0.01
_POLL_EVERY = 32  # serve delivery callbacks every this many sends
_clock_ns = time.monotonic_ns


class ProducerWorker:
    """One producing process (its own client, thread and value sequence)."""

    def __init__(
        self,
        process: int,
        topics: Sequence[str],
        spec: ProducerConfig,
        sink: HistorySink,
        factory: ProducerFactory,
        *,
        metrics: HarnessMetrics | None = None,
        limit: int | None = None,
    ) -> None:
        if not topics:
            raise ValueError("a producer needs at least one topic")
        self.process = process
        self.topics = tuple(topics)
        self.spec = spec
        self.sink = sink
        self.metrics = metrics
        self._factory = factory
        self._limit = limit  # stop sending after this many values (benchmarks)
        self._rate = RateLimiter(spec.rate or None)  # rate 0: as fast as possible
        self._single_attempt = producer_settings(spec).single_attempt
        self._lock = threading.Lock()
        # value: (topic, monotonic ns at invoke, its number n: the value is "process-n")
        self._inflight: dict[str, tuple[str, int, int]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client: ProducerClient | None = None
        self.counts = {"invoke": 0, "ok": 0, "fail": 0, "info": 0}
        self._oks = {  # records an ok line, per topic: (partition, offset, value number)
            topic: sink.recorder(_ok_template(process, topic)) for topic in self.topics
        }
        self.error: BaseException | None = None
        self.fatal: str | None = None  # the client's fatal error, when it had one

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self._client = self._factory(self._done)
        self._thread = threading.Thread(
            target=self._run, name=f"producer-{self.process}", daemon=True
        )
        self._thread.start()

    def request_stop(self) -> None:
        """Stop sending new values (returns at once; ``stop`` finishes the job)."""
        self._stop.set()

    def stop(self, close_timeout: float = 10.0) -> None:
        """Stop sending, wait up to ``close_timeout`` for acks, record the rest as info."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        client = self._client
        if client is None:
            return
        deadline = time.monotonic() + close_timeout
        while self.in_flight() and time.monotonic() < deadline and self.fatal is None:
            try:
                client.flush(min(0.5, max(0.0, deadline - time.monotonic())))
            except ClientFatal as exc:
                self.fatal = self.fatal or str(exc)
        with self._lock:
            left, self._inflight = self._inflight, {}
        for value, (topic, started, _) in left.items():
            event = {"process": self.process, "type": "info", "f": "send", "topic": topic,
                     "value": value, "error": CLOSED_IN_FLIGHT}  # fmt: skip
            self._finish(event, "info", started)
        client.close()
        self._client = None

    def join(self, timeout: float | None = None) -> None:
        """Wait for the send loop to end (with ``limit``: all values handed to the client)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def in_flight(self) -> int:
        with self._lock:
            return len(self._inflight)

    # -- the send loop (hot path: kept flat on purpose, see docs/workloads.md) --------
    def _run(self) -> None:
        client = self._client
        assert client is not None
        try:
            self._loop(client)
        except ClientFatal as exc:  # Kafka's doing, not the harness's: sending ends here
            log.warning("producer %s can send no more: %s", self.process, exc)
            self.fatal = str(exc)
        except BaseException as exc:  # recorded, surfaced by Workload.stop()
            log.exception("producer %s stopped on an unexpected error", self.process)
            self.error = exc

    def _loop(self, client: ProducerClient) -> None:
        spec, process, topics = self.spec, self.process, self.topics
        n_topics, keys, cap, limit = len(topics), spec.keys, spec.max_in_flight, self._limit
        inflight, lock, stop = self._inflight, self._lock, self._stop
        invokes = [self.sink.recorder(_invoke_template(process, t, keyed=keys > 0)) for t in topics]
        rate = None if not spec.rate else self._rate
        make_payload = padder(spec.message_size, random=spec.padding == "random")
        clock = _clock_ns  # one reading per send: the invoke line and the latency
        n = 0
        while True:
            if rate is None:
                if stop.is_set():
                    break
            elif not rate.acquire(stop):
                break
            if limit is not None and n >= limit:
                break
            while len(inflight) >= cap and not stop.is_set():
                client.poll(0.01)
            value = f"{process}-{n}"
            i = n % n_topics
            topic = topics[i]
            key = None
            now = clock()
            if keys:
                k = n % keys
                invokes[i](now, k, n)
                key = b"k%d" % k
            else:
                invokes[i](now, n)
            data = make_payload(value)
            with lock:
                inflight[value] = (topic, now, n)
                self.counts["invoke"] = n = n + 1
            try:
                client.send(topic, key, data, value)
            except SendRefused as exc:
                self._refused(client, exc, topic, key, data, value)
            if n % _POLL_EVERY == 0:
                client.poll(0)

    def _refused(
        self,
        client: ProducerClient,
        exc: SendRefused,
        topic: str,
        key: bytes | None,
        data: bytes,
        value: str,
    ) -> None:
        """A full client queue is waited out (the record was not enqueued); else fail."""
        while exc.name == "QUEUE_FULL" and not self._stop.is_set():
            client.poll(_QUEUE_FULL_BACKOFF_S)
            try:
                client.send(topic, key, data, value)
                return
            except SendRefused as again:
                exc = again
        self._done(value, SendResult(error=exc.name))

    # -- completions (any thread) ------------------------------------------------------
    def _done(self, value: str, result: SendResult) -> None:
        with self._lock:
            entry = self._inflight.pop(value, None)
        if entry is None:
            return  # already completed as info on close, or not ours
        topic, started, number = entry
        if result.error is None:
            self._oks[topic](_clock_ns(), result.partition, result.offset, number)
            self._count("ok", started)
            return
        outcome = classify(result.error, single_attempt=self._single_attempt)
        event: dict[str, Any] = {
            "process": self.process, "type": outcome, "f": "send", "topic": topic,
            "value": value, "error": result.error,
        }  # fmt: skip
        if result.partition is not None:
            event["partition"] = result.partition
        self._finish(event, outcome, started)

    def _finish(self, event: dict[str, Any], outcome: str, started: int) -> None:
        self.sink.append(event)
        self._count(outcome, started)

    def _count(self, outcome: str, started: int) -> None:
        with self._lock:
            self.counts[outcome] += 1
        if self.metrics is not None:
            self.metrics.send_done(outcome, (time.monotonic_ns() - started) / 1e9)


def _value_field(process: int) -> str:
    """``"value":"<process>-%d"``: the value as a template with its number as the field."""
    return f'"value":{json_text(f"{process}-")[:-1]}%d"'


def _ok_template(process: int, topic: str) -> LineTemplate:
    """The ok line of one worker and topic; fields: partition, offset, value number."""
    return line_template(
        f'"process":{json_text(process)},"type":"ok","f":"send",'
        f'"topic":{json_text(topic)},"partition":%d,"offset":%d,{_value_field(process)}'
    )


def _invoke_template(process: int, topic: str, *, keyed: bool) -> LineTemplate:
    """The invoke line of one worker and topic; fields: (key number,) value number."""
    key = '"key":"k%d",' if keyed else ""
    return line_template(
        f'"process":{json_text(process)},"type":"invoke","f":"send",'
        f'"topic":{json_text(topic)},{key}{_value_field(process)}'
    )


def producer_factory(
    lib: str, bootstrap_servers: str, spec: ProducerConfig, client_id: str
) -> ProducerFactory:
    """A factory building the real client of ``lib`` for one worker."""

    def build(on_done: SendCallback) -> ProducerClient:
        return make_producer(lib, bootstrap_servers, spec, on_done, client_id)

    return build
