"""Transactional workers (history format 1.2): a producer of transactions and a copier.

Both are plain loops over a :class:`~kchaos.workloads.clients.TxnProducerClient`, so the
same code runs in a thread of the harness or in a process of its own
(:mod:`kchaos.workloads.txn_process`). Lines written (process = the worker's id):

* ``invoke``/``ok txn-init`` with ``transactional_id`` (and ``producer_id`` /
  ``producer_epoch`` where the client reports them); the ``ok`` line also carries
  ``transaction_version`` (format 1.3: the protocol the client speaks, 1 for
  librdkafka); ``info`` with ``error`` when ``init_transactions`` failed (it is retried
  with the same id until the worker stops).
* ``invoke txn`` with ``txn`` (``"<process>-<n>"``), ``transactional_id`` and ``sends``
  (topic, key, value ``"<process>-<n>-<i>"``); a copier step adds ``consumed``,
  ``offsets`` and ``copy_of`` on each send. Format 1.3: ``invoke txn-end`` with ``txn``
  and ``action`` (``commit`` or ``abort``) right before the worker first calls
  ``commit_transaction()`` or ``abort_transaction()`` for it (no completion of its own;
  a retried commit is the same call, not a new line). Then one completion:

  - ``ok``: ``commit_transaction()`` returned; ``sends`` with partition and offset where
    the delivery report gave them;
  - ``fail``: ``abort_transaction()`` returned (``aborted``: ``"planned"`` for the share
    aborted on purpose, ``"error"`` with ``error`` when a send or the commit required
    it), or ``begin_transaction()`` was refused; ``aborted: "fenced"`` with ``error``
    when the producer found itself fenced before it asked to commit (its sends, its
    offsets or its abort refused for a newer epoch): only the producer's own
    ``EndTxn(commit)`` can commit a transaction, and the newer instance's
    ``init_transactions`` aborted it;
  - ``info`` with ``error``: a commit that timed out after its retries, a producer
    fenced in its commit (an earlier attempt of that commit may have gone through), a
    fatal error, an abort that failed.

What follows a commit that did not finish (it timed out after its retries, or failed
with an error neither fatal, fenced nor abortable) is ``TxnSpec.after_unfinished_commit``:

* ``reinit`` (the default, the safe way): the transaction's ``info`` line, then the worker
  drops its client and makes a new one with the same ``transactional.id`` (a new
  ``txn-init``), whose ``init_transactions`` fences the old epoch, so that a late
  ``EndTxn`` of the old one cannot touch the next transaction. That is also what hides
  KAFKA-17754 (a delayed EndTxn commits or aborts the producer's *next* transaction).
* ``keep-going`` (what many applications do): the worker asks the same client to abort
  and begins its next transaction on it, with no new ``init_transactions``. The
  unfinished transaction's lines are ``invoke txn``, ``invoke txn-end`` commit, then
  ``invoke txn-end`` abort right before ``abort_transaction()`` is called, then its one
  completion, ``info`` with the commit's ``error``, once the abort returned: the
  completion waits for the abort because a ``txn-end`` names an open transaction, and
  it stays ``info`` because an abort that returns does not undo a commit the
  coordinator may already have taken. The next ``invoke txn`` follows on the same
  process without a ``txn-init``. When that abort fails, the ``info`` line comes all the
  same and the worker falls back to ``reinit`` (a fenced abort: it stops, as below).
  librdkafka refuses it (``_CONFLICT``) while a commit that timed out is still its
  current call, so with it ``keep-going`` keeps the client only after a commit error
  that ended the commit call.

A fatal error always makes a new client (in both modes), and so does an abort that failed
outside a commit. A fenced worker (another process took its id) stops: it is the zombie.
Which mode ran is not written on any line: it is in the scenario
(``workload.transactions.after_unfinished_commit``), which the run's ``run.json`` embeds;
a history with ``info`` transactions followed by more transactions of the same process
and no ``txn-init`` between them was written in ``keep-going`` mode.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kchaos.harness.cluster.retry import Poll
from kchaos.harness.errors import SendRefused, TxnClientUnusable, TxnError, TxnFenced
from kchaos.harness.rundir.history import ACTION_ABORT, ACTION_COMMIT
from kchaos.workloads.clients import (
    ConsumerClient,
    Record,
    SendCallback,
    SendResult,
    TxnProducerClient,
    close_quietly,
)
from kchaos.workloads.spec import KEEP_GOING, TxnSpec
from kchaos.workloads.values import RateLimiter, key_for, padder, value_of

log = logging.getLogger(__name__)

TxnFactory = Callable[[SendCallback], TxnProducerClient]
ConsumerFactory = Callable[[], ConsumerClient]
INIT_TIMEOUT_S = 30.0
_CLOSING = "closing a transactional client"  # what a failed close logs
_INIT_BACKOFF_S = 1.0
PLANNED = "planned"  # ``aborted`` of a transaction aborted on purpose
ABORT_ERROR = "error"  # ``aborted`` of one an error made the worker abort
FENCED = "fenced"  # ``aborted`` of one a newer instance aborted before its commit


class EventSink(Protocol):
    """Where a transactional worker's lines go (a history sink, or the pipe to the harness)."""

    def append(self, event: dict[str, Any]) -> object: ...


