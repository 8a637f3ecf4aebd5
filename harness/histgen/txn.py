"""Transactional histories (format 1.2, with 1.3's ``txn-end`` lines) over a simulated
log, for tests and benchmarks.

The simulation keeps each partition's log as Kafka holds it: every transaction's records
(committed or aborted) followed by one control marker per partition it wrote to. The
clients take turns, one operation at a time, so a transaction is decided before anyone
reads past it and the last stable offset is the log end between operations:

- transactional producers (process ``1..producers``, ``transactional_id``
  ``kchaos-t<process>``) run transactions of 1 to ``max_sends`` values over the
  partitions of ``topic``; a share commits, a share aborts, a share ends ``info`` (half of
  those committed, half not); now and then a producer initialises its own id again,
  which fences nobody;
- process 0 writes plain sends to the copier's input (``<topic>-in``, one partition);
- a copier (``kchaos-t-copier``, group ``kchaos-copier``) copies chunks of that input to
  ``<topic>-out`` with the consumed offsets in the same transaction; an aborted or
  undecided copy is read again from the group's position;
- a ``read_committed`` and a ``read_uncommitted`` reader, each assigned every partition,
  poll as the logs grow (the second may see aborted values: no anomaly);
- the drain reads ``read_committed`` to each partition's high watermark and reports the
  last stable offset;
- every transaction's completion follows a ``txn-end`` line (format 1.3: ``abort``
  before ``fail``, ``commit`` otherwise), as the workers write it.

A clean history is valid by construction. Each kind named in ``inject`` (see
:data:`TXN_INJECTABLE`) adds exactly one instance of that anomaly; :func:`generate_txn`
says which and where (``GeneratedHistory.injected``) and the count a checker must report
(``expected``). Same seed and arguments, same bytes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kchaos.harness.histgen.model import GeneratedHistory, Injection
from kchaos.harness.rundir.anomalies import TXN_EXTENDED, TXN_KINDS
from kchaos.harness.rundir.history import (
    ACTION_ABORT,
    ACTION_COMMIT,
    DRAIN,
    F_ASSIGN,
    F_DRAIN,
    F_DRAIN_END,
    F_POLL,
    F_SEND,
    F_TXN,
    F_TXN_END,
    F_TXN_INIT,
    FAIL,
    INFO,
    INVOKE,
    OK,
    READ_COMMITTED,
    READ_UNCOMMITTED,
)

#: Every kind a transactional history can carry on request: the two of version 1 that
#: format 1.2 extends (of transaction values) and the five it adds.
TXN_INJECTABLE: tuple[str, ...] = TXN_EXTENDED + TXN_KINDS
LOST_WRITE, ABORTED_READ = TXN_EXTENDED
TORN, ZOMBIE, HANGING, EOS_DUPLICATE, EOS_LOST = TXN_KINDS

#: Kafka's default transaction.timeout.ms, what the checker assumes without run.json.
TIMEOUT_S = 60
COPIER_GROUP = "kchaos-copier"
ID_PREFIX = "kchaos-t"
_DRAIN_BATCH = 500

# per-record flags in the simulated log
_COMMITTED = 1
_HIDDEN = 2  # lost after it was written: neither the drain nor a reader has it
_RC_VISIBLE = 4  # an aborted record a read_committed reader got anyway


@dataclass
class _Log:
    """One partition: values (None for a control marker) and their flags."""

    values: list[str | None] = field(default_factory=list)
    flags: bytearray = field(default_factory=bytearray)

    def append(self, value: str | None, flags: int) -> int:
        self.values.append(value)
        self.flags.append(flags)
        return len(self.values) - 1


@dataclass
class _Reader:
    process: int
    isolation: str
    pos: dict[tuple[str, int], int] = field(default_factory=dict)


@dataclass
class _Copier:
    process: int
    tid: str
    pos: int = 0  # the group's committed position in the input partition
    committed: list[int] = field(default_factory=list)  # inputs with one committed copy


class TxnSim:
    """The simulated cluster and its clients; lines go straight to the file."""

    def __init__(
        self, path: Path, seed: int, topic: str, partitions: int, producers: int, max_sends: int
    ) -> None:
        self.rng = random.Random(seed)
        self.topic = topic
        self.input = f"{topic}-in"
        self.output = f"{topic}-out"
        self.partitions = partitions
        self.max_sends = max_sends
        self.producers = list(range(1, producers + 1))
        self.epoch: dict[str, int] = {}
        self.logs: dict[tuple[str, int], _Log] = {}
        for t, n in ((topic, partitions), (self.input, 1), (self.output, partitions)):
            for p in range(n):
                self.logs[(t, p)] = _Log()
        self.copier = _Copier(producers + 1, f"{ID_PREFIX}-copier")
        self.readers = [
            _Reader(producers + 2, READ_COMMITTED),
            _Reader(producers + 3, READ_UNCOMMITTED),
        ]
        self.fh = path.open("wb", buffering=1 << 20)
        self.index = 0
        self.time = 0
        self.injected: list[Injection] = []
        self.outcomes = {OK: 0, FAIL: 0, INFO: 0}
        self.values = 0
        self.inputs = 0
        self.n = 0  # transactions invoked

    # -- lines ---------------------------------------------------------------------------
    def emit(self, event: dict[str, Any]) -> int:
        self.time += self.rng.randrange(10_000, 200_000)
        self.fh.write(orjson.dumps({"index": self.index, "time": self.time, **event}) + b"\n")
        self.index += 1
        return self.index - 1

    def init(self, process: int, tid: str) -> int:
        self.emit({"process": process, "type": INVOKE, "f": F_TXN_INIT, "transactional_id": tid})
        self.epoch[tid] = self.epoch.get(tid, -1) + 1
        return self.emit(
            {
                "process": process,
                "type": OK,
                "f": F_TXN_INIT,
                "transactional_id": tid,
                "producer_id": 7000 + sum(map(ord, tid)),
                "producer_epoch": self.epoch[tid],
            }
        )

    # -- one transaction ----------------------------------------------------------------
    def txn(
        self,
        process: int,
        tid: str,
        outcome: str,
        values: list[tuple[str, int, str]],
        *,
        landed: bool = False,
        copies: dict[str, str] | None = None,
        consumed: list[tuple[int, str]] | None = None,
        position: int | None = None,
        hide: int = -1,
        rc_visible: bool = False,
        report: bool = False,
        fenced_by: int | None = None,
    ) -> tuple[int, list[int]]:
        """One transaction of ``values`` (topic, partition, value). ``landed``: an
        ``info`` one that committed; ``hide``: the index of a value lost after it was
        written; ``consumed`` / ``position``: a copying step's input (offset, value) and
        the group position it commits; ``report``: the ``ok`` line gives every value's
        partition and offset (otherwise 70% of them, at random); ``fenced_by``: that
        process initialises ``tid`` while the transaction is open, before its commit is
        called (the producer paused inside it). Returns the completion's index and the
        values' offsets."""
        self.n += 1
        name = f"{process}-{self.n}"
        sends: list[dict[str, Any]] = []
        for t, _, v in values:
            s: dict[str, Any] = {"topic": t, "key": f"k{len(v) % 7}", "value": v}
            if copies and v in copies:
                s["copy_of"] = copies[v]
            sends.append(s)
        invoke: dict[str, Any] = {
            "process": process,
            "type": INVOKE,
            "f": F_TXN,
            "txn": name,
            "transactional_id": tid,
            "sends": sends,
        }
        if consumed is not None:
            invoke["consumed"] = [
                {"topic": self.input, "partition": 0, "offset": o, "value": v} for o, v in consumed
            ]
            invoke["offsets"] = {"group": COPIER_GROUP, "positions": [[self.input, 0, position]]}
        self.emit(invoke)
        if fenced_by is not None:
            self.init(fenced_by, tid)
        action = ACTION_ABORT if outcome == FAIL else ACTION_COMMIT
        self.emit({"process": process, "type": INVOKE, "f": F_TXN_END, "txn": name,
                   "action": action})  # fmt: skip
        committed = outcome == OK or (outcome == INFO and landed)
        offsets = []
        touched: set[tuple[str, int]] = set()
        for i, (t, p, v) in enumerate(values):
            flags = (_COMMITTED if committed else 0) | (_HIDDEN if i == hide else 0)
            flags |= _RC_VISIBLE if rc_visible else 0
            offsets.append(self.logs[(t, p)].append(v, flags))
            touched.add((t, p))
        for tp in sorted(touched):
            self.logs[tp].append(None, _COMMITTED if committed else 0)
        end: dict[str, Any] = {"process": process, "type": outcome, "f": F_TXN, "txn": name}
        if outcome == OK:
            done = []
            for (t, p, v), off in zip(values, offsets, strict=True):
                entry: dict[str, Any] = {"topic": t, "value": v}
                if report or self.rng.random() < 0.7:  # the client reported where it landed
                    entry["partition"], entry["offset"] = p, off
                done.append(entry)
            end["sends"] = done
        elif outcome == FAIL:
            end["aborted"] = "planned"
        else:
            end["error"] = "REQUEST_TIMED_OUT"
        i = self.emit(end)
        self.outcomes[outcome] += 1
        self.values += len(values)
        return i, offsets

    def producer_txn(self) -> None:
        p = self.rng.choice(self.producers)
        tid = f"{ID_PREFIX}{p}"
        if self.rng.random() < 0.03:
            self.init(p, tid)  # the producer initialises its own id again: no fencing
        outcome = self.rng.choice((OK, OK, OK, FAIL, INFO))
        values = [
            (self.topic, self.rng.randrange(self.partitions), f"{p}-{self.n + 1}-{k}")
            for k in range(self.rng.randint(1, self.max_sends))
        ]
        self.txn(p, tid, outcome, values, landed=self.rng.random() < 0.5)

    # -- plain input and the copier -------------------------------------------------------
    def send_inputs(self, k: int) -> None:
        log = self.logs[(self.input, 0)]
        for _ in range(k):
            value = f"0-{self.inputs}"
            self.inputs += 1
            self.emit({"process": 0, "type": INVOKE, "f": F_SEND, "topic": self.input,
                       "key": "k", "value": value})  # fmt: skip
            off = log.append(value, _COMMITTED)
            self.emit({"process": 0, "type": OK, "f": F_SEND, "topic": self.input,
                       "partition": 0, "offset": off, "value": value})  # fmt: skip

    def copy(self, chunk: list[int], outcome: str, *, landed: bool = False, skip: int = -1) -> int:
        """One copying transaction of the inputs at ``chunk`` (offsets), committing the
        position after them; ``skip``: an input consumed but not copied."""
        c = self.copier
        log = self.logs[(self.input, 0)]
        consumed = [(o, str(log.values[o])) for o in chunk]
        first = self.n + 1
        values, copies = [], {}
        for o, src in consumed:
            if o == skip:
                continue
            v = f"{c.process}-{first}-{o}"
            values.append((self.output, o % self.partitions, v))
            copies[v] = src
        i, _ = self.txn(c.process, c.tid, outcome, values, landed=landed, copies=copies,
                        consumed=consumed, position=chunk[-1] + 1)  # fmt: skip
        if outcome == OK or (outcome == INFO and landed):
            c.committed += [o for o in chunk if o != skip]
            c.pos = chunk[-1] + 1
        return i

    def copier_step(self) -> None:
        c = self.copier
        available = self.inputs - c.pos
        if available <= 0:
            self.send_inputs(self.rng.randint(1, 3))
            return
        size = min(available, self.rng.randint(1, 4))
        outcome = self.rng.choice((OK, OK, OK, FAIL, INFO))
        self.copy(list(range(c.pos, c.pos + size)), outcome, landed=self.rng.random() < 0.5)

    # -- readers --------------------------------------------------------------------------
    def assign(self) -> None:
        for r in self.readers:
            tps = sorted(self.logs)
            r.pos = dict.fromkeys(tps, 0)
            parts = [list(tp) for tp in tps]
            self.emit({"process": r.process, "type": OK, "f": F_ASSIGN, "partitions": parts,
                       "isolation": r.isolation})  # fmt: skip

    def poll(self, r: _Reader, limit: int = 20) -> None:
        records: list[dict[str, Any]] = []
        for tp, start in r.pos.items():
            log = self.logs[tp]
            end = min(len(log.values), start + limit)
            for off in range(start, end):
                v, flags = log.values[off], log.flags[off]
                if v is None or flags & _HIDDEN:
                    continue
                if r.isolation == READ_UNCOMMITTED or flags & (_COMMITTED | _RC_VISIBLE):
                    records.append({"topic": tp[0], "partition": tp[1], "offset": off, "value": v})
            r.pos[tp] = end
        self.emit({"process": r.process, "type": INVOKE, "f": F_POLL})
        self.emit({"process": r.process, "type": OK, "f": F_POLL, "records": records})

    def caught_up(self, r: _Reader) -> bool:
        return all(r.pos[tp] >= len(self.logs[tp].values) for tp in r.pos)

    # -- the drain ------------------------------------------------------------------------
    def drain(self, stuck: tuple[str, int] | None) -> dict[tuple[str, int], int]:
        """Every partition, read_committed; the index of each drain-end line."""
        ends = {}
        for tp in sorted(self.logs):
            log = self.logs[tp]
            batch: list[dict[str, Any]] = []
            for off, v in enumerate(log.values):
                flags = log.flags[off]
                if v is not None and flags & _COMMITTED and not flags & _HIDDEN:
                    batch.append({"topic": tp[0], "partition": tp[1], "offset": off, "value": v})
                if len(batch) >= _DRAIN_BATCH:
                    self.emit({"process": DRAIN, "type": OK, "f": F_DRAIN, "records": batch})
                    batch = []
            if batch:
                self.emit({"process": DRAIN, "type": OK, "f": F_DRAIN, "records": batch})
            hwm = len(log.values)
            # stuck: one below the end, where a control marker is (no value above it)
            lso = hwm - 1 if tp == stuck else hwm
            ends[tp] = self.emit({"process": DRAIN, "type": OK, "f": F_DRAIN_END,
                                  "topic": tp[0], "partition": tp[1], "log_start_offset": 0,
                                  "high_watermark": hwm, "isolation": READ_COMMITTED,
                                  "last_stable_offset": lso})  # fmt: skip
        return ends


