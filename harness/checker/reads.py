"""Reads: what polls and the drain returned must be committed, written once, consistent."""

from __future__ import annotations

from typing import Any

from kchaos.harness.checker.facts import FAIL, TP_BITS, Facts, unpack
from kchaos.harness.checker.model import CheckOutcome
from kchaos.harness.checker.sources import HISTORY, Source
from kchaos.harness.rundir.history import FAIL as FAIL_OUTCOME
from kchaos.harness.rundir.history import OK
from kchaos.harness.rundir.runjson import RunSettings

SOURCES = (
    Source(HISTORY, ("uncommitted-read", "aborted-read", "duplicate", "inconsistent-offset")),
)


def check_reads(facts: Facts, config: RunSettings) -> CheckOutcome:
    """uncommitted-read, aborted-read, duplicate and inconsistent-offset."""
    out = CheckOutcome("reads")
    out.read(HISTORY)
    uncommitted = find_uncommitted(facts)
    for vid, (tp, off) in sorted(uncommitted.items()):
        out.anomaly("uncommitted-read").add(facts.example(vid, tp, off, drain_end=True))

    # aborted-read: a send that completed fail, found by any reader (a transaction's
    # values are judged by the transactions checker: read_committed readers only)
    status = facts.status.tobytes()
    txn_of = facts.txn.txn_of
    vid = status.find(FAIL)
    while vid >= 0:
        if facts.first[vid] >= 0 and vid not in txn_of:
            tp, off = unpack(facts.first[vid])
            out.anomaly("aborted-read").add(facts.example(vid, tp, off))
        vid = status.find(FAIL, vid + 1)

    # duplicate: one value at two or more distinct positions, by any reader
    for vid in sorted(facts.extra):
        positions = facts.positions(vid)
        tp, off = unpack(positions[0])
        ex = facts.example(vid, tp, off)
        ex["positions"] = [facts.where(*unpack(p)) for p in positions]
        out.anomaly("duplicate").add(ex)

    # inconsistent-offset: two values at one position, by readers or acknowledgements
    conflicts = find_conflicts(facts)
    values = facts.value_list
    for packed in sorted(conflicts, key=lambda p: unpack(p)):
        vids = sorted(conflicts[packed])
        tp, off = unpack(packed)
        conflict: dict[str, Any] = {
            "value": values[vids[0]],
            **facts.where(tp, off),
            "values": [values[v] for v in vids],
            "index": [],
        }
        for v in vids:
            conflict["index"].extend(facts.send_indexes(v))
        if len(vids) == 1:  # a moved acknowledgement: where the drain holds the value
            conflict["drained_offsets"] = sorted(
                o for o, v in facts.drained[tp].items() if v == vids[0]
            )
        out.anomaly("inconsistent-offset").add(conflict)
    out.stats = {
        "uncommitted": len(uncommitted),
        "duplicates": len(facts.extra),
        "inconsistent_positions": len(conflicts),
    }
    return out.settle()


def find_uncommitted(facts: Facts) -> dict[int, tuple[int, int]]:
    """Value id -> a position where a poll read it, at or above the drain's log start
    offset, although that partition's completed drain does not hold it."""
    found: dict[int, tuple[int, int]] = {}
    for tp, pm in enumerate(facts.polled):
        end = facts.drain_ends.get(tp)
        dm = facts.drained[tp]
        if end is None or pm.items() <= dm.items():  # C-speed test of the usual case
            continue
        lso = end.log_start_offset
        blind = range(end.readable_end, end.high_watermark)  # above a stuck stable offset
        dget = dm.get
        for off, vid in pm.items():
            if off >= lso and dget(off) != vid and not facts.in_drain(vid, tp) and off not in blind:
                found.setdefault(vid, (tp, off))
    for tp, off, vid in facts.poll_conflicts:
        end = facts.drain_ends.get(tp)
        if (
            end is not None
            and off >= end.log_start_offset
            and not end.readable_end <= off < end.high_watermark
            and not facts.in_drain(vid, tp)
        ):
            found.setdefault(vid, (tp, off))
    if facts.txn.txn_of:
        for vid in [v for v in found if not uncommitted_txn_read(facts, v)]:
            del found[vid]
    return found


def uncommitted_txn_read(facts: Facts, vid: int) -> bool:
    """Whether a read of ``vid`` missing from the drain is an uncommitted-read (history
    format 1.2). A plain value: always. A transaction's value: when the transaction
    committed (its value then vanished), or when its outcome is unknown and a
    read_committed poll returned it. Not when a read_uncommitted reader saw a value of an
    aborted or unknown transaction (allowed), nor for an aborted one a read_committed
    reader got: that is an aborted-read, counted once, by the transactions checker."""
    outcome = facts.txn.value_outcome(vid)
    if outcome is None or outcome == OK:
        return True
    return outcome != FAIL_OUTCOME and vid in facts.txn.rc_read


def find_conflicts(facts: Facts) -> dict[int, set[int]]:
    """Packed position -> the distinct value ids seen there by readers or acks (> 1), and
    moved acknowledgements: a value acknowledged at an offset at or above the drain's log
    start offset where the completed drain holds no record (at or above its high
    watermark, or a gap), that the drain holds at another offset (a set of one, unless
    others were seen there too)."""
    conflicts = {k: set(v) for k, v in facts.read_conflicts.items()}
    ack_off = facts.ack_off
    for tp, vids in enumerate(facts.acked_vid):
        dget, pget = facts.drained[tp].get, facts.polled[tp].get
        end = facts.drain_ends.get(tp)
        unconfirmed: dict[int, int] = {}  # offset -> value acknowledged there, drain silent
        for vid in vids:
            off = ack_off[vid]
            if off < 0:
                continue  # no offset reported (e.g. acks=0)
            drained = dget(off)
            if drained == vid:
                continue  # polls that disagree with the drain there are conflicts already
            if (
                drained is None
                and end is not None
                and off >= end.log_start_offset
                and facts.in_drain(vid, tp)
            ):
                conflicts.setdefault((off << TP_BITS) | tp, set()).add(vid)
            for other in (drained, pget(off), unconfirmed.setdefault(off, vid)):
                if other is not None and other != vid:
                    conflicts.setdefault((off << TP_BITS) | tp, set()).update((other, vid))
    return conflicts
