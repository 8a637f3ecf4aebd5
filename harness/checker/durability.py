"""Durability: acknowledged writes must survive (lost-write) or at least be seen (unseen)."""

from __future__ import annotations

from kchaos.harness.checker.facts import Facts
from kchaos.harness.checker.model import CheckOutcome
from kchaos.harness.checker.sources import HISTORY, Source
from kchaos.harness.rundir.runjson import RunSettings

SOURCES = (Source(HISTORY, ("lost-write", "unseen")),)


def check_durability(facts: Facts, config: RunSettings) -> CheckOutcome:
    """lost-write: acknowledged at an offset at or above the drain's log start offset, and
    its value nowhere in that partition's completed drain; or acknowledged at or above the
    final high watermark and drained at that very offset (the drain says the log ends
    before it).
    An acknowledgement at or above the high watermark whose value the drain holds at
    another offset is not lost: it is an inconsistent-offset (reads.find_conflicts).
    unseen: acknowledged, its partition not drained completely, and no reader saw it."""
    out = CheckOutcome("durability")
    out.read(HISTORY)
    lost = unseen = 0
    candidates: list[tuple[int, int, int]] = []
    ack_off = facts.ack_off
    for tp, vids in enumerate(facts.acked_vid):
        end = facts.drain_ends.get(tp)
        if end is None:
            candidates.extend((tp, ack_off[vid], vid) for vid in vids)
            continue
        # the usual case: the drain holds the value where it was acknowledged
        dget = facts.drained[tp].get
        hwm = end.high_watermark
        for vid in vids:
            off = ack_off[vid]
            if off >= hwm or dget(off) != vid:
                candidates.append((tp, off, vid))
    for tp, off, vid in sorted(candidates):
        kind = judge_acked(facts, vid, tp, off)
        if kind == "unseen":
            unseen += 1
            out.anomaly("unseen").add(facts.example(vid, tp, off))
        elif kind == "lost-write":
            lost += 1
            out.anomaly("lost-write").add(facts.example(vid, tp, off, drain_end=True))
    acked = sum(len(a) for a in facts.acked_vid)
    undrained = [facts.where(tp) for tp in range(len(facts.tps)) if tp not in facts.drain_ends]
    out.stats = {
        "acknowledged": acked,
        "lost": lost,
        "unseen": unseen,
        "undrained_partitions": undrained,
    }
    return out.settle()


def judge_acked(facts: Facts, vid: int, tp: int, off: int) -> str | None:
    """``lost-write``, ``unseen`` or None for a value acknowledged at (tp, off)."""
    end = facts.drain_ends.get(tp)
    if end is None:
        return "unseen" if facts.first[vid] < 0 else None
    if off < end.log_start_offset:
        return None
    if off >= end.high_watermark:
        # drained elsewhere: an inconsistent-offset (reads), not also a lost-write
        drained_here = facts.drained[tp].get(off) == vid
        return "lost-write" if drained_here or not facts.in_drain(vid, tp) else None
    if facts.in_drain(vid, tp):
        return None
    if off >= end.readable_end:  # above a stuck last stable offset: the drain cannot tell
        return "unseen" if facts.first[vid] < 0 else None
    return "lost-write"
