"""ISR behaviour: acks=all acknowledged below min.insync.replicas, unclean elections."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from kchaos.harness.checker.controller import ControllerRecord, PartitionState
from kchaos.harness.checker.facts import Facts
from kchaos.harness.checker.leaderlog import IsrUpdate, LeaderLog, explain
from kchaos.harness.checker.model import CheckOutcome
from kchaos.harness.checker.sources import (
    CONTROLLER,
    SAMPLES,
    Source,
    read_controller,
    read_samples,
)
from kchaos.harness.rundir.names import CONTROLLER_JSONL
from kchaos.harness.rundir.runjson import RunSettings

# How long before a send's invoke the committed ISR must already have been too small for
# its acknowledgement to count against the broker: time for the leader to learn of it.
LEARN_NS = 1_000_000_000
# Kafka's default min.insync.replicas, where neither run.json nor the monitor states one.
KAFKA_DEFAULT_MIN_ISR = 1
SHRINKS_LISTED = 20  # results.json lists this many ISR removals; the count covers all

#: The kinds of committed ISRs and elections: from controller.jsonl for the partitions it
#: describes, from the monitor's samples for the others (and all, where it is absent).
ISR_KINDS = ("acked-below-min-isr", "unclean-election", "last-known-leader-election")
SOURCES = (Source(CONTROLLER, ISR_KINDS, fallback=SAMPLES), Source(SAMPLES, ISR_KINDS))


def check_isr(facts: Facts, config: RunSettings) -> CheckOutcome:
    """acked-below-min-isr and elections: from controller.jsonl for the partitions it
    describes, from the monitor's samples for the others (format 1.1)."""
    out = CheckOutcome("isr")
    read_controller(out, facts)
    read_samples(out, facts)
    record = facts.controller
    covered = {
        tp
        for tp, (topic, part) in enumerate(facts.tps)
        if record is not None and record.covers(topic, part)
    }
    below, partitions_below = _samples_below_min_isr(facts, config, out, covered)
    allowed = _sample_elections(facts, config, out, covered)
    out.stats = {
        "source": CONTROLLER_JSONL if record is not None else "samples",
        "partitions_from_samples": sum(
            1 for tp, obs in enumerate(facts.observations) if obs.index and tp not in covered
        ),
        "partitions_below_min_isr_observed": partitions_below,
    }
    if record is not None:
        below += _controller_below_min_isr(facts, config, out, record, facts.leader_log)
        elections = _controller_elections(config, out, record)
        allowed += elections["unclean_allowed"]
        out.stats["elections"] = elections
        out.stats["shrinks"] = _controller_shrinks(record, facts.leader_log)
    out.stats["acked_below_min_isr"] = below
    out.stats["unclean_elections_allowed"] = allowed
    return out.settle()


def _controller_shrinks(record: ControllerRecord, log: LeaderLog | None) -> dict[str, Any]:
    """Who took replicas out of ISRs: the controller (fenced, shutting down, reassigned,
    other) or a leader (a follower it judged too far behind). Where the run kept the
    nodes' logs, a leader's shrink is the one its ``Shrinking ISR`` line asked for, with
    that line as evidence, and ``unexplained`` without one; where it did not, ``leader``
    is what is left after the controller's causes. Informational, never an anomaly."""
    shrinks = list(record.isr_shrinks())
    unmatched = None
    if log is not None:
        shrinks, unmatched = explain(shrinks, log)
    by_cause: dict[str, int] = {}
    for shrink in shrinks:
        by_cause[shrink.cause] = by_cause.get(shrink.cause, 0) + 1
    out: dict[str, Any] = {
        "count": len(shrinks),
        "by_cause": by_cause,
        "cause_source": "logs" if log is not None else "elimination",
        "first": [s.to_json() for s in shrinks[:SHRINKS_LISTED]],
    }
    if log is not None:
        out["leader_log"] = {"nodes": log.nodes, "lines": log.count(), "unmatched": unmatched}
    return out


def _controller_elections(
    config: RunSettings, out: CheckOutcome, record: ControllerRecord
) -> dict[str, int]:
    """Every election in the controller's record, classified; unclean ones are reported
    wherever they happen and invalidate only where unclean election is disabled."""
    counts = {
        "clean": 0,
        "last-known-leader": 0,
        "unclean": 0,
        "unclean_allowed": 0,
        "from_elr": 0,
    }
    for election in record.elections():
        counts[election.kind] += 1
        # KIP-966 at work: a clean leader from outside the ISR, an eligible leader replica
        counts["from_elr"] += election.kind == "clean" and election.from_elr
        if election.kind == "clean":
            continue
        ex = election.example(record)
        if election.kind == "last-known-leader":
            out.anomaly("last-known-leader-election").add(ex)
            continue
        permitted = config.unclean_for(election.topic)
        counts["unclean_allowed"] += permitted
        if permitted:
            ex["allowed"] = "unclean.leader.election.enable=true"
        out.anomaly("unclean-election").add(ex, allowed=permitted)
    return counts


