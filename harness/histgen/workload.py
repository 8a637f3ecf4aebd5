"""The clients of the simulation: producers with sends in flight, consumers that poll,
rebalance and re-read, the schedule of injections, and the wind-down before the drain."""

from __future__ import annotations

from typing import Any

from kchaos.harness.histgen.model import INJECTABLE, Injection
from kchaos.harness.histgen.sim import (
    LOST,
    NORMAL,
    PHANTOM,
    Send,
    Sim,
    fault_step,
    fault_stop,
    rec,
)
from kchaos.harness.histgen.sim import inject as inject_one


def _assign(g: Sim, consumers: int, shift: int) -> list[list[int]]:
    """Deal the partitions round robin to the consumers (100, 101, ...), turned by
    ``shift``; emit each consumer's ``assign`` line and return its partitions."""
    nparts = len(g.parts)
    assignment = [
        [p for p in range(nparts) if (p + shift) % consumers == c] for c in range(consumers)
    ]
    for c in range(consumers):
        g.emit(
            {
                "process": 100 + c,
                "type": "ok",
                "f": "assign",
                "partitions": [[g.topic, p] for p in assignment[c]],
            }
        )
    return assignment


def run_workload(
    g: Sim,
    events: int,
    producers: int,
    consumers: int,
    inject: list[str],
    faults: bool,
    in_flight: int,
    max_poll: int,
) -> None:
    rng = g.rng
    nparts = len(g.parts)
    undrained = nparts - 1 if "unseen" in inject else -1
    pending: dict[int, list[Send]] = {}
    inflight = [0] * producers
    counter = [0] * producers
    shift = 0
    flags: set[str] = set()
    last_read: dict[tuple[int, int], int] = {}
    # injections other than unseen happen in the middle, spaced out, on partitions
    # other than the undrained one
    todo = [k for k in inject if k != "unseen"]
    inject_at = {
        events // 3 + i * max(events // (3 * max(len(todo), 1)), 50): k for i, k in enumerate(todo)
    }
    fault_state: dict[str, Any] | None = None
    fault_no = 0
    assignment = _assign(g, consumers, shift)
    tick = 0

    def target_part() -> int:
        choices = [p for p in range(nparts) if p != undrained and g.parts[p].mode == "ok"]
        return choices[0] if choices else -1

    def complete(s: Send) -> None:
        part = g.parts[s.partition]
        base = {"process": s.process, "f": "send", "topic": g.topic, "value": s.value}
        if s.plan in ("normal", "acked-below-min-isr") and part.mode != "ok":
            if tick - s.invoke_tick < 40:  # the client retries until its delivery timeout
                pending.setdefault(tick + 1, []).append(s)
                return
            kind = "fail" if part.mode == "undermin" else "info"
            err = "NOT_ENOUGH_REPLICAS" if kind == "fail" else "MSG_TIMED_OUT"
            g.emit({**base, "type": kind, "error": err})
        elif s.plan == "fail":
            g.emit({**base, "type": "fail", "error": "NOT_ENOUGH_REPLICAS"})
            kind = "fail"
        elif s.plan == "info-lost":
            g.emit({**base, "type": "info", "error": "MSG_TIMED_OUT"})
            kind = "info"
        elif s.plan in ("info-landed", "uncommitted-read"):
            slot = PHANTOM if s.plan == "uncommitted-read" else NORMAL
            off = g.append(s.partition, s.value, slot)
            i = g.emit({**base, "type": "info", "error": "REQUEST_TIMED_OUT"})
            kind = "info"
            if slot == PHANTOM:
                g.injected.append(Injection(s.plan, g.topic, s.partition, s.value, off, i))
        elif s.plan == "aborted-read":
            off = g.append(s.partition, s.value)
            i = g.emit({**base, "type": "fail", "error": "INVALID_RECORD"})
            kind = "fail"
            g.injected.append(Injection(s.plan, g.topic, s.partition, s.value, off, i))
        else:
            slot = LOST if s.plan == "lost-write" else NORMAL
            off = g.append(s.partition, s.value, slot)
            if s.plan == "duplicate":
                g.append(s.partition, s.value)
            acked = off
            if s.plan == "inconsistent-offset":
                acked = off - 1
            i = g.emit({**base, "type": "ok", "partition": s.partition, "offset": acked})
            kind = "ok"
            if s.plan in INJECTABLE:
                g.injected.append(Injection(s.plan, g.topic, s.partition, s.value, acked, i))
            if s.plan == "acked-below-min-isr":
                g.metadata(s.partition)
                part.isr = list(g.replicas)
                g.metadata(s.partition)
        g.outcomes[kind] += 1
        inflight[s.process] -= 1

    def invoke(proc: int, p: int, plan: str, due: int) -> Send:
        value = f"{proc}-{counter[proc]}"
        counter[proc] += 1
        g.sends += 1
        inflight[proc] += 1
        g.emit(
            {
                "process": proc,
                "type": "invoke",
                "f": "send",
                "topic": g.topic,
                "key": f"k{p}",
                "value": value,
            }
        )
        s = Send(value, proc, p, tick, due, plan)
        pending.setdefault(due, []).append(s)
        return s

    def send_now(p: int, plan: str) -> None:
        s = invoke(0, p, plan, -1)
        pending.pop(-1)
        complete(s)

    def poll(c: int) -> None:
        proc = 100 + c
        g.emit({"process": proc, "type": "invoke", "f": "poll"})
        records: list[dict[str, Any]] = []
        for p in assignment[c]:
            part = g.parts[p]
            # a skip needs three records in one poll, whatever max_poll says
            limit = max(max_poll, 3) if "poll-skip" in flags else max_poll
            end = min(len(part.log), part.pos + limit)
            prev = part.pos - 1
            if (
                "nonmonotonic-poll" in flags
                and p != undrained
                and end > part.pos
                and last_read.get((c, p)) == prev
                and part.slot[prev] == NORMAL
            ):
                records.append(rec(g.topic, p, prev, part.log[prev]))
                flags.discard("nonmonotonic-poll")
                g.injected.append(
                    Injection("nonmonotonic-poll", g.topic, p, part.log[prev], prev, g.index)
                )
            skip_at = -1
            if (
                "poll-skip" in flags
                and p != undrained
                and end - part.pos >= 3
                and all(x == NORMAL for x in part.slot[part.pos : end])
            ):
                skip_at = part.pos + 1
                flags.discard("poll-skip")
                g.injected.append(
                    Injection("poll-skip", g.topic, p, part.log[skip_at], skip_at, g.index)
                )
            for off in range(part.pos, end):
                if part.slot[off] != LOST and off != skip_at:
                    records.append(rec(g.topic, p, off, part.log[off]))
                    last_read[(c, p)] = off
            part.pos = end
        g.emit({"process": proc, "type": "ok", "f": "poll", "records": records})

    def rebalance() -> None:
        nonlocal shift, assignment
        shift += 1
        for part in g.parts:  # a rebalance re-delivers a few records: a new stretch
            part.pos = max(0, part.pos - rng.randrange(0, 4))
        last_read.clear()
        assignment = _assign(g, consumers, shift)

    while g.index < events:
        tick += 1
        if tick % 10 == 0:
            for p in range(nparts):
                g.metadata(p)
        if faults:
            fault_state, fault_no = fault_step(g, tick, fault_state, fault_no, undrained)
        for s in pending.pop(tick, []):
            complete(s)
        for proc in range(producers):
            if inflight[proc] < in_flight and rng.random() < 0.7:
                p = rng.randrange(nparts)
                r = rng.random()
                plan = (
                    "fail"
                    if r < 0.03
                    else "info-landed"
                    if r < 0.05
                    else "info-lost"
                    if r < 0.06
                    else "normal"
                )
                invoke(proc, p, plan, tick + rng.randrange(1, 6))
        for c in range(consumers):
            if rng.random() < 0.5:
                poll(c)
        if rng.random() < 0.003:
            rebalance()
        for at in [a for a in inject_at if a <= g.index]:
            kind = inject_at[at]
            if inject_one(g, kind, target_part(), send_now, flags):
                del inject_at[at]
    # wind down: heal, finish sends, let consumers catch up
    if fault_state is not None:
        fault_stop(g, fault_state)
    while inject_at:  # injections the run was too short for
        at = min(inject_at)
        inject_one(g, inject_at.pop(at), target_part(), send_now, flags)
    wind_down = tick
    while pending or flags:
        tick += 1
        for s in pending.pop(tick, []):
            complete(s)
        if flags:  # fresh records for the pending poll injections
            for p in range(nparts):
                if p != undrained:
                    for _ in range(4):
                        invoke(0, p, "normal", tick + 1)
        for c in range(consumers):
            poll(c)
        if tick - wind_down > 100_000:
            raise RuntimeError("generator did not wind down")
    for _ in range(max(len(pt.log) for pt in g.parts) // max_poll + 2):
        for c in range(consumers):
            poll(c)
    if undrained >= 0:
        for _ in range(3):  # acknowledged after the consumers stopped; never drained
            s = invoke(0, undrained, "normal", tick)
            complete(s)
            g.injected.append(
                Injection(
                    "unseen",
                    g.topic,
                    undrained,
                    s.value,
                    len(g.parts[undrained].log) - 1,
                    g.index - 1,
                )
            )
    for p in range(nparts):
        g.metadata(p)
