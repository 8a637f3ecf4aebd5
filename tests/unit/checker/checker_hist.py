"""A tiny builder of hand-written histories (format v1) for the checker tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from kchaos.harness.checker import RunSettings, check_history
from kchaos.harness.checker.model import Results


class H:
    """Append events with automatic index and time (1 ms apart); ``write`` the file."""

    def __init__(self, topic: str = "t") -> None:
        self.topic = topic
        self.events: list[dict[str, Any]] = []
        self.skipped_ns = 0

    def add(self, **event: Any) -> int:
        index = len(self.events)
        self.events.append({"index": index, "time": self.now(index), **event})
        return index

    def now(self, index: int | None = None) -> int:
        """The time (ns) of the line with ``index`` (default: the next line)."""
        index = len(self.events) if index is None else index
        return (index + 1) * 1_000_000 + self.skipped_ns

    def wait(self, seconds: float) -> None:
        """Let ``seconds`` pass before the next line."""
        self.skipped_ns += int(seconds * 1e9)

    def wait_until(self, time_ns: int) -> None:
        """Let time pass so that the next line is at ``time_ns`` (not before the next
        line's own time)."""
        assert time_ns >= self.now(), f"{time_ns} is before the next line ({self.now()})"
        self.skipped_ns += time_ns - self.now()

    # sends ------------------------------------------------------------------------------
    def invoke(self, value: str, process: int = 0, **extra: Any) -> int:
        return self.add(
            process=process,
            type="invoke",
            f="send",
            topic=self.topic,
            key="k",
            value=value,
            **extra,
        )

    def ok(self, value: str, partition: int, offset: int, process: int = 0) -> int:
        return self.add(
            process=process,
            type="ok",
            f="send",
            topic=self.topic,
            partition=partition,
            offset=offset,
            value=value,
        )

    def done(self, value: str, typ: str, process: int = 0) -> int:
        return self.add(
            process=process, type=typ, f="send", topic=self.topic, value=value, error="X"
        )

    def send(self, value: str, partition: int, offset: int, **extra: Any) -> int:
        self.invoke(value, **extra)
        return self.ok(value, partition, offset)

    # reads ------------------------------------------------------------------------------
    def rec(self, partition: int, offset: int, value: str) -> dict[str, Any]:
        return {"topic": self.topic, "partition": partition, "offset": offset, "value": value}

    def poll(self, process: int, *records: tuple[int, int, str]) -> int:
        self.add(process=process, type="invoke", f="poll")
        return self.add(
            process=process, type="ok", f="poll", records=[self.rec(*r) for r in records]
        )

    def assign(self, process: int, *partitions: int) -> int:
        return self.add(
            process=process, type="ok", f="assign", partitions=[[self.topic, p] for p in partitions]
        )

    def drain(self, *records: tuple[int, int, str]) -> int:
        return self.add(
            process="drain", type="ok", f="drain", records=[self.rec(*r) for r in records]
        )

    def drain_end(self, partition: int, hwm: int, lso: int = 0) -> int:
        return self.add(
            process="drain",
            type="ok",
            f="drain-end",
            topic=self.topic,
            partition=partition,
            log_start_offset=lso,
            high_watermark=hwm,
        )

    def drain_all(self, partition: int, values: list[str], lso: int = 0) -> None:
        """Drain ``values`` at offsets lso, lso+1, ... and end the partition there."""
        self.drain(*[(partition, lso + i, v) for i, v in enumerate(values)])
        self.drain_end(partition, lso + len(values), lso)

    # monitor and nemesis ----------------------------------------------------------------
    def meta(
        self,
        partition: int,
        leader: int,
        isr: list[int],
        *,
        replicas: list[int] | None = None,
        min_insync: int | None = 2,
        elr: list[int] | None = None,
    ) -> int:
        event: dict[str, Any] = {
            "process": "monitor",
            "type": "ok",
            "f": "metadata",
            "topic": self.topic,
            "partition": partition,
            "leader": leader,
            "isr": isr,
            "replicas": replicas or [1, 2, 3],
        }
        if min_insync is not None:
            event["min_insync"] = min_insync
        if elr is not None:
            event["elr"] = elr
        return self.add(**event)

    def fault(
        self,
        phase: str,
        fid: str = "f-1",
        fault: str = "pause",
        targets: list[str] | None = None,
        detail: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> int:
        extra: dict[str, Any] = {} if detail is None else {"detail": detail}
        if error is not None:
            extra["error"] = error
        return self.add(
            process="nemesis",
            type="info",
            f="fault",
            phase=phase,
            id=fid,
            fault=fault,
            targets=["broker-2"] if targets is None else targets,
            params=params or {},
            **extra,
        )

    # output -----------------------------------------------------------------------------
    def write(self, path: Path) -> Path:
        path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in self.events))
        return path

    def check(self, tmp_path: Path, config: RunSettings | None = None) -> Results:
        return check_history(self.write(tmp_path / "history.jsonl"), config)


class C:
    """Lines of a controller.jsonl (format 1.1): whole states, offsets counted up."""

    def __init__(self, topic: str = "t") -> None:
        self.topic = topic
        self.lines: list[dict[str, Any]] = []

    def _add(self, time_ns: int, **line: Any) -> int:
        offset = 10 * (len(self.lines) + 1)
        self.lines.append({"offset": offset, "time": time_ns, **line})
        return offset

    def part(
        self,
        time_ns: int,
        leader: int,
        isr: list[int],
        *,
        partition: int = 0,
        elr: list[int] | None = None,
        lke: list[int] | None = None,
        epoch: int = 0,
        recovering: bool = False,
        replicas: list[int] | None = None,
    ) -> int:
        return self._add(
            time_ns,
            type="partition",
            topic=self.topic,
            partition=partition,
            leader=leader,
            leader_epoch=epoch,
            partition_epoch=epoch,
            isr=isr,
            elr=elr or [],
            last_known_elr=lke or [],
            replicas=replicas or [1, 2, 3],
            recovering=recovering,
        )

    def broker(
        self,
        time_ns: int,
        broker: int,
        epoch: int,
        *,
        fenced: bool = False,
        shutting_down: bool = False,
    ) -> int:
        return self._add(
            time_ns,
            type="broker",
            broker=broker,
            broker_epoch=epoch,
            fenced=fenced,
            shutting_down=shutting_down,
        )

    def write(self, path: Path) -> Path:
        path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in self.lines))
        return path


def check_with(h: H, c: C, tmp_path: Path, config: RunSettings | None = None) -> Results:
    """Write both files into one run directory and check them together."""
    c.write(tmp_path / "controller.jsonl")
    return h.check(tmp_path, config)


def good() -> H:
    """A small history that is valid: two sends, both drained."""
    h = H()
    h.send("a", 0, 0)
    h.send("b", 0, 1)
    h.drain_all(0, ["a", "b"])
    return h


def counts(results: Results) -> dict[str, int]:
    return {kind: a.count for kind, a in results.anomalies.items()}
