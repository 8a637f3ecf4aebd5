"""Replica by replica: the partition logs of every broker (``RUN_DIR/replicas.jsonl``).

The runner dumps each replica's segment files after the run
(:mod:`kchaos.harness.run.replicas`). For every partition the drain completed, this
module compares the replicas offset by offset from the drain's log start offset up to
its high watermark, and looks for a producer's sequence written twice:

* ``replica-divergence`` (invalidating): two replicas that are both in the partition's
  final ISR (the last line of controller.jsonl) hold different batches at one offset
  below the high watermark (leader epoch, producer id, epoch, sequence or value differ),
  or one of them lacks the offset. Committed data is the same on every in-sync replica;
  anything else is a Kafka bug. Disagreements that involve a replica outside the final
  ISR, or any disagreement when there is no controller.jsonl, are evidence only
  (``stats.replicas``): such a replica may still be catching up or truncating.
* duplicate producer sequences: one producer id, epoch and sequence at two offsets of
  one replica's log below the high watermark (what idempotence should prevent). Not a
  kind of its own: it is the evidence for a ``duplicate`` (stats and each partition's
  examples).
* the replica story: every ``duplicate`` and ``lost-write`` example gets ``replicas``:
  which brokers hold the value, at which offset, with the batch's leader epoch and the
  producer id, epoch and sequence; a ``lost-write`` also shows what each replica holds
  at the acknowledged offset.
* who wrote a duplicate twice (:func:`duplicate_causes`): every ``duplicate`` gets a
  cause from the batches that hold its copies (:data:`DUPLICATE_CAUSES`); the anomaly
  counts them (``causes``) and each example names its own (``cause``). It pins the
  finding on the client or on the broker; it does not change the verdict.

Pure: reads files only, so ``kchaos check`` on a stored run gives the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kchaos.harness.checker.facts import Facts, unpack
from kchaos.harness.checker.model import MAX_EXAMPLES, Anomaly
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.files import json_lines
from kchaos.harness.rundir.names import REPLICAS_JSONL
from kchaos.harness.rundir.where import LineCursor

KIND = "replica-divergence"
NO_PRODUCER = -1

#: What the batches holding a duplicate's copies say about who wrote it twice.
DUPLICATE_CAUSES: dict[str, str] = {
    "producer-epoch-bump": "one producer id, the copies under different producer epochs: "
    "the client bumped its epoch and sent the value again (the broker deduplicates "
    "within an epoch only)",
    "sequence-written-twice": "one producer id, epoch and sequence at two offsets: the "
    "broker accepted a retry it should have recognised",
    "same-epoch-resend": "one producer id and epoch, different sequences: the client "
    "sent the value again as a new record",
    "different-producers": "copies written by different producer ids (another producer "
    "instance, or a restarted one)",
    "not-idempotent": "a copy written without a producer id (idempotence off): a retry "
    "may append twice",
    "unknown": "a copy is not in any dumped replica's log",
}

# One record on one replica: leader epoch, producer id, producer epoch, sequence, value,
# control (a transaction marker).
Held = tuple[int, int, int, int, str | None, bool]
TP = tuple[str, int]


@dataclass
class ReplicaLogs:
    """What replicas.jsonl holds: per partition, per broker, offset -> record."""

    path: str
    logs: dict[TP, dict[int, dict[int, Held]]] = field(default_factory=dict)
    unavailable: dict[int, str] = field(default_factory=dict)  # broker -> why
    dumped: list[int] = field(default_factory=list)


def read_replicas(path: str | Path) -> ReplicaLogs:
    """Parse replicas.jsonl; a bad line is a HistoryError naming file, line and field."""
    where = LineCursor(str(path))
    out = ReplicaLogs(str(path))
    for no, line in json_lines(path):
        where.at(no)
        kind = where.expect(line, "type", str)
        if kind == "broker":
            _broker(where, line, out)
        elif kind == "batch":
            _batch(where, line, out)
        elif kind != "reader":
            where.fail(f"unknown line type {kind!r}", "type")
    return out


def _broker(where: LineCursor, line: dict[str, Any], out: ReplicaLogs) -> None:
    broker = where.expect(line, "broker", int)
    status = where.expect(line, "status", str)
    if status == "dumped":
        out.dumped.append(broker)
        for rep in where.expect(line, "replicas", list):
            if type(rep) is not dict:
                where.fail("expected an object", "replicas")
            tp = (where.expect(rep, "topic", str), where.natural(rep, "partition"))
            out.logs.setdefault(tp, {}).setdefault(broker, {})
    else:
        out.unavailable[broker] = str(line.get("error", status))


def _batch(where: LineCursor, line: dict[str, Any], out: ReplicaLogs) -> None:
    broker = where.expect(line, "broker", int)
    tp = (where.expect(line, "topic", str), where.natural(line, "partition"))
    epoch = where.expect(line, "leader_epoch", int)
    pid = where.expect(line, "producer_id", int)
    pepoch = where.expect(line, "producer_epoch", int)
    control = where.expect(line, "control", bool)
    log = out.logs.setdefault(tp, {}).setdefault(broker, {})
    for rec in where.expect(line, "records", list):
        if type(rec) is not list or len(rec) != 3:
            where.fail("expected [offset, sequence, value]", "records")
        off, seq, value = rec
        if (
            type(off) is not int
            or type(seq) is not int
            or not (value is None or type(value) is str)
        ):
            where.fail(f"expected [offset, sequence, value], got {rec!r:.80}", "records")
        log[off] = (epoch, pid, pepoch, seq, value, control)


def held_json(broker: int, offset: int, held: Held | None) -> dict[str, Any]:
    """One replica's record at one offset, as examples show it."""
    if held is None:
        return {"broker": broker, "offset": offset, "held": False}
    epoch, pid, pepoch, seq, value, control = held
    out: dict[str, Any] = {
        "broker": broker,
        "offset": offset,
        "leader_epoch": epoch,
        "producer_id": pid,
        "producer_epoch": pepoch,
        "sequence": seq,
        "value": value,
    }
    if control:
        out["control"] = True
    return out


