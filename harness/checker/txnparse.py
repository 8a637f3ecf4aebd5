"""The history pass's reading of transaction lines: ``txn-init``, ``txn``, isolation
(format 1.2), ``txn-end`` and a copier's reads (1.3).

Each function validates one line and records it in :class:`~.facts.Facts`; bad input
raises HistoryError naming file, line and field, like the rest of the pass. In a
transactional history ``txn`` lines are as many as sends are in a plain one, so their
invoke and completion are written like the pass's own loop (locals, the generic field
checks only once something is wrong); ``txn-init`` and isolation are rare and plain.
"""

from __future__ import annotations

from typing import Any, NoReturn

from kchaos.harness.checker import facts as fx
from kchaos.harness.checker.facts import Facts
from kchaos.harness.checker.txnfacts import (
    ISOLATIONS,
    READ_UNCOMMITTED,
    Consumed,
    Txn,
    TxnEnd,
    TxnInit,
)
from kchaos.harness.errors import shown
from kchaos.harness.rundir.history import ACTION_COMMIT, ACTIONS, FAIL, INFO, INVOKE, OK
from kchaos.harness.rundir.where import LineCursor

_STATUS = {OK: fx.OK, FAIL: fx.FAIL, INFO: fx.INFO}


def isolation(where: LineCursor, ev: dict[str, Any]) -> str:
    """An ``assign`` or ``drain-end`` line's isolation (absent: read_uncommitted)."""
    if "isolation" not in ev:
        return READ_UNCOMMITTED
    value = where.expect(ev, "isolation", str)
    if value not in ISOLATIONS:
        where.fail(
            f"unknown isolation {shown(value)} (read_committed or read_uncommitted)", "isolation"
        )
    return str(value)


def _optional_int(where: LineCursor, ev: dict[str, Any], key: str) -> int | None:
    if key not in ev or ev[key] is None:
        return None
    return int(where.expect(ev, key, int))


def txn_init(facts: Facts, where: LineCursor, ev: dict[str, Any], proc: Any, typ: str) -> None:
    """``init_transactions()``: an ``ok`` one fences every earlier producer of its id."""
    log = facts.txn
    log.last_time = ev["time"]
    if typ != OK and "transactional_id" not in ev:
        return  # only the ok line must name the id: it is the one that fences
    tid = where.expect(ev, "transactional_id", str)
    log.init_ids[proc] = tid
    if typ != OK:
        return
    log.inits.append(
        TxnInit(
            tid,
            proc,
            ev["index"],
            ev["time"],
            _optional_int(where, ev, "producer_id"),
            _optional_int(where, ev, "producer_epoch"),
        )
    )


def txn(facts: Facts, where: LineCursor, ev: dict[str, Any], proc: Any, typ: str) -> None:
    """One transaction's invoke or completion, matched by its ``txn`` id."""
    txn_id = ev.get("txn")
    if type(txn_id) is not str:
        txn_id = str(where.expect(ev, "txn", (str, int)))
    facts.txn.last_time = ev["time"]
    if typ == INVOKE:
        _invoke(facts, where, ev, proc, txn_id)
    else:
        _complete(facts, where, ev, typ, txn_id)


def txn_end(facts: Facts, where: LineCursor, ev: dict[str, Any], proc: Any, typ: str) -> None:
    """``txn-end`` (1.3): the client is about to call commit or abort of an open
    transaction. The first one with action commit is where its commit was called."""
    if typ != INVOKE:
        where.fail(f"a txn-end line is an invoke, got type {shown(typ)}", "type")
    txn_id = ev.get("txn")
    if type(txn_id) is not str:
        txn_id = str(where.expect(ev, "txn", (str, int)))
    action = where.expect(ev, "action", str)
    if action not in ACTIONS:
        where.fail(f"unknown action {shown(action)} (commit or abort)", "action")
    log = facts.txn
    pos = log.pending.get(txn_id)
    if pos is None:
        where.fail(f"txn-end of a transaction that is not open ({shown(txn_id)})", "txn")
    if action == ACTION_COMMIT:
        log.commit_called.setdefault(pos, ev["index"])


