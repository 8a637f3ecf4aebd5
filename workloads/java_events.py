"""History lines from the JSON events of Kafka's VerifiableProducer and VerifiableConsumer.

Pure translation (no Docker): :mod:`kchaos.workloads.java_client` feeds each stdout line
of a Java client container to one of these translators, which records history lines in
the sink (history-format.md). What the tools print, and what kchaos makes of it:

Producer (``--value-prefix P``: value ``"P.i"`` for the i-th send, i = 0, 1, ...;
VerifiableProducer sends values in that order from one thread):

* ``producer_send_success`` (topic, partition, offset, value): ``ok``.
* ``producer_send_error`` (exception class, message, value): ``fail`` or ``info`` by
  :func:`kchaos.workloads.classify.classify` of the exception's name
  (``NotEnoughReplicasException`` -> ``NOT_ENOUGH_REPLICAS``), ``info`` when unknown.
* ``tool_data`` (printed by the shutdown hook after the producer closed): ``sent``, the
  number of values handed to ``KafkaProducer.send``; values at or above it were never sent.
* The tool prints nothing when it sends. The ``invoke`` line of value i is recorded by
  :meth:`ProducerEvents.announce` on the harness's own schedule (the rate the tool is
  throttled to, from its ``startup_complete``), never later than the first event about
  value i or a later one. See docs/workloads.md, "client: java".

Consumer (``--verbose``):

* ``record_data`` lines (topic, partition, offset, value) of one poll, then its
  ``records_consumed``: ``invoke`` poll (at the first record of the poll) and ``ok`` poll
  with the records in the order printed.
* ``partitions_assigned`` / ``partitions_revoked``: ``ok assign`` with the full assignment.
* ``offsets_committed``: ``invoke``/``ok commit`` (``info`` with the error when it failed).
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from typing import TYPE_CHECKING, Any

from kchaos.harness.rundir.history_writer import HistorySink
from kchaos.workloads.classify import canonical_name, classify
from kchaos.workloads.values import value_of

if TYPE_CHECKING:
    from kchaos.workloads.metrics import HarnessMetrics

CLOSED_IN_FLIGHT = "closed-in-flight"  # the producers' name for a send cut off by close
NEVER_SENT = "never-sent"  # announced, but the tool stopped before sending it
_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def java_error_name(exception: str | None) -> str:
    """A canonical error name from a Java exception class as VerifiableProducer prints it
    (``class org.apache.kafka.common.errors.NotEnoughReplicasException``)."""
    if not exception:
        return "UNKNOWN"
    simple = exception.replace("class ", "").strip().rsplit(".", 1)[-1].rsplit("$", 1)[-1]
    for suffix in ("Exception", "Error"):
        if simple.endswith(suffix) and len(simple) > len(suffix):
            simple = simple[: -len(suffix)]
            break
    return canonical_name(_WORD.sub("_", simple))


class ProducerEvents:
    """One VerifiableProducer's events as history lines (thread-safe)."""

    def __init__(
        self,
        sink: HistorySink,
        process: int,
        topic: str,
        *,
        single_attempt: bool,
        keys: int = 0,
        metrics: HarnessMetrics | None = None,
    ) -> None:
        self.sink = sink
        self.metrics = metrics  # sends by outcome for /metrics, as the Python workers do
        self.process = process
        self.topic = topic
        self.single_attempt = single_attempt
        self.keys = keys
        self.counts = {"invoke": 0, "ok": 0, "fail": 0, "info": 0}
        self.sent: int | None = None  # from tool_data
        self.started = threading.Event()  # startup_complete seen
        self.unparsed = 0
        self._lock = threading.Lock()
        self._announced = 0  # values 0.._announced-1 have an invoke line
        self._pending: dict[int, int] = {}  # announced, not completed: invoke time (ns)

    def value(self, i: int) -> str:
        return f"{self.process}.{i}"

    def _number(self, value: Any) -> int | None:
        if not isinstance(value, str):
            return None
        prefix, dot, tail = value.partition(".")
        if not dot or prefix != str(self.process) or not tail.isdigit():
            return None
        return int(tail)

    def announce(self, upto: int) -> None:
        """Record the invoke lines of every value below ``upto`` not yet recorded."""
        with self._lock:
            while self._announced < upto:
                i = self._announced
                event: dict[str, Any] = {"process": self.process, "type": "invoke", "f": "send",
                                         "topic": self.topic}  # fmt: skip
                if self.keys > 0:
                    event["key"] = str(i % self.keys)
                event["value"] = self.value(i)
                self.sink.append(event)
                self._pending[i] = time.monotonic_ns()
                self._announced += 1
                self.counts["invoke"] += 1

    @property
    def announced(self) -> int:
        return self._announced

    def line(self, data: dict[str, Any]) -> None:
        """Translate one parsed JSON event of the tool."""
        name = data.get("name")
        if name == "startup_complete":
            self.started.set()
        elif name in ("producer_send_success", "producer_send_error"):
            self._completion(name == "producer_send_success", data)
        elif name == "tool_data":
            sent = data.get("sent")
            if isinstance(sent, int):
                self.sent = sent

    def _completion(self, success: bool, data: dict[str, Any]) -> None:
        number = self._number(data.get("value"))
        if number is None:
            self.unparsed += 1
            return
        self.announce(number + 1)  # value i was handed to send() after 0..i-1
        with self._lock:
            if number not in self._pending:
                return  # completed twice: the first completion stands
            invoked = self._pending.pop(number)
            base = {"process": self.process, "f": "send", "topic": data.get("topic") or self.topic}
            if success:
                partition, offset = data.get("partition"), data.get("offset")
                event = {**base, "type": "ok", "partition": partition, "offset": offset,
                         "value": self.value(number)}  # fmt: skip
                outcome = "ok"
            else:
                error = java_error_name(data.get("exception"))
                outcome = classify(error, single_attempt=self.single_attempt)
                event = {**base, "type": outcome, "value": self.value(number), "error": error}
                if data.get("message"):
                    event["message"] = str(data["message"])[:200]
            self.sink.append(event)
            self.counts[outcome] += 1
            self._count(outcome, invoked)

    def _count(self, outcome: str, invoked_ns: int) -> None:
        if self.metrics is None:
            return
        with contextlib.suppress(Exception):  # metrics must never fail a run
            self.metrics.send_done(outcome, (time.monotonic_ns() - invoked_ns) / 1e9)

    def finish(self) -> None:
        """After the tool exited: values it never sent ``fail``, the rest ``info``.

        Only the tool's own count (``tool_data``) proves a value was never sent; without it
        (the container was killed) every pending value is unknown.
        """
        with self._lock:
            for i in sorted(self._pending):
                never = self.sent is not None and i >= self.sent
                outcome = "fail" if never else "info"
                self.sink.append({"process": self.process, "type": outcome, "f": "send",
                                  "topic": self.topic, "value": self.value(i),
                                  "error": NEVER_SENT if never else CLOSED_IN_FLIGHT})  # fmt: skip
                self.counts[outcome] += 1
                self._count(outcome, self._pending[i])
            self._pending.clear()