class TxnWorkerBase:
    """What the producer and the copier share: the client's life and one transaction."""

    def __init__(
        self,
        process: int,
        transactional_id: str,
        spec: TxnSpec,
        sink: EventSink,
        factory: TxnFactory,
        *,
        stop: threading.Event | None = None,
        first: int = 0,
        seed: int | None = None,
    ) -> None:
        self.process = process
        self.transactional_id = transactional_id
        self.spec = spec
        self.sink = sink
        self._factory = factory
        self.stop_event = stop or threading.Event()
        self.next_number = first  # the next transaction is "<process>-<next_number>"
        self.rng = random.Random(seed if seed is not None else process)
        self.counts = {"invoke": 0, "ok": 0, "fail": 0, "info": 0}
        self.fenced = False
        self._client: TxnProducerClient | None = None
        self._results: dict[str, SendResult] = {}
        self._timeout_s = spec.timeout_ms / 1000.0
        self._deadline = 0.0  # monotonic end of the current transaction's send budget
        self._pad = padder(spec.message_size)
        self._keep_going = spec.after_unfinished_commit == KEEP_GOING

    # -- lines -------------------------------------------------------------------------
    def _line(self, kind: str, f: str, **fields: Any) -> None:
        event: dict[str, Any] = {"process": self.process, "type": kind, "f": f}
        event.update(fields)
        self.sink.append(event)

    def _done(self, value: str, result: SendResult) -> None:
        self._results[value] = result

    # -- the client ----------------------------------------------------------------------
    def _connect(self) -> TxnProducerClient | None:
        """A new client, initialised; None when the worker was asked to stop first.
        A failed init is tried again with a new client, for as long as the worker runs."""
        made: list[TxnProducerClient] = []

        def initialised() -> str | None:
            client = self._factory(self._done)
            self._line("invoke", "txn-init", transactional_id=self.transactional_id)
            try:
                pid, epoch = client.init(INIT_TIMEOUT_S)
            except TxnError as exc:
                self._line("info", "txn-init", transactional_id=self.transactional_id,
                           error=exc.name)  # fmt: skip
                close_quietly(client, log, _CLOSING)
                if exc.fenced:
                    raise TxnFenced(exc.name) from exc
                return exc.name
            ok: dict[str, Any] = {"transactional_id": self.transactional_id}
            if pid is not None:
                ok["producer_id"] = pid
                if epoch is not None:
                    ok["producer_epoch"] = epoch
            ok["transaction_version"] = client.transaction_version
            self._line("ok", "txn-init", **ok)
            made.append(client)
            return None

        Poll("txn-init", initialised, timeout=math.inf, interval=_INIT_BACKOFF_S,
             stop=self.stop_event.is_set, sleep=self.stop_event.wait).wait()  # fmt: skip
        return made[0] if made else None

    def _drop_client(self) -> None:
        if self._client is not None:
            close_quietly(self._client, log, _CLOSING)
            self._client = None

    # -- one transaction -------------------------------------------------------------------
    def _transaction(
        self,
        sends: list[dict[str, Any]],
        extra: dict[str, Any],
        offsets: Callable[[TxnProducerClient], None] | None = None,
    ) -> str:
        """Run one transaction and record it; its outcome ``ok``, ``fail`` or ``info``.

        Raises TxnClientUnusable / TxnFenced after recording ``info`` when the client is unusable.
        """
        client = self._client
        assert client is not None
        started = time.monotonic()
        self._deadline = started + self._timeout_s  # sends and offsets within the timeout
        txn = f"{self.process}-{self.next_number}"
        self.next_number += 1
        self._results = {}
        planned_abort = self.rng.random() < self.spec.abort_ratio
        self._line("invoke", "txn", txn=txn, transactional_id=self.transactional_id,
                   sends=sends, **extra)  # fmt: skip
        self.counts["invoke"] += 1
        try:
            client.begin()
        except TxnError as exc:  # nothing was sent: the transaction never existed
            return self._end("fail", txn, error=exc.name, aborted=ABORT_ERROR, cause=exc)
        error: TxnError | SendRefused | None = None
        try:
            for i, s in enumerate(sends):
                if i and self.spec.send_interval and self.stop_event.wait(self.spec.send_interval):
                    error = TxnError("STOPPING", "the workload stopped mid-transaction",
                                     abortable=True)  # fmt: skip
                    break
                data = self._pad(s["value"])
                key = s.get("key")
                client.send(s["topic"], None if key is None else key.encode(), data, s["value"])
            left = 0 if error is not None else client.flush(self._remaining())
            if left:
                error = TxnError("TIMED_OUT", f"{left} sends unacknowledged", abortable=True)
            failed = [r.error for r in self._results.values() if r.error]
            if error is None and failed:
                error = TxnError(str(failed[0]), "a send failed", abortable=True)
            if error is None and offsets is not None:
                offsets(client)
        except (TxnError, SendRefused) as exc:
            error = exc
        # no commit was asked for yet: a fenced producer's transaction is certainly aborted
        if isinstance(error, TxnError) and error.fenced:
            return self._end("fail", txn, error=error.name, aborted=FENCED, cause=error)
        if isinstance(error, TxnError) and error.fatal:
            return self._end("info", txn, error=error.name, cause=error)
        if error is not None or planned_abort:
            self._ending(txn, ACTION_ABORT)
            try:
                client.abort(self._timeout_s)
            except TxnError as exc:
                if exc.fenced:
                    return self._end("fail", txn, error=exc.name, aborted=FENCED, cause=exc)
                return self._end("info", txn, error=exc.name, cause=exc, restart=True)
            if error is None:
                return self._end("fail", txn, aborted=PLANNED)
            return self._end("fail", txn, aborted=ABORT_ERROR, error=_name(error))
        return self._commit(client, txn, sends)

    def _ending(self, txn: str, action: str) -> None:
        """``txn-end``: the client is about to be asked to commit or abort ``txn``."""
        self._line("invoke", "txn-end", txn=txn, action=action)

    def _remaining(self) -> float:
        """Seconds left of the transaction's own budget (at least a little)."""
        return max(0.5, self._deadline - time.monotonic())

    def _commit(self, client: TxnProducerClient, txn: str, sends: list[dict[str, Any]]) -> str:
        # the commit may use the rest of the budget and one more timeout, then it is info
        deadline = self._deadline + self._timeout_s
        self._ending(txn, ACTION_COMMIT)  # before the first call: a zombie is judged by it
        while True:
            try:
                client.commit(max(0.5, min(self._timeout_s, deadline - time.monotonic())))
                break
            except TxnError as exc:
                if exc.fatal or exc.fenced:
                    return self._end("info", txn, error=exc.name, cause=exc)
                if exc.abortable:
                    self._ending(txn, ACTION_ABORT)
                    try:
                        client.abort(self._timeout_s)
                    except TxnError as exc2:
                        return self._end("info", txn, error=exc2.name, cause=exc2, restart=True)
                    return self._end("fail", txn, aborted=ABORT_ERROR, error=exc.name)
                if exc.retriable and time.monotonic() < deadline:
                    continue  # librdkafka: a retriable commit error may be retried
                return self._unfinished(client, txn, exc)
        done = []
        for s in sends:
            entry: dict[str, Any] = {"topic": s["topic"], "value": s["value"]}
            result = self._results.get(s["value"])
            if result is not None and result.partition is not None and result.offset is not None:
                entry["partition"] = result.partition
                entry["offset"] = result.offset
            done.append(entry)
        return self._end("ok", txn, sends=done)

    def _unfinished(self, client: TxnProducerClient, txn: str, error: TxnError) -> str:
        """A commit that did not finish (``error``, neither fatal nor fenced): ``info``.
        ``reinit``: a new client. ``keep-going``: abort on this client first (its
        ``txn-end`` abort before the call, the ``info`` after it, the transaction still
        open in between) and go on with it; an abort that fails makes a new client."""
        if not self._keep_going:
            return self._end("info", txn, error=error.name, cause=error, restart=True)
        self._ending(txn, ACTION_ABORT)
        try:
            client.abort(self._timeout_s)
        except TxnError as exc:
            log.warning("txn worker %s: abort after an unfinished commit failed: %s",
                        self.process, exc.name)  # fmt: skip
            # the commit's error says why the outcome is unknown; the abort's decides
            # what becomes of the client (fenced: the worker stops; else a new client)
            return self._end("info", txn, error=error.name, cause=exc, restart=True)
        # an abort that returned does not undo a commit the coordinator may already have
        return self._end("info", txn, error=error.name)

    def _end(
        self,
        kind: str,
        txn: str,
        *,
        cause: TxnError | None = None,
        restart: bool = False,
        **fields: Any,
    ) -> str:
        self._line(kind, "txn", txn=txn, **fields)
        self.counts[kind] += 1
        if cause is not None and cause.fenced:
            raise TxnFenced(cause.name)
        if restart or (cause is not None and cause.fatal):
            raise TxnClientUnusable(cause.name if cause is not None else kind)
        return kind

    # -- the loop ----------------------------------------------------------------------
    def step(self) -> bool:
        """One transaction (or nothing to do); False when the worker should stop."""
        raise NotImplementedError

    def run(self) -> None:
        """Transactions until the stop event is set (then the client is closed)."""
        try:
            while not self.stop_event.is_set():
                if self._client is None:
                    self._client = self._connect()
                    if self._client is None:
                        break
                try:
                    if not self.step():
                        break
                except TxnClientUnusable as exc:
                    log.warning("txn worker %s: new client after %s", self.process, exc)
                    self._drop_client()
        except TxnFenced as exc:
            log.warning("txn worker %s fenced (%s): stopping", self.process, exc)
            self.fenced = True
        finally:
            self._drop_client()
            self.close_inputs()

    def close_inputs(self) -> None:
        """Release what the worker reads from (the copier's consumer)."""


