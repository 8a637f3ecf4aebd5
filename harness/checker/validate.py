"""Field checks and the less frequent line kinds (metadata, fault) of the history pass."""

from __future__ import annotations

from typing import Any, NoReturn

from kchaos.harness.checker.facts import Facts, Fault, LeaderChange
from kchaos.harness.errors import shown
from kchaos.harness.rundir.where import NAMES, LineCursor

__all__ = ["bad_record", "metadata", "record_fault"]


def bad_record(where: LineCursor, rec: Any) -> NoReturn:
    """Name what is wrong with one record of a poll or drain line."""
    if type(rec) is not dict:
        where.fail(f"expected a record object, got {shown(rec)}", "records")
    for key, kind in (("topic", str), ("partition", int), ("offset", int), ("value", str)):
        if key not in rec:
            where.fail("a record lacks this field", f"records.{key}")
        if type(rec[key]) is not kind:
            where.fail(f"expected {NAMES[kind]}, got {shown(rec[key])}", f"records.{key}")
        if kind is int and rec[key] < 0:
            where.fail(f"must not be negative, got {rec[key]}", f"records.{key}")
    where.fail("bad record", "records")


_INT_ONLY = frozenset((int,))


def _ints(value: Any) -> bool:
    return type(value) is list and set(map(type, value)) <= _INT_ONLY


def metadata(
    facts: Facts,
    where: LineCursor,
    ev: Any,
    index: int,
    time: int,
    last_obs: dict[int, tuple[int, int, list[int], list[int] | None]],
) -> None:
    """One monitor observation: append it and note a leader from outside ISR and ELR."""
    topic = ev.get("topic")
    part = ev.get("partition")
    leader = ev.get("leader")
    isr = ev.get("isr")
    if type(topic) is not str or type(part) is not int or type(leader) is not int:
        where.expect(ev, "topic", str)
        where.expect(ev, "partition", int)
        where.expect(ev, "leader", int)
    if part < 0:
        where.natural(ev, "partition")
    if leader < -1:
        where.fail(f"must be a node id or -1, got {leader}", "leader")
    if not _ints(isr):
        where.int_list(ev, "isr")
    replicas = ev.get("replicas")
    if replicas is not None and not _ints(replicas):
        where.int_list(ev, "replicas")
    elr = ev.get("elr")
    if elr is not None and not _ints(elr):
        where.int_list(ev, "elr")
    min_insync = ev.get("min_insync")
    if min_insync is None:
        min_insync = -1
    elif type(min_insync) is not int:
        where.expect(ev, "min_insync", int)
    tp = facts.tp_ids.get((topic, part))
    if tp is None:
        tp = facts.tp(topic, part)
    obs = facts.observations[tp]
    obs.index.append(index)
    obs.time.append(time)
    obs.leader.append(leader)
    obs.isr_size.append(len(isr))
    obs.min_insync.append(min_insync)
    obs.full.append(1 if replicas is None or all(r in isr for r in replicas) else 0)
    facts.obs_order.append(tp)
    prev = last_obs.get(tp)
    if (
        prev is not None
        and leader >= 0
        and leader != prev[1]
        and leader not in prev[2]
        and (prev[3] is None or leader not in prev[3])
    ):
        facts.leader_changes.append(
            LeaderChange(tp, index, prev[0], time, prev[1], leader, prev[2], prev[3])
        )
    last_obs[tp] = (index, leader, isr, elr)


def record_fault(
    facts: Facts,
    where: LineCursor,
    ev: dict[str, Any],
    index: int,
    time: int,
    open_faults: dict[str, int],
) -> bool:
    """A fault start or stop; True when the set of open faults changed (a new epoch)."""
    phase = where.expect(ev, "phase", str)
    if phase not in ("start", "stop"):
        where.fail(f"unknown phase {shown(phase)} (start or stop)", "phase")
    fid = str(where.expect(ev, "id", (str, int)))
    if phase == "start":
        targets = ev.get("targets")
        error = ev.get("error")
        fault = Fault(
            fid,
            str(ev.get("fault")),
            targets if isinstance(targets, list) else [],
            index,
            time,
            error=None if error is None else str(error),
            detail=dict(detail) if isinstance(detail := ev.get("detail"), dict) else {},
            params=dict(params) if isinstance(params := ev.get("params"), dict) else {},
        )
        open_faults[fid] = len(facts.faults)
        facts.faults.append(fault)
    elif phase == "stop":
        pos = open_faults.pop(fid, None)
        if pos is None:
            facts.warnings.append(
                f"{where.path}:{where.no}: fault stop without a start ({shown(fid)})"
            )
            return False
        facts.faults[pos].stop_index = index
        facts.faults[pos].stop_time = time
        if isinstance(detail := ev.get("detail"), dict):
            facts.faults[pos].stop_detail = dict(detail)
    else:
        return False
    facts.epoch_faults.append(tuple(sorted(open_faults.values())))
    return True