@dataclass
class ReplicaCheck:
    divergence: Anomaly
    stats: dict[str, Any]
    logs: ReplicaLogs


def compare_replicas(facts: Facts, path: Path) -> ReplicaCheck | None:
    """The comparison, or None when the file is absent."""
    if not path.exists():
        return None
    if not path.is_file():
        raise HistoryError("expected a file", file=str(path))
    logs = read_replicas(path)
    found = Anomaly()
    parts: list[dict[str, Any]] = []
    totals = {"offsets_compared": 0, "disagreements": 0, "duplicate_sequences": 0}
    dup_examples: list[dict[str, Any]] = []
    outside = 0
    for tp in sorted(logs.logs):
        replicas = logs.logs[tp]
        tp_id = facts.tp_ids.get(tp)
        end = facts.drain_ends.get(tp_id) if tp_id is not None else None
        isr = _final_isr(facts, tp)
        part: dict[str, Any] = {
            "topic": tp[0],
            "partition": tp[1],
            "replicas": sorted(replicas),
            "in_sync": sorted(isr) if isr is not None else None,
            "unavailable": sorted(_expected(facts, tp) - set(replicas)),
        }
        parts.append(part)
        if end is None:
            part["compared"] = "no completed drain: nothing to compare below"
            continue
        low, high = end.log_start_offset, end.high_watermark
        part["high_watermark"] = high
        compared = disagreements = 0
        firsts: list[dict[str, Any]] = []
        brokers = sorted(replicas)
        starts = {b: min(replicas[b], default=high) for b in brokers}
        for off in range(low, high):
            here = [b for b in brokers if starts[b] <= off]
            if len(here) < 2:
                continue
            compared += 1
            held = [replicas[b].get(off) for b in here]
            if all(h == held[0] for h in held[1:]):
                continue
            disagreements += 1
            ex = {
                "topic": tp[0],
                "partition": tp[1],
                "offset": off,
                "high_watermark": high,
                "in_sync": part["in_sync"],
                "replicas": [held_json(b, off, h) for b, h in zip(here, held, strict=True)],
            }
            if len(firsts) < MAX_EXAMPLES:
                firsts.append(ex)
            in_sync = [h for b, h in zip(here, held, strict=True) if isr is not None and b in isr]
            if len(in_sync) >= 2 and any(h != in_sync[0] for h in in_sync[1:]):
                found.add(ex)
            else:
                outside += 1
        dups = _duplicate_sequences(tp, replicas, high)
        part.update(
            offsets_compared=compared,
            disagreements=disagreements,
            first_disagreements=firsts,
            duplicate_sequences=len(dups),
        )
        if dups:
            part["first_duplicate_sequences"] = dups[:MAX_EXAMPLES]
            dup_examples.extend(dups[: MAX_EXAMPLES - len(dup_examples)])
        totals["offsets_compared"] += compared
        totals["disagreements"] += disagreements
        totals["duplicate_sequences"] += len(dups)
    stats = {
        "file": REPLICAS_JSONL,
        "brokers_dumped": sorted(logs.dumped),
        "brokers_unavailable": {str(b): e for b, e in sorted(logs.unavailable.items())},
        **totals,
        "disagreements_in_sync": found.count,
        "disagreements_evidence_only": outside,
        "duplicate_sequence_examples": dup_examples,
        "partitions": parts,
    }
    return ReplicaCheck(found, stats, logs)


def _final_isr(facts: Facts, tp: TP) -> set[int] | None:
    """The partition's ISR in the controller's last line for it (None: no record)."""
    ctl = facts.controller
    if ctl is None or tp not in ctl.partitions or not ctl.partitions[tp]:
        return None
    return set(ctl.partitions[tp][-1].isr)


