"""Transactions and exactly-once (history format 1.2, and 1.3's "Transactions in full").

Judges ``torn-transaction``, ``zombie-commit``, ``hanging-transaction``, ``eos-duplicate``
and ``eos-lost``, and the parts of ``lost-write``, ``unseen`` and ``aborted-read`` that
only a transaction has:

- ``lost-write`` / ``unseen`` of a committed value whose ``ok`` line gave no offset (a
  value with an offset is acknowledged like a send: the durability checker judges it);
- ``aborted-read`` of an aborted transaction's value returned to a ``read_committed``
  reader (the reads checker leaves transaction values alone).

Where a value is: in a completed drain (IN), certainly not (OUT), or not known (its
partition was not drained completely, or its offset lies below the drain's log start).
A value with no partition reported (format 1.3's rule) is OUT only when every partition
of its topic named in the history was drained completely (log start 0, last stable
offset equal to the high watermark) and none held it; the Spark job applies the same.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from kchaos.harness.checker.durability import judge_acked
from kchaos.harness.checker.facts import Facts, unpack
from kchaos.harness.checker.model import CheckOutcome
from kchaos.harness.checker.sources import HISTORY, Source
from kchaos.harness.checker.txnfacts import OUTCOMES, Txn, TxnLog
from kchaos.harness.rundir.anomalies import TXN_EXTENDED, TXN_KINDS
from kchaos.harness.rundir.history import FAIL, OK
from kchaos.harness.rundir.runjson import RunSettings

IN, OUT, UNDRAINED, UNKNOWN = "in", "out", "undrained", "unknown"
#: Reports one anomaly of a transaction (example None: counted by another checker).
Found = Callable[[str, Txn, "dict[str, Any] | None"], None]
_NS_PER_MS = 1_000_000

SOURCES = (Source(HISTORY, (*TXN_EXTENDED, "unseen", *TXN_KINDS)),)


def check_transactions(facts: Facts, config: RunSettings) -> CheckOutcome:
    out = CheckOutcome("transactions")
    out.read(HISTORY)
    log = facts.txn
    if not log:
        out.stats = _stats(log, Counter(), {}, log.outcomes())
        return out.settle()
    if log.txns and facts.drain_ends and not log.drain_read_committed:
        facts.warnings.append(
            "transactions recorded but the drain read read_uncommitted: aborted values in"
            " it count as present, and no aborted-read is judged from it"
        )
    places = Places(facts)
    by_tid: dict[str, Counter[str]] = defaultdict(Counter)

    def found(kind: str, t: Txn, example: dict[str, Any] | None) -> None:
        """One anomaly of ``t``; ``example`` None: another checker counts it, it is
        only attributed to the transactional id here."""
        if example is not None:
            out.anomaly(kind).add(example)
        by_tid[t.transactional_id][kind] += 1

    outcome_of = log.outcomes()  # by position in log.txns
    _values(facts, log, places, outcome_of, found)
    _torn(facts, log, places, found)
    _zombies(log, outcome_of, found)
    hanging = _hanging(facts, log, config, out)
    eos = _eos(facts, log, places, outcome_of, found)
    values = Counter(map(outcome_of.__getitem__, log.txn_of.values()))
    out.stats = _stats(log, values, by_tid, outcome_of)
    out.stats["hanging_partitions"] = hanging
    out.stats["eos"] = eos
    out.stats["transaction_timeout_ms"] = config.transaction_timeout_ms
    return out.settle()


class Places:
    """Where each transaction value is, relative to the completed drains."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        parts: dict[str, list[int]] = defaultdict(list)
        for tp, (topic, _) in enumerate(facts.tps):
            parts[topic].append(tp)
        ends = facts.drain_ends
        # topics every one of whose partitions (named in the history) was drained
        # completely: a value of theirs whose partition is unknown can be judged missing
        self.whole = {
            t for t, tps in parts.items() if all(tp in ends and ends[tp].whole for tp in tps)
        }

    def of(self, vid: int) -> str:
        f = self.facts
        ends = f.drain_ends
        d = f.drained_tp[vid]
        if (d >= 0 and d in ends) or (d == -2 and any(tp in ends for tp in f.drained_tps[vid])):
            return IN
        tp = f.ack_tp[vid]
        if tp >= 0:
            end = ends.get(tp)
            if end is None:
                return UNDRAINED
            off = f.ack_off[vid]
            if off >= 0:  # judged as durability judges it: lost at or above the watermark
                seen = off >= end.log_start_offset and not (
                    end.readable_end <= off < end.high_watermark
                )
            else:
                seen = end.log_start_offset == 0 and end.readable_end == end.high_watermark
            return OUT if seen else UNKNOWN
        return OUT if f.topics[f.topic[vid]] in self.whole else UNDRAINED


def _example(t: Txn, log: TxnLog, pos: int, **extra: Any) -> dict[str, Any]:
    end = log.ends.get(pos)
    return {
        "txn": t.txn,
        "transactional_id": t.transactional_id,
        "outcome": log.outcome(pos),
        "process": t.process,
        **extra,
        "index": [t.invoke_index] + ([end.index] if end else []),
    }