def generate_txn(
    path: str | Path,
    *,
    events: int = 10_000,
    topic: str = "t",
    partitions: int = 3,
    producers: int = 3,
    max_sends: int = 4,
    seed: int = 0,
    inject: Sequence[str] = (),
) -> GeneratedHistory:
    """Write a transactional history of about ``events`` lines (plus the readers'
    catching up and the drain) to ``path``; ``inject`` names kinds of
    :data:`TXN_INJECTABLE`, each at most once."""
    unknown = [k for k in inject if k not in TXN_INJECTABLE]
    if unknown or len(set(inject)) != len(inject):
        raise ValueError(f"inject: unknown or repeated kinds {list(inject)}")
    if partitions < 1 or producers < 1 or max_sends < 1:
        raise ValueError("need at least 1 partition, 1 producer and max_sends >= 1")
    path = Path(path)
    g = TxnSim(path, seed, topic, partitions, producers, max_sends)
    try:
        _run(g, events, list(inject))
    finally:
        g.fh.close()
    return GeneratedHistory(
        path=path,
        events=g.index,
        sends=g.values + g.inputs,
        seed=seed,
        topic=topic,
        partitions=partitions,
        injected=tuple(g.injected),
        expected={inj.kind: 1 for inj in g.injected},
        expected_valid=not g.injected,
        outcomes=dict(g.outcomes),
    )


