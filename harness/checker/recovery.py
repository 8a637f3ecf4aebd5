"""Time to full ISR after each fault: from the fault's stop to the first full ISR after the
last ISR shrink that the fault caused.

Per partition, the controller's record (controller.jsonl) is the measure where it
describes the partition completely (its lines name the replicas, and no record of its
was undecodable); the monitor's samples are the fallback for every other partition.

A shrink belongs to a fault when its line's time is within the fault's window (start to
stop), or within ``GRACE_NS`` after the stop and it removed one of the fault's target
brokers: Kafka removes a broker that stopped answering only after its session timeout
(``broker.session.timeout.ms``, 9 s) or a follower that stopped fetching after
``replica.lag.time.max.ms`` (30 s), so a short fault's shrink lands after its stop (on
3.4.1 a kill's shrink came 11.3 s after it). The grace ends early at the next fault's
start: what follows is that fault's.

Per fault the answer is the latest of the partitions' times: ``seconds`` 0 where every
partition was full at the stop and no shrink of the fault came later; ``None`` with
``unknown`` true where nothing describes any partition (no record, no samples), never a
0; ``None`` with ``unknown`` false where a partition never became full again in the run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from kchaos.harness.checker.controller import PartitionState
from kchaos.harness.checker.facts import Facts, Fault, Observations

_NS = 1e9
#: How long after a fault's stop a shrink that removes one of its targets is still its
#: (``replica.lag.time.max.ms``' default, the longest of Kafka's removal delays).
GRACE_NS = 30 * 1_000_000_000
_NODE = re.compile(r"^(?:broker|controller)-(\d+)$")


def target_brokers(fault: Fault) -> frozenset[int]:
    """The node ids a fault's targets name (``broker-2`` -> 2); other targets add none."""
    return node_ids(fault.targets)


def node_ids(names: Iterable[Any]) -> frozenset[int]:
    """The node ids of node names (``broker-2`` -> 2); other names add none."""
    ids = set()
    for name in names:
        m = _NODE.match(name) if isinstance(name, str) else None
        if m:
            ids.add(int(m.group(1)))
    return frozenset(ids)


def _full(state: PartitionState) -> bool:
    return set(state.replicas) <= set(state.isr)


def usable_record(states: Sequence[PartitionState]) -> bool:
    """The record can measure this partition: every line names its replicas."""
    return bool(states) and all(s.replicas for s in states)


def reached_from_record(
    states: Sequence[PartitionState], start: int, stop: int, grace_end: int, targets: frozenset[int]
) -> tuple[int | None, int | None]:
    """(time the partition's ISR was full again, time of the fault's last shrink or None).
    The first: ``stop`` or earlier where nothing was left to wait for; None: never."""
    last = -1
    for i in range(1, len(states)):
        removed = set(states[i - 1].isr) - set(states[i].isr)
        t = states[i].time
        if removed and (start <= t <= stop or (stop < t <= grace_end and removed & targets)):
            last = i
    shrink = states[last].time if last >= 0 else None
    if last < 0:
        at_stop = [i for i, s in enumerate(states) if s.time <= stop]
        if not at_stop or _full(states[at_stop[-1]]):
            return stop, None
        last = at_stop[-1]  # short of full at the stop since before the fault
    for s in states[last:]:
        if _full(s):
            return s.time, shrink
    return None, shrink


def reached_from_samples(obs: Observations, start: int, stop: int) -> int | None:
    """The time the samples first showed the ISR full after the last short sample in the
    fault's window (or at the stop); ``stop`` where none was short. Approximate: a sample
    only shows the ISR at the moment it was taken."""
    times, full = obs.time, obs.full
    last_bad = -1
    before_stop = -1
    for i, t in enumerate(times):
        if t > stop:
            break
        before_stop = i
        if t >= start and not full[i]:
            last_bad = i
    if before_stop >= 0 and not full[before_stop]:
        last_bad = before_stop
    if last_bad < 0:
        if before_stop >= 0:
            return stop
        last_bad = before_stop  # no sample before the stop: the first full one after
    for i in range(last_bad + 1, len(times)):
        if full[i]:
            return max(times[i], stop) if last_bad < 0 else times[i]
    return None


def time_to_full_isr(facts: Facts) -> list[dict[str, Any]]:
    """One entry per fault that stopped, in the order of the stops."""
    record = facts.controller
    by_record: dict[tuple[str, int], Sequence[PartitionState]] = {}
    fallback: set[tuple[str, int]] = set()  # in the record, yet measured otherwise
    if record is not None:
        fallback |= set(record.incomplete)  # left out of record.partitions when read
        for key, states in record.partitions.items():
            if usable_record(states):
                by_record[key] = states
            else:
                fallback.add(key)
    sampled: dict[tuple[str, int], Observations] = {}
    for tp, key in enumerate(facts.tps):
        observed = tp < len(facts.observations) and len(facts.observations[tp].time) > 0
        if key not in by_record and observed:
            sampled[key] = facts.observations[tp]
    blind = sorted(fallback - set(sampled))  # neither a usable record nor a sample
    used = (("controller", by_record), ("samples", sampled))
    source = "+".join(name for name, parts in used if parts) or None
    stopped = sorted(
        (f for f in facts.faults if f.stop_index is not None and f.stop_time is not None),
        key=lambda f: f.stop_index or 0,
    )
    starts = sorted(f.start_time for f in facts.faults)
    out = []
    for f in stopped:
        stop = f.stop_time or 0
        later = [s for s in starts if s > stop]
        grace_end = min([stop + GRACE_NS, *later[:1]])
        unknown = source is None or bool(blind)
        entry: dict[str, Any] = {
            "id": f.id,
            "fault": f.fault,
            "stop_s": round(stop / _NS, 6),
            "seconds": None,
            "source": source,
            "unknown": unknown,
        }
        reached: list[int | None] = []
        shrinks: list[int] = []
        targets = target_brokers(f)
        for lines in by_record.values():
            r, shrink = reached_from_record(lines, f.start_time, stop, grace_end, targets)
            reached.append(r)
            if shrink is not None:
                shrinks.append(shrink)
        reached += [reached_from_samples(obs, f.start_time, stop) for obs in sampled.values()]
        if not unknown and all(r is not None for r in reached):
            worst = max(r for r in reached if r is not None)
            entry["seconds"] = round(max(worst - stop, 0) / _NS, 6)
        if shrinks:
            entry["last_shrink_s"] = round(max(shrinks) / _NS, 6)
        if fallback & set(sampled):
            entry["samples_for"] = [f"{t}/{p}" for t, p in sorted(fallback & set(sampled))]
        if blind:
            entry["unknown_for"] = [f"{t}/{p}" for t, p in blind]
        out.append(entry)
    return out