def _controller_below_min_isr(
    facts: Facts,
    config: RunSettings,
    out: CheckOutcome,
    record: ControllerRecord,
    log: LeaderLog | None,
) -> int:
    """acks=all sends acknowledged while the committed ISR was smaller than min.insync from
    at least LEARN_NS before the invoke until the acknowledgement, and, where the leader
    logged applying the stretch's first ISR (``ISR updated``), from no later than the
    invoke on that line's time: before it the leader still held its previous ISR."""
    below = 0
    stretches = {"count": 0, "leader_applied_logged": 0, "pushed_later": 0}
    default_all = 1 if config.acks_all else 0
    for tp, (topic, part) in enumerate(facts.tps):
        states = record.partitions.get((topic, part))
        if not states:
            continue
        need = _min_isr(config, facts, tp)
        runs = _below_runs(states, need, log)
        stretches["count"] += len(runs)
        stretches["leader_applied_logged"] += sum(1 for r in runs if r.applied is not None)
        stretches["pushed_later"] += sum(1 for r in runs if r.pushed_later)
        if not runs or not facts.acked_vid[tp]:
            continue
        starts = [r.start for r in runs]
        for vid in facts.acked_vid[tp]:
            acks = facts.acks_all[vid]
            if (acks if acks >= 0 else default_all) != 1:
                continue
            invoked = facts.inv_time[vid]
            until = facts.comp_time[vid]
            k = bisect_right(starts, invoked - LEARN_NS) - 1
            if k < 0:
                continue
            run = runs[k]
            if run.end is not None and run.end.time <= until:
                continue
            if run.applied is not None and invoked < run.applied.time:
                continue  # the leader had not applied the smaller ISR yet
            below += 1
            ex: dict[str, Any] = {
                "value": facts.value_list[vid],
                **facts.where(tp, facts.ack_off[vid]),
                "isr_sizes": run.sizes[:10],
                "min_insync": need,
                "below_since_s": round(run.start / 1e9, 6),
            }
            if run.applied is not None:
                ex["leader_applied_s"] = round(run.applied.time / 1e9, 6)
                ex["leader_applied_log"] = run.applied.log
            ex["source"] = CONTROLLER_JSONL
            ex["controller_offsets"] = [run.first.offset] + ([run.end.offset] if run.end else [])
            ex["index"] = facts.send_indexes(vid)
            out.anomaly("acked-below-min-isr").add(ex)
    out.stats["below_min_isr_stretches"] = stretches
    return below


@dataclass(frozen=True)
class BelowRun:
    """A maximal stretch of a partition's committed states with an ISR below min.insync."""

    first: PartitionState  # the line that began it
    end: PartitionState | None  # the line that ended it; None: it lasted to the record's end
    sizes: list[int]  # the ISR sizes along it
    # the line in which the first line's leader applied it (``ISR updated``), where logged
    applied: IsrUpdate | None

    @property
    def start(self) -> int:
        """When the stretch was committed (ns, the history's clock)."""
        return self.first.time

    @property
    def pushed_later(self) -> bool:
        """Whether the leader's line moves the earliest invoke that counts beyond the
        commit's time plus LEARN_NS."""
        return self.applied is not None and self.applied.time > self.start + LEARN_NS


def _below_runs(
    states: list[PartitionState], need: int, log: LeaderLog | None = None
) -> list[BelowRun]:
    """Maximal stretches with ISR below ``need``, each with the leader's ``ISR updated``
    line for its first state where ``log`` holds one (sought up to the commit that ended
    the first state's leader epoch)."""
    runs: list[BelowRun] = []
    begun: int | None = None  # index in states of the current stretch's first line
    sizes: list[int] = []

    def close(end: int | None) -> None:
        assert begun is not None
        first = states[begun]
        applied = None
        if log is not None:
            epoch_end = next(
                (s.time for s in states[begun + 1 :] if s.leader_epoch != first.leader_epoch),
                None,
            )
            applied = log.applied(first, epoch_end)
        runs.append(BelowRun(first, None if end is None else states[end], sizes, applied))

    for i, state in enumerate(states):
        if len(state.isr) < need:
            if begun is None:
                begun, sizes = i, []
            sizes.append(len(state.isr))
        elif begun is not None:
            close(i)
            begun = None
    if begun is not None:
        close(None)
    return runs