def _invoke(facts: Facts, where: LineCursor, ev: dict[str, Any], proc: Any, txn_id: str) -> None:
    # Written flat, with locals, like the history pass's loop: a transactional history
    # has one of these per transaction and one turn of the inner loop per value sent.
    log = facts.txn
    if txn_id in log.pending:
        first = log.txns[log.pending[txn_id]].invoke_index
        where.fail(f"transaction {shown(txn_id)} invoked again (open since index {first})", "txn")
    tid = ev.get("transactional_id")
    if type(tid) is not str:
        if "transactional_id" in ev:
            where.expect(ev, "transactional_id", str)  # raises: present but not a string
        if proc not in log.init_ids:
            where.fail("missing field (and the process has no txn-init before)", "transactional_id")
        tid = log.init_ids[proc]
    consumed = _consumed(facts, where, ev, proc) if "consumed" in ev else ()
    group, positions = _offsets(where, ev) if "offsets" in ev else (None, ())
    sends = ev.get("sends")
    if type(sends) is not list:
        where.expect(ev, "sends", list)
    if not sends:
        where.fail("a transaction without sends", "sends")
    index, time = ev["index"], ev["time"]
    pos = len(log.txns)
    vids = []
    values, value_list = facts.values, facts.value_list
    vget, status, txn_of = values.get, facts.status, log.txn_of
    inv_index, inv_time, topic_col = facts.inv_index, facts.inv_time, facts.topic
    topic_ids = facts.topic_ids
    read_only, txn_open = fx.READ_ONLY, fx.TXN_OPEN
    last_topic: str | None = None
    topic_no = -1
    for send in sends:
        try:
            topic = send["topic"]
            value = send["value"]
        except (TypeError, KeyError):
            topic = value = None
        if type(topic) is not str or type(value) is not str:
            if type(send) is not dict:
                where.fail(f"expected a send object, got {shown(send)}", "sends")
            _field(where, send, "topic", str)
            _field(where, send, "value", str)
        vid = vget(value)
        if vid is None:  # a new value's row (Facts.new_value, inlined)
            vid = len(value_list)
            if vid >= facts.capacity:
                facts.grow()
            values[value] = vid
            value_list.append(value)
        elif status[vid] != read_only:
            where.fail(
                f"value {shown(value)} sent twice (first at index {inv_index[vid]})",
                "sends.value",
            )
        status[vid] = txn_open
        inv_index[vid] = index
        inv_time[vid] = time
        if topic != last_topic:  # a transaction's sends mostly share their topic
            known = topic_ids.get(topic)
            topic_no = facts.topic_id(topic) if known is None else known
            last_topic = topic
        topic_col[vid] = topic_no
        txn_of[vid] = pos
        vids.append(vid)
        if "partition" in send:  # the producer chose the partition itself
            part = _field(where, send, "partition", int)
            if part < 0:
                where.fail(f"must not be negative, got {part}", "sends.partition")
            facts.ack_tp[vid] = facts.tp(topic, part)
        if "copy_of" in send:
            source = _field(where, send, "copy_of", str)
            if source not in log.consumed:
                where.fail(
                    f"copy_of names {shown(source)}, which no transaction consumed",
                    "sends.copy_of",
                )
            log.copy_of[vid] = source
    log.txns.append(
        Txn(txn_id, tid, proc, index, time, tuple(vids), tuple(consumed), group, positions)
    )
    log.pending[txn_id] = pos


