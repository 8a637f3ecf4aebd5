"""One streaming pass over history.jsonl into :class:`Facts`, validating as it goes.

Bad input raises :class:`HistoryError` naming file, line (1-based) and field. A last line
that is torn (no trailing newline and not parseable) is ignored with a warning.

The loop is written flat, with locals instead of attribute look-ups, because it runs once
per line and once per record: on a million-line history it must cost less than the
standard json module's parsing alone.
"""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

from kchaos.harness.checker.facts import (
    FAIL,
    INFO,
    OK,
    PENDING,
    READ_ONLY,
    TP_BITS,
    DrainEnd,
    Facts,
)
from kchaos.harness.checker.nogc import paused_gc
from kchaos.harness.checker.txnfacts import READ_COMMITTED
from kchaos.harness.checker.txnparse import isolation, txn, txn_end, txn_init
from kchaos.harness.checker.validate import bad_record, metadata, record_fault
from kchaos.harness.errors import shown
from kchaos.harness.rundir.history import (
    F_ASSIGN,
    F_DRAIN,
    F_DRAIN_END,
    F_FAULT,
    F_METADATA,
    F_POLL,
    F_SEND,
    F_TXN,
    F_TXN_END,
    F_TXN_INIT,
    INVOKE,
    TYPES,
    numbered,
)
from kchaos.harness.rundir.runjson import acks_is_all
from kchaos.harness.rundir.where import LineCursor

_TYPES = TYPES


def read_history(path: str | Path) -> Facts:
    """Read and validate ``path`` into :class:`Facts` in one pass (the cyclic garbage
    collector paused: see :mod:`.nogc`)."""
    name = str(path)
    with paused_gc():
        facts = _read(path, name, LineCursor(name))
    facts.trim()
    return facts