def _partitions(data: dict[str, Any]) -> list[tuple[str, int]]:
    return [(str(p["topic"]), int(p["partition"])) for p in data.get("partitions") or []]


class ConsumerEvents:
    """One VerifiableConsumer's events as history lines (one reader thread)."""

    def __init__(self, sink: HistorySink, process: int, isolation: str | None = None) -> None:
        self.sink = sink
        self.process = process
        self.isolation = isolation  # the consumer's isolation.level, stated on assign lines
        self.assignment: set[tuple[str, int]] = set()
        self.polls = 0
        self.records = 0
        self.started = threading.Event()
        self._batch: list[dict[str, Any]] | None = None  # records of the poll being printed

    def _invoke_poll(self) -> None:
        if self._batch is None:
            self.sink.append({"process": self.process, "type": "invoke", "f": "poll"})
            self._batch = []

    def _assigned(self) -> None:
        partitions = [[t, p] for t, p in sorted(self.assignment)]
        line: dict[str, Any] = {"process": self.process, "type": "ok", "f": "assign",
                                "partitions": partitions}  # fmt: skip
        if self.isolation is not None:
            line["isolation"] = self.isolation
        self.sink.append(line)

    def line(self, data: dict[str, Any]) -> None:
        name = data.get("name")
        if name == "startup_complete":
            self.started.set()
        elif name == "record_data":
            self._invoke_poll()
            assert self._batch is not None
            raw = data.get("value")
            value = value_of(raw.encode()) if isinstance(raw, str) else None
            self._batch.append({"topic": data.get("topic"), "partition": data.get("partition"),
                                "offset": data.get("offset"), "value": value})  # fmt: skip
        elif name == "records_consumed":
            self._invoke_poll()
            records, self._batch = self._batch or [], None
            self.sink.append({"process": self.process, "type": "ok", "f": "poll",
                              "records": records})  # fmt: skip
            self.polls += 1
            self.records += len(records)
        elif name == "partitions_assigned":
            self.assignment |= set(_partitions(data))
            self._assigned()
        elif name == "partitions_revoked":
            self.assignment -= set(_partitions(data))
            self._assigned()
        elif name == "offsets_committed":
            offsets = [[o["topic"], o["partition"], o["offset"]] for o in data.get("offsets") or []]
            self.sink.append({"process": self.process, "type": "invoke", "f": "commit"})
            if data.get("success", True):
                self.sink.append(
                    {"process": self.process, "type": "ok", "f": "commit", "offsets": offsets}
                )
            else:
                self.sink.append({"process": self.process, "type": "info", "f": "commit",
                                  "offsets": offsets, "error": str(data.get("error"))})  # fmt: skip

    def finish(self) -> None:
        """A poll cut off mid-print (the container was killed) still gets its completion:
        the records printed were returned by the client."""
        if self._batch is not None:
            self.line({"name": "records_consumed"})
