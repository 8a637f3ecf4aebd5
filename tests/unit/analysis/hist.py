"""Hand-written histories (format v1) for the analysis tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


class History:
    """Append events with automatic index and time (1 ms apart); ``write`` a run dir."""

    def __init__(self, topic: str = "t") -> None:
        self.topic = topic
        self.events: list[dict[str, Any]] = []

    def add(self, **event: Any) -> int:
        index = len(self.events)
        self.events.append({"index": index, "time": (index + 1) * 1_000_000, **event})
        return index

    def send(self, value: str, partition: int | None, offset: int | None, outcome: str = "ok"):
        self.add(process=1, type="invoke", f="send", topic=self.topic, value=value)
        done: dict[str, Any] = {"process": 1, "type": outcome, "f": "send", "topic": self.topic}
        if outcome == "ok":
            done.update(partition=partition, offset=offset)
        else:
            done["error"] = "NOT_ENOUGH_REPLICAS" if outcome == "fail" else "MSG_TIMED_OUT"
        self.add(value=value, **done)

    def rec(self, partition: int, offset: int, value: str) -> dict[str, Any]:
        return {"topic": self.topic, "partition": partition, "offset": offset, "value": value}

    def poll(self, *records: tuple[int, int, str], process: int = 7) -> None:
        self.add(process=process, type="invoke", f="poll")
        self.add(process=process, type="ok", f="poll", records=[self.rec(*r) for r in records])

    def drain(self, *records: tuple[int, int, str]) -> None:
        self.add(process="drain", type="ok", f="drain", records=[self.rec(*r) for r in records])

    def drain_end(self, partition: int, hwm: int, lso: int = 0) -> None:
        self.add(process="drain", type="ok", f="drain-end", topic=self.topic,
                 partition=partition, log_start_offset=lso, high_watermark=hwm)  # fmt: skip

    def fault(self, phase: str, fid: str = "f-1", fault: str = "pause") -> None:
        self.add(process="nemesis", type="info", f="fault", phase=phase, id=fid, fault=fault,
                 targets=["broker-2"], params={})  # fmt: skip

    def lines(self) -> bytes:
        return b"".join(orjson.dumps(e) + b"\n" for e in self.events)

    def write(self, run_dir: Path, tail: bytes = b"") -> Path:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "history.jsonl").write_bytes(self.lines() + tail)
        return run_dir


def every_kind() -> tuple[History, dict[str, int]]:
    """One history with every data anomaly kind, and the counts format v1 gives."""
    h = History()
    h.send("v1", 0, 0)
    h.send("v2", 0, 1)
    h.fault("start")
    h.send("v3", None, None, "fail")  # aborted-read: read back below
    h.send("v4", None, None, "info")  # unknown outcome, never read: nothing
    h.send("v5", 1, 0)  # partition 1 is never drained and v5 never read: unseen
    h.send("v6", 0, 2)  # lost-write; the drain holds v9 there: inconsistent-offset
    h.fault("stop")
    h.send("v7", 1, 1)  # undrained but polled: not unseen
    h.add(process=1, type="invoke", f="send", topic="t", value="v8")  # still in flight
    h.poll((0, 0, "v1"), (0, 1, "v2"), (0, 5, "vX"), (1, 1, "v7"), (0, 3, "v3"))
    h.drain((0, 0, "v1"), (0, 1, "v2"), (0, 2, "v9"), (0, 4, "v1"))  # v1 twice: duplicate
    h.drain_end(0, hwm=5)
    expected = {
        "lost-write": 1,
        "uncommitted-read": 2,  # vX and v3, polled above the drain's start, not drained
        "aborted-read": 1,
        "duplicate": 1,
        "inconsistent-offset": 1,
        "unseen": 1,
    }
    return h, expected


def near_misses() -> History:
    """Things that look like anomalies and are not (a valid history)."""
    h = History()
    h.send("a", 0, 10)  # below the log start offset: deleted, not lost
    h.send("b", 0, 11)
    h.send("c", 0, 12, "info")  # info that landed
    h.send("d", None, None, "info")  # info that did not land
    h.send("e", None, None, "fail")  # fail never read
    h.poll((0, 11, "b"))
    h.poll((0, 11, "b"), process=8)  # read again after a reassignment: same position
    h.poll((0, 9, "z"))  # polled below the log start offset: not uncommitted
    h.drain((0, 11, "b"), (0, 12, "c"))
    h.drain_end(0, hwm=13, lso=11)
    return h