def _read(path: str | Path, name: str, where: LineCursor) -> Facts:  # noqa: C901 - the hot loop is kept in one place
    facts = Facts(path=name)
    torn: list[str] = []
    values = facts.values
    vget = values.get
    tp_of = facts.tp
    tp_ids = facts.tp_ids
    topic_ids = facts.topic_ids
    value_list = facts.value_list
    polled, drained = facts.polled, facts.drained
    status = facts.status
    inv_index, inv_time, topic_col = facts.inv_index, facts.inv_time, facts.topic
    comp_index, ack_tp, ack_off = facts.comp_index, facts.ack_tp, facts.ack_off
    comp_time = facts.comp_time
    acks_col, epoch_col = facts.acks_all, facts.epoch
    first, dtp = facts.first, facts.drained_tp
    epoch_counts, epoch_latency = facts.epoch_counts, facts.epoch_latency
    acked_vid = facts.acked_vid
    read_conflicts = facts.read_conflicts
    gap = facts.gaps.append  # a transactional reader's polls jump over every control marker
    place, drained_in, new_value = facts.place, facts.drained_in, facts.new_value
    pending_poll: dict[Any, int] = {}
    read_committed: set[Any] = set()  # processes whose last assign was read_committed
    txn_of, rc_read = facts.txn.txn_of, facts.txn.rc_read
    stretches: dict[Any, dict[int, int]] = {}
    last_obs: dict[int, tuple[int, int, list[int], list[int] | None]] = {}
    open_faults: dict[str, int] = {}
    n_send = n_ok = n_fail = n_info = n_poll = n_records = n_drained = n_meta = n_fault = 0
    last_index = -1
    last_time = 0
    epoch = 0
    no = 0
    bits = TP_BITS
    ev: Any
    try:
        # Strict: a line that is not JSON is bad input; a torn last line ends the stream.
        for no, ev in numbered(path, strict=True, on_torn=torn.append):
            try:
                index = ev["index"]
                time = ev["time"]
                typ = ev["type"]
                f = ev["f"]
                proc = ev["process"]
            except KeyError as exc:
                where.at(no).fail("missing field", str(exc.args[0]))
            except TypeError:  # a list, string or number, not an object
                where.at(no).fail("expected a JSON object")
            if type(index) is not int or index <= last_index:
                where.at(no).expect(ev, "index", int)
                where.fail(f"index {index} not greater than the previous {last_index}", "index")
            if type(time) is not int or time < last_time:
                where.at(no).expect(ev, "time", int)
                where.fail(f"time {time} earlier than the previous {last_time}", "time")
            if typ.__class__ is not str or typ not in _TYPES:
                where.at(no).expect(ev, "type", str)
                where.fail(f"unknown type {shown(typ)}", "type")
            if type(proc) is not int and type(proc) is not str:
                where.at(no).expect(ev, "process", (int, str))
            last_index = index
            last_time = time

            if f == F_SEND:
                value = ev.get("value")
                if type(value) is not str:
                    where.at(no).expect(ev, "value", str)
                vid = vget(value)
                if typ == INVOKE:
                    topic = ev.get("topic")
                    if type(topic) is not str:
                        where.at(no).expect(ev, "topic", str)
                    tid = topic_ids.get(topic)
                    if tid is None:
                        tid = facts.topic_id(topic)
                    n_send += 1
                    if vid is None:
                        vid = len(value_list)
                        if vid >= facts.capacity:
                            facts.grow()
                        values[value] = vid
                        value_list.append(value)
                    elif status[vid] != READ_ONLY:
                        where.at(no).fail(
                            f"value {shown(value)} sent twice (first at index {inv_index[vid]})",
                            "value",
                        )
                    status[vid] = PENDING
                    inv_index[vid] = index
                    inv_time[vid] = time
                    topic_col[vid] = tid
                    epoch_col[vid] = epoch
                    if "acks" in ev:
                        acks_col[vid] = 1 if acks_is_all(ev["acks"]) else 0
                    continue
                if vid is None or status[vid] != PENDING:
                    where.at(no).fail(
                        f"{typ} of a send without an invoke (value {shown(value)})", "value"
                    )
                comp_index[vid] = index
                comp_time[vid] = time
                e = epoch_col[vid]
                if typ == "ok":
                    part = ev.get("partition")
                    off = ev.get("offset")
                    # offset -1: the client reported none (acks=0); no position at all
                    if type(part) is not int or type(off) is not int or part < 0 or off < -1:
                        where.at(no).natural(ev, "partition")
                        if where.expect(ev, "offset", int) < -1:
                            where.fail(f"must be -1 (none) or more, got {off}", "offset")
                    topic = ev.get("topic")
                    if topic is None:
                        topic = facts.topics[topic_col[vid]]
                    elif type(topic) is not str:
                        where.at(no).expect(ev, "topic", str)
                    tp = tp_ids.get((topic, part))
                    if tp is None:
                        tp = tp_of(topic, part)
                    status[vid] = OK
                    ack_tp[vid] = tp
                    ack_off[vid] = off
                    n_ok += 1
                    epoch_counts[e][0] += 1
                    epoch_latency[e].append(time - inv_time[vid])
                    acked_vid[tp].append(vid)
                elif typ == "fail":
                    status[vid] = FAIL
                    n_fail += 1
                    epoch_counts[e][1] += 1
                else:
                    status[vid] = INFO
                    n_info += 1
                    epoch_counts[e][2] += 1
            elif f == F_POLL:
                if typ == INVOKE:
                    pending_poll[proc] = index
                    continue
                if pending_poll.pop(proc, None) is None:
                    where.at(no).fail(
                        f"poll {typ} without an invoke (process {shown(proc)})", "process"
                    )
                if typ != "ok":
                    continue
                n_poll += 1
                stretch = stretches.get(proc)
                if stretch is None:
                    stretch = stretches[proc] = {}
                records = ev.get("records")
                if type(records) is not list:
                    where.at(no).expect(ev, "records", list)
                n_records += len(records)
                lt: Any = None
                lp: Any = None
                tp = -1
                m: dict[int, int] = {}
                dm: dict[int, int] = {}
                last = -1
                # 1.2: the transaction values a read_committed poll got
                rc = proc in read_committed and bool(txn_of)
                for rec in records:
                    try:
                        t = rec["topic"]
                        p = rec["partition"]
                        off = rec["offset"]
                        v = rec["value"]
                    except (KeyError, TypeError):
                        bad_record(where.at(no), rec)
                    if type(off) is not int or off < 0 or type(v) is not str:
                        bad_record(where.at(no), rec)
                    if p != lp or t != lt:
                        if type(p) is not int or p < 0 or type(t) is not str:
                            bad_record(where.at(no), rec)
                        if tp >= 0:
                            stretch[tp] = last
                        tp = tp_ids.get((t, p))
                        if tp is None:
                            tp = tp_of(t, p)
                        lt, lp = t, p
                        m = polled[tp]
                        dm = drained[tp]
                        last = stretch.get(tp, -1)
                    vid = vget(v)
                    if vid is None:
                        vid = new_value(v)
                    if rc and vid in txn_of:
                        rc_read.add(vid)
                    old = m.get(off)
                    if old is None:
                        m[off] = vid
                        packed = (off << bits) | tp
                        r = first[vid]
                        if r < 0:
                            first[vid] = packed
                        elif r != packed:
                            place(vid, packed)
                        if dm:
                            other = dm.get(off)
                            if other is not None and other != vid:
                                read_conflicts.setdefault(packed, {other}).add(vid)
                    elif old != vid:
                        packed = (off << bits) | tp
                        read_conflicts.setdefault(packed, {old}).add(vid)
                        facts.poll_conflicts.append((tp, off, vid))
                        place(vid, packed)
                    if last >= 0:
                        if off <= last:
                            facts.backwards.append((proc, tp, last, off, index))
                        elif off != last + 1:
                            gap((proc, tp, last, off, index))
                    last = off
                if tp >= 0:
                    stretch[tp] = last
            elif f == F_TXN:  # 1.2; as frequent as sends in a transactional history
                txn(facts, where.at(no), ev, proc, typ)
            elif f == F_DRAIN:
                if typ != "ok":
                    continue
                records = ev.get("records")
                if type(records) is not list:
                    where.at(no).expect(ev, "records", list)
                n_drained += len(records)
                lt = lp = None
                tp = -1
                m = {}
                pm: dict[int, int] = {}
                for rec in records:
                    try:
                        t = rec["topic"]
                        p = rec["partition"]
                        off = rec["offset"]
                        v = rec["value"]
                    except (KeyError, TypeError):
                        bad_record(where.at(no), rec)
                    if type(off) is not int or off < 0 or type(v) is not str:
                        bad_record(where.at(no), rec)
                    if p != lp or t != lt:
                        if type(p) is not int or p < 0 or type(t) is not str:
                            bad_record(where.at(no), rec)
                        tp = tp_ids.get((t, p))
                        if tp is None:
                            tp = tp_of(t, p)
                        lt, lp = t, p
                        m = drained[tp]
                        pm = polled[tp]
                    vid = vget(v)
                    if vid is None:
                        vid = new_value(v)
                    old = m.get(off)
                    if old is None:
                        m[off] = vid
                        packed = (off << bits) | tp
                        r = first[vid]
                        if r < 0:
                            first[vid] = packed
                        elif r != packed:
                            place(vid, packed)
                        d = dtp[vid]
                        if d != tp:
                            if d == -1:  # the usual case of Facts.drained_in, inlined
                                dtp[vid] = tp
                            else:
                                drained_in(vid, tp)
                        other = pm.get(off)
                        if other is not None and other != vid:
                            read_conflicts.setdefault(packed, {other}).add(vid)
                    elif old != vid:
                        packed = (off << bits) | tp
                        read_conflicts.setdefault(packed, {old}).add(vid)
                        place(vid, packed)
                        drained_in(vid, tp)
            elif f == F_TXN_INIT:
                txn_init(facts, where.at(no), ev, proc, typ)
            elif f == F_TXN_END:  # 1.3: one per transaction, before its commit or abort
                txn_end(facts, where.at(no), ev, proc, typ)
            elif f == F_METADATA:
                if typ != "ok":
                    continue
                metadata(facts, where.at(no), ev, index, time, last_obs)
                n_meta += 1
            elif f == F_ASSIGN:
                if typ != "ok":
                    continue
                parts = where.at(no).expect(ev, "partitions", list)
                for pair in parts:
                    if (
                        type(pair) is not list
                        or len(pair) != 2
                        or type(pair[0]) is not str
                        or type(pair[1]) is not int
                        or pair[1] < 0
                    ):
                        where.fail(f"expected [topic, partition], got {shown(pair)}", "partitions")
                stretches[proc] = {}  # a new stretch of reading for every partition
                stated = isolation(where, ev)
                facts.txn.isolation_of[proc] = stated
                if stated == READ_COMMITTED:
                    read_committed.add(proc)
                else:
                    read_committed.discard(proc)
            elif f == F_DRAIN_END:
                if typ != "ok":
                    continue
                where.at(no)
                topic = where.expect(ev, "topic", str)
                part = where.natural(ev, "partition")
                lso = where.natural(ev, "log_start_offset")
                hwm = where.natural(ev, "high_watermark")
                if lso > hwm:
                    where.fail(
                        f"log start offset {lso} above the high watermark {hwm}", "log_start_offset"
                    )
                iso = isolation(where, ev) if "isolation" in ev else None
                if iso is not None:
                    facts.txn.drain_isolation.add(iso)
                stable = None
                if "last_stable_offset" in ev:
                    stable = where.natural(ev, "last_stable_offset")
                    if stable > hwm:
                        where.fail(
                            f"last stable offset {stable} above the high watermark {hwm}",
                            "last_stable_offset",
                        )
                facts.drain_ends[tp_of(topic, part)] = DrainEnd(lso, hwm, index, time, iso, stable)
            elif f == F_FAULT:
                if record_fault(facts, where.at(no), ev, index, time, open_faults):
                    epoch = len(facts.epoch_faults) - 1
                    facts.epoch_counts.append([0, 0, 0])
                    facts.epoch_latency.append(array("q"))
                n_fault += 1
            elif type(f) is not str:
                where.at(no).expect(ev, "f", str)
    except OverflowError:  # a 64-bit number that a position or an array cannot hold
        where.at(no).fail("a number is out of range (offsets, indexes and times are 64-bit)")

    if torn:
        facts.warnings.extend(torn)
        no += 1  # the torn line counts as read
    facts.lines = no
    facts.last_time = last_time
    facts.counts = {
        "send": n_send,
        "ok": n_ok,
        "fail": n_fail,
        "info": n_info,
        "poll": n_poll,
        "records": n_records,
        "drained": n_drained,
        "metadata": n_meta,
        "fault": n_fault,
    }
    if facts.txn:
        log = facts.txn
        facts.counts["txn"] = len(log.txns)
        facts.counts["txn_values"] = len(log.txn_of)
        facts.counts["txn_init"] = len(log.inits)
    return facts
