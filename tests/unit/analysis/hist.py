"""Hand-written histories (format v1) for the analysis tests."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

# One builder for hand-written histories: the checker tests' own.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checker"))
from checker_hist import H  # noqa: E402  # isort: skip


class History(H):
    """The checker tests' history builder, in the call shapes the analysis tests use."""

    def send(  # type: ignore[override]
        self, value: str, partition: int | None, offset: int | None, outcome: str = "ok"
    ) -> None:
        self.invoke(value, process=1)
        if outcome == "ok":
            assert partition is not None and offset is not None
            self.ok(value, partition, offset, process=1)
        else:
            error = "NOT_ENOUGH_REPLICAS" if outcome == "fail" else "MSG_TIMED_OUT"
            self.add(process=1, type=outcome, f="send", topic=self.topic, value=value, error=error)

    def poll(self, *records: tuple[int, int, str], process: int = 7) -> int:  # type: ignore[override]
        return super().poll(process, *records)

    def lines(self) -> bytes:
        return b"".join(orjson.dumps(e) + b"\n" for e in self.events)

    def write(self, run_dir: Path, tail: bytes = b"") -> Path:  # type: ignore[override]
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
