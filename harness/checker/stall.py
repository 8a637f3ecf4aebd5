"""``broker-stalled``: a broker stayed registered while it served nothing.

A broker whose request handlers are all blocked answers no produce, no fetch, no
metadata request, yet its heartbeats come from their own thread, so the controller keeps
it registered and unfenced, and it keeps leading its partitions: the clients cannot go
elsewhere. KAFKA-15046 (before 3.7.0) does this when fsync is slow: every produce waits
for the partition's log lock while a segment roll holds it across an fsync.

Judged from the sends, the partition leaders (``controller.jsonl`` where it describes the
partition, else the monitor's samples) and ``controller.jsonl``'s broker lines. For
each broker, the acknowledgements of sends to partitions it led at the time are put in
time order; a **gap** runs from one of them to the next (or to the history's last line).
A gap is reported when all of these hold:

- it lasts at least ``broker.session.timeout.ms`` (run.json's cluster settings, else
  Kafka's 9000 ms): longer than the controller keeps a dead broker registered;
- the broker led at least one partition for the whole gap (its leader at the gap's
  start, no other leader inside);
- a send to a topic of those partitions was outstanding inside the gap for at least
  that long (invoked before, or in, the gap; acknowledged, failed or still pending
  only after that), and was not acknowledged by a partition another broker led: a client
  was waiting;
- ``controller.jsonl`` shows the broker registered and unfenced at the gap's start, and
  no line of it inside the gap is fenced, shutting down or of another broker epoch.

Without ``controller.jsonl`` nothing is judged (the samples carry no broker state), nor
without an acknowledged send: the kind is then unjudged (results.json's ``unjudged``).
Reported, never invalid: a loaded machine, or a fault that holds the broker (a pause
shorter than the session), shows it too. ``stats.stall`` has, per broker, its longest
gap with a partition led throughout (the measured unavailability, reported or not).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from kchaos.harness.checker.controller import BrokerState
from kchaos.harness.checker.facts import FAIL, INFO, OK, PENDING, Facts
from kchaos.harness.checker.model import CheckOutcome
from kchaos.harness.checker.sources import CONTROLLER, HISTORY, Source, read_controller
from kchaos.harness.rundir.names import CONTROLLER_JSONL
from kchaos.harness.rundir.runjson import RunSettings

KIND = "broker-stalled"
_NS = 1e9
_SENT = (PENDING, OK, FAIL, INFO)
#: Gaps shorter than this are not checked for a waiting client (they count in the
#: longest gap of ``stats.stall`` as they are).
SCAN_FROM_NS = 1_000_000_000
#: The acknowledgements (history) and the brokers' registrations (controller.jsonl, no
#: fallback: the samples carry no broker state).
SOURCES = (Source(HISTORY, (KIND,)), Source(CONTROLLER, (KIND,)))
NO_ACKS = "no acknowledged send in the history: no gap between acknowledgements to measure"


@dataclass(frozen=True)
class Timeline:
    """One partition's leaders over time: ``leaders[i]`` from ``times[i]`` on."""

    times: list[int]
    leaders: list[int]

    def at(self, time: int) -> int:
        i = bisect_right(self.times, time)
        return self.leaders[i - 1] if i else -1

    def led_throughout(self, broker: int, start: int, end: int) -> bool:
        if self.at(start) != broker:
            return False
        i, j = bisect_right(self.times, start), bisect_right(self.times, end)
        return all(self.leaders[k] == broker for k in range(i, j))


def timelines(facts: Facts) -> list[Timeline]:
    """Per partition id, its leaders from controller.jsonl where it describes the
    partition, else from the monitor's samples."""
    record = facts.controller
    out = []
    for tp, key in enumerate(facts.tps):
        if record is not None and record.covers(*key):
            states = sorted(record.partitions[key], key=lambda s: (s.time, s.offset))
            out.append(Timeline([s.time for s in states], [s.leader for s in states]))
        else:
            obs = facts.observations[tp]
            out.append(Timeline(list(obs.time), list(obs.leader)))
    return out


