"""The simulated cluster behind the generator: partitions' logs, leaders, ISR and ELR,
the monitor, the nemesis's faults, the injections that touch them, and the final drain."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kchaos.harness.histgen.model import Injection

# Slot markers in the simulated log: what a poll / the drain may see at an offset.
NORMAL, LOST, PHANTOM = 0, 1, 2


@dataclass
class Send:
    value: str
    process: int
    partition: int
    invoke_tick: int
    due: int
    plan: str = "normal"  # normal | fail | info-landed | info-lost | <injection kind>


@dataclass
class Part:
    leader: int
    isr: list[int]
    elr: list[int]
    mode: str = "ok"  # ok | undermin | offline
    log: list[str] = field(default_factory=list)
    slot: list[int] = field(default_factory=list)
    pos: int = 0  # the consumer group's next offset


class Sim:
    def __init__(
        self,
        path: Path,
        seed: int,
        topic: str,
        nparts: int,
        replicas: int,
        min_insync: int,
        elr: bool,
    ) -> None:
        self.rng = random.Random(seed)
        self.topic = topic
        self.replicas = list(range(1, replicas + 1))
        self.min_insync = min_insync
        self.elr = elr
        self.parts = [
            Part(leader=self.replicas[p % replicas], isr=list(self.replicas), elr=[])
            for p in range(nparts)
        ]
        self.fh = path.open("wb", buffering=1 << 20)
        self.index = 0
        self.time = 0
        self.injected: list[Injection] = []
        self.outcomes = {"ok": 0, "fail": 0, "info": 0}
        self.sends = 0

    def emit(self, event: dict[str, Any]) -> int:
        self.time += self.rng.randrange(10_000, 200_000)
        event = {"index": self.index, "time": self.time, **event}
        self.fh.write(orjson.dumps(event) + b"\n")
        self.index += 1
        return self.index - 1

    def metadata(self, p: int) -> int:
        part = self.parts[p]
        event: dict[str, Any] = {
            "process": "monitor",
            "type": "ok",
            "f": "metadata",
            "topic": self.topic,
            "partition": p,
            "leader": part.leader,
            "isr": sorted(part.isr),
            "replicas": self.replicas,
            "min_insync": self.min_insync,
        }
        if self.elr:
            event["elr"] = sorted(part.elr)
        return self.emit(event)

    def append(self, p: int, value: str, slot: int = NORMAL) -> int:
        part = self.parts[p]
        part.log.append(value)
        part.slot.append(slot)
        return len(part.log) - 1


def inject(
    g: Sim, kind: str, p: int, send_now: Callable[[int, str], None], flags: set[str]
) -> bool:
    """Add one anomaly of ``kind`` on partition ``p``; False to try again later."""
    if p < 0:
        return False
    part = g.parts[p]
    if kind in ("lost-write", "uncommitted-read", "aborted-read", "duplicate"):
        send_now(p, kind)
    elif kind == "inconsistent-offset":
        if not part.log or part.slot[-1] != NORMAL:
            send_now(p, "normal")  # a plain record for the acknowledgement to point at
        send_now(p, kind)
    elif kind in ("nonmonotonic-poll", "poll-skip"):
        flags.add(kind)
    elif kind == "acked-below-min-isr":
        part.isr = [part.leader]
        g.metadata(p)
        send_now(p, kind)
    elif kind == "unclean-election":
        others = [r for r in g.replicas if r != part.leader]
        part.isr = [part.leader, others[0]] if len(others) > 1 else [part.leader]
        g.metadata(p)
        part.leader = others[-1]
        part.isr = list(g.replicas)
        i = g.metadata(p)
        g.injected.append(Injection(kind, g.topic, p, None, None, i))
    elif kind == "offline":
        part.mode = "offline"
        old = part.leader
        part.leader = -1
        part.isr = [old]
        i = g.metadata(p)
        g.time += 200_000_000  # offline for a while
        g.metadata(p)
        g.time += 200_000_000
        part.leader = old
        part.isr = list(g.replicas)
        part.mode = "ok"
        g.metadata(p)
        g.injected.append(Injection(kind, g.topic, p, None, None, i))
    return True


def fault_step(
    g: Sim, tick: int, st: dict[str, Any] | None, n: int, undrained: int
) -> tuple[dict[str, Any] | None, int]:
    """A fault every 300 ticks: ISR shrink, sometimes below min with an ELR election."""
    if st is None:
        if tick % 300 != 150:
            return None, n
        choices = [p for p in range(len(g.parts)) if p != undrained and g.parts[p].mode == "ok"]
        if not choices:
            return None, n
        p = g.rng.choice(choices)
        part = g.parts[p]
        follower = [r for r in g.replicas if r != part.leader][0]
        st = {
            "id": f"f-{n}",
            "p": p,
            "t0": tick,
            "deep": g.elr and n % 2 == 1,
            "target": f"broker-{follower}",
        }
        g.emit(
            {
                "process": "nemesis",
                "type": "info",
                "f": "fault",
                "phase": "start",
                "id": st["id"],
                "fault": "pause",
                "targets": [st["target"]],
                "params": {"duration_ms": 150},
            }
        )
        part.isr = [r for r in part.isr if r != follower]
        g.metadata(p)
        return st, n + 1
    part = g.parts[st["p"]]
    age = tick - st["t0"]
    if st["deep"] and age == 5 and len(part.isr) >= 2:
        part.elr = [r for r in part.isr if r != part.leader]
        part.isr = [part.leader]
        part.mode = "undermin"
        g.metadata(st["p"])
    elif st["deep"] and age == 10 and part.elr:
        part.leader, part.elr = part.elr[0], [part.leader]
        part.isr = [part.leader]
        g.metadata(st["p"])
    elif age == 15:
        fault_stop(g, st)
        return None, n
    return st, n


def fault_stop(g: Sim, st: dict[str, Any]) -> None:
    g.emit(
        {
            "process": "nemesis",
            "type": "info",
            "f": "fault",
            "phase": "stop",
            "id": st["id"],
            "fault": "pause",
            "targets": [st["target"]],
        }
    )
    part = g.parts[st["p"]]
    part.isr = list(g.replicas)
    part.elr = []
    part.mode = "ok"
    g.metadata(st["p"])


def drain(g: Sim, log_start_offset: int, skip_last: bool) -> list[int]:
    lsos = []
    for p, part in enumerate(g.parts):
        floor = min(
            [inj.offset for inj in g.injected if inj.partition == p and inj.offset is not None]
            + [len(part.log), log_start_offset]
        )
        lso = max(0, floor)
        lsos.append(lso)
        if skip_last and p == len(g.parts) - 1:
            continue
        batch: list[dict[str, Any]] = []
        for off in range(lso, len(part.log)):
            if part.slot[off] == NORMAL:
                batch.append(rec(g.topic, p, off, part.log[off]))
            if len(batch) >= 500:
                g.emit({"process": "drain", "type": "ok", "f": "drain", "records": batch})
                batch = []
        if batch:
            g.emit({"process": "drain", "type": "ok", "f": "drain", "records": batch})
        g.emit(
            {
                "process": "drain",
                "type": "ok",
                "f": "drain-end",
                "topic": g.topic,
                "partition": p,
                "log_start_offset": lso,
                "high_watermark": len(part.log),
            }
        )
    return lsos


def rec(topic: str, p: int, off: int, value: str) -> dict[str, Any]:
    return {"topic": topic, "partition": p, "offset": off, "value": value}