class TxnProducer(TxnWorkerBase):
    """Transactions of 1..max_sends values over ``topics``, a share aborted on purpose."""

    def __init__(self, *args: Any, topics: Sequence[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not topics:
            raise ValueError("a transactional producer needs at least one topic")
        self.topics = tuple(topics)
        self._rate = RateLimiter(self.spec.max_rate)

    def step(self) -> bool:
        if not self._rate.acquire(self.stop_event):
            return False
        txn = f"{self.process}-{self.next_number}"
        sends = []
        for i in range(self.rng.randint(1, self.spec.max_sends)):
            send: dict[str, Any] = {"topic": self.rng.choice(self.topics)}
            key = key_for(self.rng.randrange(1 << 30), self.spec.keys)
            if key is not None:
                send["key"] = key.decode()
            send["value"] = f"{txn}-{i}"
            sends.append(send)
        self._transaction(sends, {})
        return True


class TxnCopier(TxnWorkerBase):
    """Consume-transform-produce: each input record becomes one output record, and the
    consumed offsets are committed in the same transaction (like kafkatest's
    TransactionalMessageCopier). After an abort it reads the aborted input again."""

    def __init__(
        self,
        *args: Any,
        consumer_factory: ConsumerFactory,
        poll_timeout_s: float = 0.5,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if self.spec.copier is None:
            raise ValueError("a copier needs the copier spec")
        self.copier = self.spec.copier
        self._consumer_factory = consumer_factory
        self._consumer: ConsumerClient | None = None
        self._poll_timeout_s = poll_timeout_s

    def _reader(self) -> ConsumerClient:
        if self._consumer is None:
            consumer = self._consumer_factory()
            consumer.subscribe([self.copier.input], lambda parts: None)
            self._consumer = consumer
        return self._consumer

    def close_inputs(self) -> None:
        if self._consumer is not None:
            close_quietly(self._consumer, log, f"copier {self.process}: closing the consumer")
            self._consumer = None

    def step(self) -> bool:
        consumer = self._reader()
        records, _errors = consumer.poll(self._poll_timeout_s, self.copier.max_batch)
        records = [r for r in records if value_of(r.data) is not None]
        if not records:
            return True
        txn = f"{self.process}-{self.next_number}"
        consumed = [
            {"topic": r.topic, "partition": r.partition, "offset": r.offset,
             "value": value_of(r.data)}
            for r in records
        ]  # fmt: skip
        sends = [
            {"topic": self.copier.output, "key": value_of(r.data), "value": f"{txn}-{i}",
             "copy_of": value_of(r.data)}
            for i, r in enumerate(records)
        ]  # fmt: skip
        positions = _next_offsets(records)
        extra = {
            "consumed": consumed,
            "offsets": {"group": self.copier.group, "positions": [list(p) for p in positions]},
        }
        metadata = consumer.group_metadata()

        def commit_offsets(client: TxnProducerClient) -> None:
            client.send_offsets(positions, metadata, self._remaining())

        try:
            outcome = self._transaction(sends, extra, commit_offsets)
        except TxnClientUnusable:
            self.close_inputs()  # a new consumer starts from the group's committed offsets
            raise
        if outcome == "fail":
            self._rewind(consumer, records)
        elif outcome == "info":
            self.close_inputs()
        return True

    def _rewind(self, consumer: ConsumerClient, records: list[Record]) -> None:
        """Read the aborted transaction's input again (from its first offset per partition)."""
        first: dict[tuple[str, int], int] = {}
        for r in records:
            first.setdefault((r.topic, r.partition), r.offset)
        try:
            for (topic, partition), offset in first.items():
                consumer.seek(topic, partition, offset)
        except Exception:
            log.warning("copier %s: rewind failed; new consumer", self.process, exc_info=True)
            self.close_inputs()


def _next_offsets(records: Sequence[Record]) -> list[tuple[str, int, int]]:
    """[topic, partition, next offset] per partition read."""
    nxt: dict[tuple[str, int], int] = {}
    for r in records:
        nxt[(r.topic, r.partition)] = max(nxt.get((r.topic, r.partition), 0), r.offset + 1)
    return sorted((t, p, o) for (t, p), o in nxt.items())


def _name(error: BaseException) -> str:
    return str(getattr(error, "name", type(error).__name__))