def _value_example(facts: Facts, log: TxnLog, vid: int) -> dict[str, Any]:
    pos = log.txn_of[vid]
    where: dict[str, Any] = {}
    if facts.first[vid] >= 0:
        where = facts.where(*unpack(facts.first[vid]))
    elif facts.ack_tp[vid] >= 0:
        off = facts.ack_off[vid]
        where = facts.where(facts.ack_tp[vid], off if off >= 0 else None)
    else:
        where = {"topic": facts.topics[facts.topic[vid]]}
    return _example(log.txns[pos], log, pos, value=facts.value_list[vid], **where)


def _values(facts: Facts, log: TxnLog, places: Places, outcome_of: list[str], found: Found) -> None:
    """lost-write, unseen and aborted-read of single transaction values."""
    drain_rc = log.drain_read_committed
    txns, rc_read = log.txns, log.rc_read
    ack_off, ack_tp, first, drained_tp = facts.ack_off, facts.ack_tp, facts.first, facts.drained_tp
    for vid, pos in log.txn_of.items():
        outcome = outcome_of[pos]
        if outcome == OK:
            off, tp = ack_off[vid], ack_tp[vid]
            if off >= 0:  # judged by the durability checker; attributed here
                kind = judge_acked(facts, vid, tp, off)
                if kind == "lost-write":
                    found(kind, txns[pos], None)
                continue
            place = places.of(vid)
            if place == OUT:
                found("lost-write", txns[pos], _value_example(facts, log, vid))
            elif first[vid] < 0 and (place == UNDRAINED or _stuck(facts, tp)):
                found("unseen", txns[pos], _value_example(facts, log, vid))
        elif outcome == FAIL and (vid in rc_read or (drain_rc and drained_tp[vid] != -1)):
            found("aborted-read", txns[pos], _value_example(facts, log, vid))


def _stuck(facts: Facts, tp: int) -> bool:
    """The drain of ``tp`` ended at a last stable offset below the high watermark."""
    end = facts.drain_ends.get(tp) if tp >= 0 else None
    return end is not None and end.readable_end < end.high_watermark


def _torn(facts: Facts, log: TxnLog, places: Places, found: Found) -> None:
    """torn-transaction: some values in the completed drains, some certainly not."""
    values = facts.value_list
    of = places.of
    for pos, t in enumerate(log.txns):
        if len(t.vids) < 2:
            continue  # one value cannot be both in the drains and certainly not
        seen: list[str] = []
        missing: list[str] = []
        for vid in t.vids:
            place = of(vid)
            if place == IN:
                seen.append(values[vid])
            elif place == OUT:
                missing.append(values[vid])
        if seen and missing:
            ex = _example(t, log, pos, values=seen + missing, drained=seen, missing=missing)
            found("torn-transaction", t, ex)


def _zombies(log: TxnLog, outcome_of: list[str], found: Found) -> None:
    """zombie-commit: committed although its commit was called (its ``txn-end``, or its
    invoke where it has none) after another process's init of its id had completed ok.
    A commit called before that init and acknowledged after it is not one."""
    inits: dict[str, tuple[list[int], list[Any]]] = {}
    for init in log.inits:  # in history order: indexes ascending
        at, who = inits.setdefault(init.transactional_id, ([], []))
        at.append(init.index)
        who.append(init.process)
    for pos, t in enumerate(log.txns):
        if outcome_of[pos] != OK or t.transactional_id not in inits:
            continue
        at, who = inits[t.transactional_id]
        called = log.commit_index(pos)
        k = bisect_left(at, called) - 1  # the latest init before the commit was called
        if k >= 0 and who[k] != t.process:
            ex = _example(t, log, pos, fenced_by={"process": who[k], "index": at[k]})
            if called != t.invoke_index:
                ex["commit_called"] = called
            ex["index"] = sorted({at[k], called, *ex["index"]})
            found("zombie-commit", t, ex)


def _hanging(facts: Facts, log: TxnLog, config: RunSettings, out: CheckOutcome) -> list[Any]:
    """hanging-transaction: the last stable offset stuck below the high watermark at the
    drain's end, the drain more than the transaction timeout after the last transaction
    line (every producer done by then)."""
    timeout = config.transaction_timeout_ms * _NS_PER_MS
    stuck = []
    for tp, end in sorted(facts.drain_ends.items()):
        lso = end.last_stable_offset
        if lso is None or lso >= end.high_watermark:
            continue
        waited = end.time - log.last_time
        judged = log.last_time >= 0 and waited > timeout
        stuck.append({**facts.where(tp), "last_stable_offset": lso, "judged": judged})
        if judged:
            out.anomaly("hanging-transaction").add(
                {
                    **facts.where(tp),
                    "high_watermark": end.high_watermark,
                    "last_stable_offset": lso,
                    "waited_ms": waited // _NS_PER_MS,
                    "transaction_timeout_ms": config.transaction_timeout_ms,
                    "index": [end.index],
                }
            )
    return stuck