def check_stall(facts: Facts, config: RunSettings) -> CheckOutcome:
    out = CheckOutcome("stall")
    out.read(HISTORY)
    read_controller(out, facts)
    if not any(facts.acked_vid):
        out.unjudged[KIND] = NO_ACKS
    record = facts.controller
    threshold = config.broker_session_timeout_ms * 1_000_000
    if record is None:
        out.stats = {
            "source": None,
            "note": f"no {CONTROLLER_JSONL}: stalls not judged (the samples have no brokers)",
        }
        return out.settle()
    lines = timelines(facts)
    acks: dict[int, list[int]] = defaultdict(list)
    for tp, vids in enumerate(facts.acked_vid):
        for vid in vids:
            time = facts.comp_time[vid]
            leader = lines[tp].at(time)
            if leader >= 0:
                acks[leader].append(time)
    per_broker: dict[str, Any] = {}
    for broker in sorted(acks):
        times = sorted(acks[broker])
        longest: dict[str, Any] | None = None
        ends = [*zip(times, times[1:], strict=False), (times[-1], facts.last_time)]
        for start, end in ends:
            led = [tp for tp, line in enumerate(lines) if line.led_throughout(broker, start, end)]
            if not led:
                continue
            still_open = end == facts.last_time and end != times[-1]
            # short gaps between acknowledgements are the normal rhythm: only those
            # that could matter are checked for a waiting client (a scan of the sends)
            wait = 0
            if end - start >= SCAN_FROM_NS or still_open:
                wait = _longest_wait(facts, lines, broker, led, start, end)
            if still_open and wait <= 0:
                continue  # the workload had stopped: nothing waited for this broker
            if longest is None or end - start > longest["length_ns"]:
                longest = {"length_ns": end - start, "start": start, "end": end}
            if end - start < threshold or wait < threshold:
                continue
            state = _unfenced_throughout(record.brokers.get(broker, []), start, end)
            if state is None:
                continue
            out.anomaly(KIND).add(
                _example(facts, broker, led, start, end, still_open, wait, state, config)
            )
        if longest is not None:
            per_broker[str(broker)] = {
                "longest_gap_s": round(longest["length_ns"] / _NS, 6),
                "start_s": round(longest["start"] / _NS, 6),
            }
    out.stats = {
        "source": CONTROLLER_JSONL,
        "threshold_s": config.broker_session_timeout_ms / 1000,
        "brokers": per_broker,
    }
    return out.settle()


def _longest_wait(
    facts: Facts, lines: list[Timeline], broker: int, led: list[int], start: int, end: int
) -> int:
    """The longest time a send to a topic of ``led`` was outstanding inside the gap,
    leaving out sends a partition another broker led acknowledged."""
    topics = {facts.topic_ids[facts.tps[tp][0]] for tp in led}
    longest = 0
    for vid in range(len(facts.value_list)):
        if facts.topic[vid] not in topics or facts.status[vid] not in _SENT:
            continue
        invoked = facts.inv_time[vid]
        if invoked < 0 or invoked >= end:
            continue
        status = facts.status[vid]
        done = facts.comp_time[vid] if status != PENDING else end
        if done <= start:
            continue
        if status == OK:
            ack_tp = facts.ack_tp[vid]
            if ack_tp >= 0 and lines[ack_tp].at(done) != broker:
                continue
        longest = max(longest, min(done, end) - max(invoked, start))
    return longest


def _unfenced_throughout(states: list[BrokerState], start: int, end: int) -> BrokerState | None:
    """The broker's registration line in force at ``start`` when it is unfenced and no
    line up to ``end`` fences it, shuts it down or re-registers it; else None."""
    before = [s for s in states if s.time <= start]
    if not before:
        return None
    at = before[-1]
    if at.fenced or at.shutting_down or at.broker_epoch < 0:
        return None
    for s in states:
        if start < s.time <= end and (
            s.fenced or s.shutting_down or s.broker_epoch != at.broker_epoch
        ):
            return None
    return at


def _example(
    facts: Facts,
    broker: int,
    led: list[int],
    start: int,
    end: int,
    still_open: bool,
    wait: int,
    state: BrokerState,
    config: RunSettings,
) -> dict[str, Any]:
    opened = [f for f in facts.faults if f.start_time <= end]
    during = [f for f in opened if f.stop_time is None or f.stop_time >= start]
    return {
        "broker": broker,
        "start_s": round(start / _NS, 6),
        "end_s": round(end / _NS, 6),
        "length_s": round((end - start) / _NS, 6),
        "open": still_open,
        "longest_wait_s": round(wait / _NS, 6),
        "partitions": [facts.where(tp) for tp in led],
        "broker_epoch": state.broker_epoch,
        "source": CONTROLLER_JSONL,
        "controller_offset": state.offset,
        "broker_session_timeout_ms": config.broker_session_timeout_ms,
        "faults": [
            {"id": f.id, "fault": f.fault, "targets": list(f.targets)}
            for f in during
            if f.fault != "heal"
        ],
    }