def _run(g: TxnSim, events: int, inject: list[str]) -> None:
    rng = g.rng
    for p in g.producers:
        g.init(p, f"{ID_PREFIX}{p}")
    g.init(g.copier.process, g.copier.tid)
    g.assign()
    # never an empty history (nothing acknowledged makes a verdict unknown): one committed
    # transaction and one committed copy first
    who = g.producers[0]
    g.txn(who, f"{ID_PREFIX}{who}", OK, [(g.topic, 0, f"{who}-{g.n + 1}-0")])
    _commit_a_copy(g)
    # injections in the middle, spaced out; hanging-transaction needs the drain
    todo = [k for k in inject if k != HANGING]
    gap = max(events // (3 * max(len(todo), 1)), 20)
    due = {events // 3 + i * gap: k for i, k in enumerate(todo)}
    while g.index < events:
        roll = rng.random()
        if roll < 0.45:
            g.producer_txn()
        elif roll < 0.6:
            g.send_inputs(rng.randint(1, 3))
        elif roll < 0.75:
            g.copier_step()
        else:
            g.poll(rng.choice(g.readers))
        for at in [a for a in due if a <= g.index]:
            _inject(g, due.pop(at))
    for at in sorted(due):  # injections the history was too short for
        _inject(g, due[at])
    for r in g.readers:
        while not g.caught_up(r):
            g.poll(r)
    stuck = None
    if HANGING in inject:
        # a topic of its own that no reader reads, so that the stuck partition leaves the
        # other kinds' judgement alone (a value is certainly missing only where every
        # partition of its topic was drained to its high watermark)
        stuck = (f"{g.topic}-hang", 0)
        g.logs[stuck] = _Log()
        who = g.producers[0]
        v = f"{who}-{g.n + 1}-hang"
        g.txn(who, f"{ID_PREFIX}{who}", OK, [(stuck[0], 0, v)], report=True)
    if stuck is not None or rng.random() < 0.2:
        g.time += (TIMEOUT_S + 1) * 1_000_000_000  # past the transaction timeout
    ends = g.drain(stuck)
    if stuck is not None:
        hwm = len(g.logs[stuck].values)
        g.injected.append(Injection(HANGING, stuck[0], stuck[1], None, hwm - 1, ends[stuck]))


def _commit_a_copy(g: TxnSim) -> None:
    if g.inputs <= g.copier.pos:
        g.send_inputs(1)
    g.copy([g.copier.pos], OK)


def _inject(g: TxnSim, kind: str) -> None:
    """Exactly one anomaly of ``kind``; its Injection names the key line."""
    p = g.rng.randrange(g.partitions)
    t = g.topic
    who = g.producers[0]
    tid = f"{ID_PREFIX}{who}"
    if kind == LOST_WRITE:  # committed, then gone
        v = f"{who}-{g.n + 1}-lost"
        i, offs = g.txn(who, tid, OK, [(t, p, v)], hide=0)
        g.injected.append(Injection(kind, t, p, v, offs[0], i))
    elif kind == ABORTED_READ:  # aborted, yet a read_committed reader gets it
        v = f"{who}-{g.n + 1}-aborted"
        i, offs = g.txn(who, tid, FAIL, [(t, p, v)], rc_visible=True)
        g.injected.append(Injection(kind, t, p, v, offs[0], i))
    elif kind == TORN:  # undecided, half of it in the log
        q = (p + 1) % g.partitions
        vs = [(t, p, f"{who}-{g.n + 1}-torn-0"), (t, q, f"{who}-{g.n + 1}-torn-1")]
        i, offs = g.txn(who, tid, INFO, vs, landed=True, hide=1)
        g.injected.append(Injection(kind, t, q, vs[1][2], offs[1], i))
    elif kind == ZOMBIE:  # another process takes the id while the old one is inside a
        # transaction (paused); the old one then calls commit, and it succeeds
        fencer = max(r.process for r in g.readers) + 1
        v = f"{who}-{g.n + 1}-zombie"
        i, offs = g.txn(who, tid, OK, [(t, p, v)], fenced_by=fencer)
        g.injected.append(Injection(kind, t, p, v, offs[0], i))
        g.init(who, tid)  # restarted, it takes its id back: its next commits are its own
    elif kind == EOS_DUPLICATE:  # an input copied and committed a second time
        if not g.copier.committed:
            _commit_a_copy(g)
        src = g.copier.committed[0]
        c = g.copier
        v = f"{c.process}-{g.n + 1}-dup"
        i, offs = g.txn(c.process, c.tid, OK, [(g.output, 0, v)],
                        copies={v: str(g.logs[(g.input, 0)].values[src])},
                        consumed=[(src, str(g.logs[(g.input, 0)].values[src]))],
                        position=c.pos)  # fmt: skip
        g.injected.append(Injection(kind, g.output, 0, v, offs[0], i))
    elif kind == EOS_LOST:  # two inputs consumed, one copied, the position past both
        c = g.copier
        if g.inputs - c.pos < 2:
            g.send_inputs(2 - (g.inputs - c.pos))
        skip = c.pos + 1
        at = g.copy([c.pos, skip], OK, skip=skip)
        lost = str(g.logs[(g.input, 0)].values[skip])
        g.injected.append(Injection(kind, g.input, 0, lost, skip, at))