def _eos(
    facts: Facts, log: TxnLog, places: Places, outcome_of: list[str], found: Found
) -> dict[str, int]:
    """eos-duplicate and eos-lost, per consumer group of the copying transactions."""
    txns, txn_of = log.txns, log.txn_of
    copies: dict[tuple[str | None, str], list[int]] = defaultdict(list)
    for vid, source in log.copy_of.items():
        copies[(txns[txn_of[vid]].group, source)].append(vid)
    of = places.of
    places_of = {vid: of(vid) for vids in copies.values() for vid in vids}

    def committed(vids: list[int]) -> list[int]:
        return [v for v in vids if places_of[v] == IN and outcome_of[txn_of[v]] != FAIL]

    got_of = {key: committed(vids) for key, vids in copies.items()}
    # keys are distinct, and so are their texts: filtering before sorting keeps the order
    dups = [(key, got) for key, got in got_of.items() if len(got) >= 2]
    for (_group, source), got in sorted(dups, key=lambda kv: str(kv[0])):
        t = txns[txn_of[got[0]]]
        ex = _copy_example(facts, log, source, got)
        found("eos-duplicate", t, ex)

    # the group's final committed position per input partition (last ok transaction)
    final: dict[tuple[str, str, int], int] = {}
    committer: dict[tuple[str, str, int], Txn] = {}
    oks = [
        (end.index, group, txns[pos])
        for pos, end in log.ends.items()
        if end.outcome == OK and (group := txns[pos].group) is not None
    ]
    oks.sort(key=lambda ok: ok[0])  # in history order (indexes are distinct)
    for _, group, t in oks:
        for topic, part, nxt in t.positions:
            final[(group, topic, part)] = nxt
            committer[(group, topic, part)] = t
    # the input values below it: consumed by the group's transactions, or in the input
    # partition's completed drain, from the first offset the group consumed there
    first: dict[tuple[str, str, int], int] = {}
    inputs: dict[tuple[str, str, int], dict[int, str]] = defaultdict(dict)
    for t in txns:
        if not t.consumed or t.group is None:
            continue
        for c in t.consumed:
            key = (t.group, c.topic, c.partition)
            first[key] = min(first.get(key, c.offset), c.offset)
            inputs[key][c.offset] = c.value
    judged = unjudged = 0
    values = facts.value_list
    for key, nxt in sorted(final.items()):
        group, topic, part = key
        lo = first.get(key, 0)
        tp = facts.tp_ids.get((topic, part))
        if tp is not None and tp in facts.drain_ends:
            start = max(lo, facts.drain_ends[tp].log_start_offset)
            for off, vid in facts.drained[tp].items():
                if start <= off < nxt:
                    inputs[key].setdefault(off, values[vid])
        for off, source in sorted(inputs[key].items()):
            if off >= nxt:
                continue
            vids = copies.get((group, source), [])
            if got_of.get((group, source)):
                judged += 1
                continue
            live = [v for v in vids if outcome_of[txn_of[v]] != FAIL]
            if any(places_of[v] != OUT for v in live):
                unjudged += 1  # a copy may be in a partition not drained completely
                continue
            judged += 1
            ex = {
                "value": source,
                "topic": topic,
                "partition": part,
                "offset": off,
                "group": group,
                "committed_position": nxt,
                "copies": [values[v] for v in vids],
                "index": [],
            }
            # the transaction to name: the input's (failed) copy, else the committer
            t = log.txns[log.txn_of[vids[0]]] if vids else committer[key]
            ex["txn"], ex["transactional_id"] = t.txn, t.transactional_id
            ex["index"] = [t.invoke_index]
            found("eos-lost", t, ex)
    return {"inputs_judged": judged, "inputs_unjudged": unjudged}


def _copy_example(facts: Facts, log: TxnLog, source: str, vids: list[int]) -> dict[str, Any]:
    ts = [log.txns[log.txn_of[v]] for v in vids]
    return {
        "value": source,
        "group": ts[0].group,
        "copies": [facts.value_list[v] for v in vids],
        "txns": [t.txn for t in ts],
        "transactional_ids": sorted({t.transactional_id for t in ts}),
        "txn": ts[0].txn,
        "transactional_id": ts[0].transactional_id,
        "index": sorted({t.invoke_index for t in ts}),
    }


def _stats(
    log: TxnLog, values: Counter[str], by_tid: dict[str, Counter[str]], outcome_of: list[str]
) -> dict[str, Any]:
    outcomes = Counter(outcome_of)
    per_tid: dict[str, Counter[str]] = defaultdict(Counter)
    for (tid, outcome), n in Counter(
        zip([t.transactional_id for t in log.txns], outcome_of, strict=True)
    ).items():
        per_tid[tid][outcome] += n
    return {
        **{o: outcomes.get(o, 0) for o in OUTCOMES},
        "values": {o: values.get(o, 0) for o in OUTCOMES},
        "inits": len(log.inits),
        "by_transactional_id": {
            tid: {o: c.get(o, 0) for o in OUTCOMES} for tid, c in sorted(per_tid.items())
        },
        "anomalies_by_transactional_id": {
            tid: {k: n for k, n in sorted(c.items()) if n}
            for tid, c in sorted(by_tid.items())
            if any(c.values())
        },
    }