def _min_isr(config: RunSettings, facts: Facts, tp: int) -> int:
    """run.json's setting, else what the monitor reported, else Kafka's default."""
    override = config.min_insync_for(facts.tps[tp][0])
    if override is not None:
        return override
    for reported in facts.observations[tp].min_insync:
        if reported >= 0:
            return int(reported)
    return KAFKA_DEFAULT_MIN_ISR


def _samples_below_min_isr(
    facts: Facts, config: RunSettings, out: CheckOutcome, covered: set[int]
) -> tuple[int, int]:
    """acked-below-min-isr from the samples: every observation of the partition, from the
    last one before the invoke to the first one after the completion, below min.insync."""
    # per partition with at least one below-min observation: prefix counts of good ones
    good_prefix: dict[int, list[int]] = {}
    for tp, obs in enumerate(facts.observations):
        if tp in covered:
            continue
        override = config.min_insync_for(facts.tps[tp][0])
        good = []
        any_bad = False
        for size, reported in zip(obs.isr_size, obs.min_insync, strict=True):
            need = override if override is not None else reported
            bad = need is not None and need >= 0 and size < need
            any_bad |= bad
            good.append(0 if bad else 1)
        if any_bad:
            good_prefix[tp] = [0, *accumulate(good)]
    below = 0
    default_all = 1 if config.acks_all else 0
    for tp, prefix in good_prefix.items():
        obs = facts.observations[tp]
        idx = list(obs.index)
        n = len(idx)
        vids = facts.acked_vid[tp]  # in completion order
        comp_of = facts.comp_index.__getitem__
        for i, j in _bad_runs(prefix):
            # sends whose first observation after completion lies in the run i..j
            lo_comp = idx[i - 1] if i > 0 else -1
            first = bisect_left(vids, lo_comp, key=comp_of)
            last = bisect_left(vids, idx[j], key=comp_of) if j < n - 1 else len(vids)
            for k in range(first, last):
                vid = vids[k]
                acks = facts.acks_all[vid]
                if (acks if acks >= 0 else default_all) != 1:
                    continue
                inv = facts.inv_index[vid]
                lo = max(bisect_left(idx, inv) - 1, 0)
                if lo < i:
                    continue
                comp = comp_of(vid)
                hi = min(bisect_right(idx, comp), n - 1)
                below += 1
                window = list(range(lo, hi + 1))
                ex = {
                    "value": facts.value_list[vid],
                    **facts.where(tp, facts.ack_off[vid]),
                    "isr_sizes": [obs.isr_size[w] for w in window[:10]],
                    "min_insync": _need(config, facts, tp, obs.min_insync[lo]),
                    "index": [inv, comp, *(obs.index[w] for w in window[:10])],
                }
                out.anomaly("acked-below-min-isr").add(ex)
    return below, len(good_prefix)


def _sample_elections(
    facts: Facts, config: RunSettings, out: CheckOutcome, covered: set[int]
) -> int:
    """unclean-election from the samples: a new leader in neither the last observed ISR
    nor the last observed ELR (reported everywhere, invalid where unclean is disabled)."""
    allowed = 0
    for ch in facts.leader_changes:
        if ch.tp in covered:
            continue
        topic = facts.tps[ch.tp][0]
        permitted = config.unclean_for(topic)
        allowed += permitted
        ex: dict[str, Any] = {
            **facts.where(ch.tp),
            "old_leader": ch.old_leader,
            "new_leader": ch.new_leader,
            "previous_isr": ch.previous_isr,
            "previous_elr": ch.previous_elr,
            "time_s": round(ch.time / 1e9, 3),
            "index": [ch.previous_index, ch.index],
            "source": "samples",
        }
        if permitted:
            ex["allowed"] = "unclean.leader.election.enable=true"
        out.anomaly("unclean-election").add(ex, allowed=permitted)
    return allowed


def _bad_runs(prefix: list[int]) -> list[tuple[int, int]]:
    """Maximal runs i..j of below-min observations, from the prefix counts of good ones."""
    runs = []
    start = -1
    for i in range(len(prefix) - 1):
        bad = prefix[i + 1] == prefix[i]
        if bad and start < 0:
            start = i
        elif not bad and start >= 0:
            runs.append((start, i - 1))
            start = -1
    if start >= 0:
        runs.append((start, len(prefix) - 2))
    return runs


def _need(config: RunSettings, facts: Facts, tp: int, reported: int) -> int | None:
    override = config.min_insync_for(facts.tps[tp][0])
    if override is not None:
        return override
    return reported if reported >= 0 else None
