"""Ordering within a stretch of one consumer's reading of one partition."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from kchaos.harness.checker.facts import Facts
from kchaos.harness.checker.model import CheckOutcome
from kchaos.harness.checker.sources import HISTORY, Source
from kchaos.harness.rundir.runjson import RunSettings

_NARROW = 8  # a gap over at most this many offsets is judged by looking each one up

SOURCES = (Source(HISTORY, ("nonmonotonic-poll", "poll-skip")),)


def check_ordering(facts: Facts, config: RunSettings) -> CheckOutcome:
    """nonmonotonic-poll: an offset not above the previous one in the stretch.
    poll-skip: the next offset jumps over offsets at which the completed drain has records.
    (A stretch starts at the consumer's first poll and again at each ``assign`` line.)"""
    out = CheckOutcome("ordering")
    out.read(HISTORY)
    values = facts.value_list
    for proc, tp, prev, off, index in facts.backwards:
        ex = {**facts.where(tp, off), "process": proc, "previous_offset": prev, "index": [index]}
        vid = facts.polled[tp].get(off)
        if vid is not None:
            ex["value"] = values[vid]
        out.anomaly("nonmonotonic-poll").add(ex)
    sorted_drain: dict[int, list[int]] = {}
    unjudged = 0
    ends, drained = facts.drain_ends, facts.drained
    for proc, tp, prev, off, index in facts.gaps:
        end = ends.get(tp)
        if end is None:
            unjudged += 1
            continue
        width = off - prev
        if width == 2:  # one offset jumped over: most often a transaction's control marker
            if prev + 1 not in drained[tp]:
                continue
        elif width <= _NARROW:
            # a narrow gap (markers, aborted records): look its few offsets up instead of
            # searching the sorted drain
            dm = drained[tp]
            for o in range(prev + 1, off):
                if o in dm:
                    break
            else:
                continue
        held = sorted_drain.get(tp)
        if held is None:
            held = sorted_drain[tp] = sorted(facts.drained[tp])
        lo = bisect_right(held, prev)
        hi = bisect_left(held, off)
        if hi > lo:
            skipped = held[lo : min(hi, lo + 5)]
            ex = {
                **facts.where(tp, skipped[0]),
                "process": proc,
                "previous_offset": prev,
                "next_offset": off,
                "skipped_offsets": skipped,
                "skipped_count": hi - lo,
                "value": values[facts.drained[tp][skipped[0]]],
                "index": [index, end.index],
            }
            out.anomaly("poll-skip").add(ex)
    out.stats = {"gaps": len(facts.gaps), "gaps_in_undrained_partitions": unjudged}
    return out.settle()
