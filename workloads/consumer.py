"""Consumer workers: group subscription or manual assignment, every poll recorded.

Lines written (process = the worker's id):

* ``ok assign`` with the FULL assignment after every rebalance (an empty list when
  partitions are revoked or lost), after the manual assignment and after every seek,
  and the reader's ``isolation`` (format 1.2: ``read_committed`` or ``read_uncommitted``);
* ``invoke poll`` then ``ok poll`` with ``records`` in the order the client returned them
  (an ``errors`` list is added when the client reported errors in that poll; a poll that
  raised is ``fail`` with ``error``);
* offset commits (group members only) as ``invoke``/``ok commit`` with ``offsets``
  ([topic, partition, offset]);
  a commit that raised is ``info`` (it may have reached the coordinator). Readers of
  format v1 ignore ``f: "commit"``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kchaos.harness.cluster.retry import Poll
from kchaos.harness.rundir.history_writer import HistorySink
from kchaos.workloads.clients import ConsumerClient, TopicPartition, close_quietly
from kchaos.workloads.metrics import HarnessMetrics
from kchaos.workloads.spec import ConsumerConfig
from kchaos.workloads.values import value_of

log = logging.getLogger(__name__)

ConsumerFactory = Callable[[], ConsumerClient]
_PARTITIONS_TIMEOUT_S = 10.0  # one metadata request
# How long a reader keeps asking for a topic's partitions. Brokers learn of a new topic
# from the metadata log, each a little after the controller created it, so the broker a
# reader asks first may not know it yet (UNKNOWN_TOPIC_OR_PART) although the harness saw
# the topic ready on another one. kchaos never deletes a topic during a run, so a topic
# still unknown after this long is a real error.
_PARTITIONS_WAIT_S = 30.0
_PARTITIONS_RETRY_S = 0.5


def record_dicts(records: Sequence[Any]) -> list[dict[str, Any]]:
    """History form of client records: topic, partition, offset, value."""
    return [
        {"topic": r.topic, "partition": r.partition, "offset": r.offset, "value": value_of(r.data)}
        for r in records
    ]


class ConsumerWorker:
    """One consuming process with its own client and thread.

    ``spec`` is the scenario's config of the readers this worker is one of (its ``count``
    is not read here). The keyword arguments tune the loop: ``partitions`` keeps an
    assigning reader to those partition numbers (None: all of them), a group member
    commits every ``commit_interval_s`` seconds (0: never), and each poll waits up to
    ``poll_timeout_s`` for at most ``max_records`` records.
    """

    def __init__(
        self,
        process: int,
        topics: Sequence[str],
        spec: ConsumerConfig,
        sink: HistorySink,
        factory: ConsumerFactory,
        *,
        metrics: HarnessMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        partitions: tuple[int, ...] | None = None,
        commit_interval_s: float = 2.0,
        poll_timeout_s: float = 0.5,
        max_records: int = 500,
    ) -> None:
        self.process = process
        self.topics = tuple(topics)
        self.spec = spec
        self.partitions = partitions
        self.commit_interval_s = commit_interval_s
        self.poll_timeout_s = poll_timeout_s
        self.max_records = max_records
        self.sink = sink
        self.metrics = metrics
        self._factory = factory
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seeks: queue.Queue[tuple[str, int, int]] = queue.Queue()
        self.assignment: list[TopicPartition] = []
        self.client: ConsumerClient | None = None
        self.polls = 0
        self.records = 0
        self.error: BaseException | None = None
        self.ready = threading.Event()  # set once the client exists

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"consumer-{self.process}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def seek(self, topic: str, partition: int, offset: int) -> None:
        """Ask the worker to move its position (done between polls, then an assign line)."""
        self._seeks.put((topic, partition, offset))

    # -- recording ---------------------------------------------------------------------
    def _assigned(self, partitions: list[TopicPartition]) -> None:
        self.assignment = sorted(partitions)
        self.sink.append(
            {
                "process": self.process,
                "type": "ok",
                "f": "assign",
                "partitions": [[t, p] for t, p in self.assignment],
                "isolation": self.spec.isolation,
            }
        )

    def _poll(self, client: ConsumerClient) -> None:
        self.sink.append({"process": self.process, "type": "invoke", "f": "poll"})
        started = self._clock()
        try:
            records, errors = client.poll(self.poll_timeout_s, self.max_records)
        except Exception as exc:  # a failed poll read nothing
            self.sink.append(
                {"process": self.process, "type": "fail", "f": "poll", "error": repr(exc)}
            )
            self._observe("fail", 0, started)
            return
        event: dict[str, Any] = {
            "process": self.process,
            "type": "ok",
            "f": "poll",
            "records": record_dicts(records),
        }
        if errors:
            event["errors"] = errors
        self.sink.append(event)
        self.polls += 1
        self.records += len(records)
        self._observe("ok", len(records), started)

    def _observe(self, outcome: str, count: int, started: float) -> None:
        if self.metrics is not None:
            self.metrics.poll_done(outcome, count, self._clock() - started)

    def _commit(self, client: ConsumerClient) -> None:
        self.sink.append({"process": self.process, "type": "invoke", "f": "commit"})
        try:
            offsets = client.commit()
        except Exception as exc:
            self.sink.append(
                {"process": self.process, "type": "info", "f": "commit", "error": repr(exc)}
            )
            return
        self.sink.append(
            {
                "process": self.process,
                "type": "ok",
                "f": "commit",
                "offsets": [[t, p, o] for t, p, o in offsets],
            }
        )

    def _apply_seeks(self, client: ConsumerClient) -> None:
        moved = False
        while True:
            try:
                topic, partition, offset = self._seeks.get_nowait()
            except queue.Empty:
                break
            if (topic, partition) not in self.assignment:
                log.warning("consumer %s: seek on unassigned %s-%s", self.process, topic, partition)
                continue
            try:
                client.seek(topic, partition, offset)
            except Exception:
                log.warning("consumer %s: seek failed", self.process, exc_info=True)
                continue
            moved = True
        if moved:
            self._assigned(self.assignment)

    # -- the loop ----------------------------------------------------------------------
    def _start_reading(self, client: ConsumerClient) -> None:
        if self.spec.mode == "subscribe":
            client.subscribe(self.topics, self._assigned)
            return
        wanted: list[TopicPartition] = []
        for topic in self.topics:
            parts = self._partitions_of(client, topic)
            if self.partitions is not None:
                parts = [p for p in parts if p in self.partitions]
            wanted.extend((topic, p) for p in parts)
        client.assign([(t, p, None) for t, p in wanted])
        self._assigned(wanted)

    def _partitions_of(self, client: ConsumerClient, topic: str) -> list[int]:
        """The topic's partitions, asked again while the broker asked does not know it yet
        (see ``_PARTITIONS_WAIT_S``); the last error once that time has passed."""
        found: list[int] = []

        def known() -> str | None:
            found[:] = client.partitions_for(topic, _PARTITIONS_TIMEOUT_S)
            return None

        def retry_after(seconds: float) -> bool:  # True: the consumer is stopping
            log.info("consumer %s: partitions of %s not known yet (%s)", self.process,
                     topic, asking.error)  # fmt: skip
            return self._stop.wait(seconds)

        asking = Poll(f"the partitions of {topic}", known, timeout=_PARTITIONS_WAIT_S,
                      interval=_PARTITIONS_RETRY_S, transient=(Exception,),
                      clock=self._clock, sleep=retry_after)  # fmt: skip
        if asking.wait():
            return found
        if asking.stopped:
            return []
        assert asking.error is not None  # every failed ask raised
        raise asking.error

    def _run(self) -> None:
        try:
            client = self._factory()
        except BaseException as exc:
            log.exception("consumer %s could not start", self.process)
            self.error = exc
            self.ready.set()
            return
        self.client = client
        self.ready.set()
        try:
            self._start_reading(client)
            last_commit = self._clock()
            while not self._stop.is_set():
                self._apply_seeks(client)
                self._poll(client)
                interval = self.commit_interval_s if self.spec.mode == "subscribe" else 0
                if interval > 0 and self._clock() - last_commit >= interval:
                    self._commit(client)
                    last_commit = self._clock()
        except BaseException as exc:
            log.exception("consumer %s stopped on an unexpected error", self.process)
            self.error = exc
        finally:
            close_quietly(client, log, f"consumer {self.process}: close")