def _expected(facts: Facts, tp: TP) -> set[int]:
    """The partition's replicas by the controller's last line (empty: no record)."""
    ctl = facts.controller
    if ctl is None or not ctl.partitions.get(tp):
        return set()
    return set(ctl.partitions[tp][-1].replicas)


def _duplicate_sequences(
    tp: TP, replicas: dict[int, dict[int, Held]], high: int
) -> list[dict[str, Any]]:
    """(producer id, epoch, sequence) at two or more offsets below ``high`` of one
    replica; each one once, with the brokers whose log shows it."""
    seen: dict[tuple[int, int, int, tuple[int, ...]], list[int]] = {}
    for broker in sorted(replicas):
        at: dict[tuple[int, int, int], list[int]] = {}
        for off, (_e, pid, pepoch, seq, _v, control) in replicas[broker].items():
            if off < high and pid != NO_PRODUCER and seq >= 0 and not control:
                at.setdefault((pid, pepoch, seq), []).append(off)
        for key, found in at.items():
            if len(found) > 1:
                seen.setdefault((*key, tuple(sorted(found))), []).append(broker)
    out = []
    for (pid, pepoch, seq, offsets), brokers in sorted(seen.items()):
        log = replicas[brokers[0]]
        out.append(
            {
                "topic": tp[0],
                "partition": tp[1],
                "producer_id": pid,
                "producer_epoch": pepoch,
                "sequence": seq,
                "offsets": list(offsets),
                "brokers": brokers,
                "records": [held_json(brokers[0], o, log.get(o)) for o in offsets],
            }
        )
    return out


def duplicate_causes(facts: Facts, logs: ReplicaLogs) -> dict[int, str]:
    """Value id -> cause (a key of :data:`DUPLICATE_CAUSES`) of every duplicate."""
    out: dict[int, str] = {}
    for vid in sorted(facts.extra):
        held: list[Held] = []
        for packed in facts.positions(vid):
            tp, off = unpack(packed)
            copy = _held_at(logs, facts.tps[tp], off, facts.value_list[vid])
            if copy is None:
                break
            held.append(copy)
        else:
            out[vid] = _cause(held)
            continue
        out[vid] = "unknown"
    return out


def _held_at(logs: ReplicaLogs, tp: TP, off: int, value: str) -> Held | None:
    """The record holding ``value`` at ``off`` on the lowest-numbered replica that has it."""
    for _broker, log in sorted(logs.logs.get(tp, {}).items()):
        held = log.get(off)
        if held is not None and held[4] == value:
            return held
    return None


def _cause(held: list[Held]) -> str:
    pids = {h[1] for h in held}
    if NO_PRODUCER in pids:
        return "not-idempotent"
    if len(pids) > 1:
        return "different-producers"
    if len({h[2] for h in held}) > 1:
        return "producer-epoch-bump"
    if len({h[3] for h in held}) < len(held):
        return "sequence-written-twice"
    return "same-epoch-resend"


def attach_causes(facts: Facts, logs: ReplicaLogs, anomalies: dict[str, Anomaly]) -> None:
    """Count the ``duplicate`` anomaly's causes and name each example's."""
    dup = anomalies.get("duplicate")
    if dup is None or not dup.count:
        return
    causes = duplicate_causes(facts, logs)
    for cause in causes.values():
        dup.causes[cause] = dup.causes.get(cause, 0) + 1
    for ex in dup.examples:
        value = ex.get("value")
        vid = facts.values.get(value) if isinstance(value, str) else None
        if vid is not None and vid in causes:
            ex["cause"] = causes[vid]


def attach_stories(logs: ReplicaLogs, anomalies: dict[str, Anomaly]) -> None:
    """Add ``replicas`` to each ``duplicate`` and ``lost-write`` example: where each
    replica holds the example's value (and, for a lost write, ``replicas_at_offset``:
    what each holds at the acknowledged offset)."""
    examples = [
        (kind, ex)
        for kind in ("duplicate", "lost-write")
        for ex in (anomalies[kind].examples if kind in anomalies else [])
        if isinstance(ex.get("value"), str) and "topic" in ex and "partition" in ex
    ]
    for kind, ex in examples:
        tp = (ex["topic"], ex["partition"])
        value = ex["value"]
        story = []
        for broker, log in sorted(logs.logs.get(tp, {}).items()):
            for off, held in sorted(log.items()):
                if held[4] == value:
                    story.append(held_json(broker, off, held))
        ex["replicas"] = story
        if kind == "lost-write" and isinstance(ex.get("offset"), int):
            off = ex["offset"]
            ex["replicas_at_offset"] = [
                held_json(b, off, log.get(off)) for b, log in sorted(logs.logs.get(tp, {}).items())
            ]


__all__ = [
    "KIND",
    "ReplicaCheck",
    "ReplicaLogs",
    "DUPLICATE_CAUSES",
    "attach_causes",
    "attach_stories",
    "duplicate_causes",
    "compare_replicas",
    "read_replicas",
]