def _complete(facts: Facts, where: LineCursor, ev: dict[str, Any], typ: str, txn_id: str) -> None:
    log = facts.txn
    pos = log.pending.pop(txn_id, None)
    if pos is None:
        where.fail(f"{typ} of a transaction without an invoke ({shown(txn_id)})", "txn")
    index, time = ev["index"], ev["time"]
    log.ends[pos] = TxnEnd(typ, index, time)
    status = _STATUS[typ]
    st, ci, ct = facts.status, facts.comp_index, facts.comp_time
    for v in log.txns[pos].vids:
        st[v] = status
        ci[v] = index
        ct[v] = time
    if typ != OK:
        return
    sends = ev.get("sends")
    if type(sends) is not list:
        if "sends" not in ev:
            return
        sends = where.expect(ev, "sends", list)  # raises: present but not a list
    vget, tp_ids, txn_of = facts.values.get, facts.tp_ids, log.txn_of
    ack_tp, ack_off, acked_vid = facts.ack_tp, facts.ack_off, facts.acked_vid
    for send in sends:
        try:
            value = send["value"]
        except (TypeError, KeyError):
            value = None
        if type(value) is not str:
            if type(send) is not dict:
                where.fail(f"expected a send object, got {shown(send)}", "sends")
            _field(where, send, "value", str)
        vid = vget(value)
        if vid is None or txn_of.get(vid) != pos:
            where.fail(f"value {shown(value)} is not one of transaction {shown(txn_id)}'s", "sends")
        part = send.get("partition")
        if part is None:
            continue  # the client did not say where it went
        topic = send.get("topic")
        if topic is None:
            topic = facts.topics[facts.topic[vid]]
        elif type(topic) is not str:
            _field(where, send, "topic", str)
        if type(part) is not int or part < 0:
            _field(where, send, "partition", int)
            where.fail(f"must not be negative, got {part}", "sends.partition")
        tp = tp_ids.get((topic, part))
        if tp is None:
            tp = facts.tp(topic, part)
        ack_tp[vid] = tp
        off = send.get("offset")
        if off is None:
            continue
        if type(off) is not int or off < -1:
            where.fail(f"expected -1 (none) or an offset, got {shown(off)}", "sends.offset")
        if off >= 0:
            ack_off[vid] = off
            acked_vid[tp].append(vid)


def _field(where: LineCursor, obj: dict[str, Any], key: str, kind: type) -> Any:
    """``obj[key]`` of a nested object; the field is named ``sends.<key>``."""
    if key not in obj:
        where.fail("a send lacks this field", f"sends.{key}")
    value = obj[key]
    if type(value) is not kind:
        where.fail(f"expected {kind.__name__}, got {shown(value, 60)}", f"sends.{key}")
    return value


def _consumed(facts: Facts, where: LineCursor, ev: dict[str, Any], proc: Any) -> list[Consumed]:
    """A copying step's input records. Their values are added to the log's consumed
    ones, and (1.3) each is a read by ``proc`` at the isolation of its latest assign
    line (read_committed where none), judged as a poll's records are."""
    seen = facts.txn.consumed
    rc = facts.txn.reads_committed(proc)
    txn_of, rc_read = facts.txn.txn_of, facts.txn.rc_read
    out = []
    for rec in where.expect(ev, "consumed", list):
        try:
            t, p, o, v = rec["topic"], rec["partition"], rec["offset"], rec["value"]
            good = (type(t) is str and type(p) is int and type(o) is int and type(v) is str) and (
                p >= 0 and o >= 0
            )
        except (TypeError, KeyError):
            good = False
        if not good:
            _bad_consumed(where, rec)
        out.append(Consumed(t, p, o, v))
        seen.add(v)
        vid = facts.values.get(v)
        if vid is None:
            vid = facts.new_value(v)
        if rc and vid in txn_of:
            rc_read.add(vid)
        facts.read_at(facts.tp(t, p), o, vid)
    return out


def _bad_consumed(where: LineCursor, rec: Any) -> NoReturn:
    if type(rec) is not dict:
        where.fail(f"expected a record object, got {shown(rec)}", "consumed")
    for key, kind in (("topic", str), ("partition", int), ("offset", int), ("value", str)):
        if key not in rec:
            where.fail("a record lacks this field", f"consumed.{key}")
        if type(rec[key]) is not kind or (kind is int and rec[key] < 0):
            where.fail(f"bad {key}: {shown(rec[key], 60)}", f"consumed.{key}")
    where.fail("bad record", "consumed")


def _offsets(
    where: LineCursor, ev: dict[str, Any]
) -> tuple[str | None, tuple[tuple[str, int, int], ...]]:
    if "offsets" not in ev:
        return None, ()
    offsets = where.expect(ev, "offsets", dict)
    group = offsets.get("group")
    if type(group) is not str:
        where.fail(f"expected a group name, got {shown(group)}", "offsets.group")
    positions = offsets.get("positions", [])
    if type(positions) is not list:
        where.fail(f"expected a list, got {shown(positions)}", "offsets.positions")
    out = []
    for p in positions:
        if (
            type(p) is not list
            or len(p) != 3
            or type(p[0]) is not str
            or type(p[1]) is not int
            or type(p[2]) is not int
            or p[1] < 0
            or p[2] < 0
        ):
            where.fail(
                f"expected [topic, partition, next offset], got {shown(p)}", "offsets.positions"
            )
        out.append((p[0], p[1], p[2]))
    return group, tuple(out)
