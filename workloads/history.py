"""The one append-only writer of ``history.jsonl`` (format v1, see history-format.md).

Every recorder (producer and consumer workers, the drain, the monitor, the nemesis) takes a
:class:`HistorySink`: any object with ``append(event) -> event``. The real one is
:class:`HistoryWriter`; unit tests use a list-backed fake.

Crash safety: lines are handed to the kernel whole (``os.write`` of complete lines on an
``O_APPEND`` descriptor), at the latest 100 ms after they were appended, by a small flusher
thread. A SIGKILL of the harness therefore loses at most the last 100 ms of events and can
tear at most the last line (only if the kernel accepted part of one write). ``close()``
flushes and fsyncs.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import orjson

from harness.errors import HistoryError

FLUSH_INTERVAL_S = 0.05  # the flusher wakes twice per 100 ms promise
_MAX_PENDING_LINES = 20000  # write early when a burst piles up


class HistorySink(Protocol):
    """Anything that records history events."""

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        """Record ``event`` (adding ``index`` and ``time``) and return the stored event."""
        ...


def _stamp(event: dict[str, Any], index: int, now: int) -> dict[str, Any]:
    """A copy of ``event`` led by ``index`` and ``time`` (the writer's own values win)."""
    stored: dict[str, Any] = {"index": index, "time": now}
    for key, value in event.items():
        if key not in stored:
            stored[key] = value
    return stored


class HistoryWriter:
    """Thread-safe writer of one history file; use as a context manager.

    ``append`` adds ``index`` (0, 1, 2, ...) and ``time`` (monotonic nanoseconds since the
    writer was created) and queues the JSON line; both are assigned under one lock, so
    they never go backwards along the file.
    """

    def __init__(self, path: str | os.PathLike[str], *, flush_interval: float = FLUSH_INTERVAL_S):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and self.path.stat().st_size > 0:
            # appending would restart index and time in the middle of another run's history
            raise HistoryError("history file exists and is not empty", file=str(self.path))
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._t0 = time.monotonic_ns()
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()  # keeps batches in order on disk
        self._pending: list[bytes] = []
        self._index = 0
        self._last_time = 0
        self._closed = False
        self._interval = flush_interval
        self._stop = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="history-flush", daemon=True)
        self._flusher.start()

    # -- recording ---------------------------------------------------------------------
    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        """Stamp ``event`` in place with ``index`` and ``time``, queue its line, return it.

        The line starts with ``index`` and ``time``; a caller's own ``index``/``time`` keys
        are replaced by the writer's.
        """
        if "index" in event or "time" in event:
            event = {k: v for k, v in event.items() if k != "index" and k != "time"}
        body = orjson.dumps(event)[1:]  # serialised outside the lock; b'}' when empty
        sep = b"," if len(body) > 1 else b""
        with self._lock:
            if self._closed:
                raise HistoryError("history writer is closed", file=str(self.path))
            now = time.monotonic_ns() - self._t0
            if now < self._last_time:
                now = self._last_time
            self._last_time = now
            index = self._index
            self._index = index + 1
            self._pending.append(b'{"index":%d,"time":%d%s%s\n' % (index, now, sep, body))
            big = len(self._pending) >= _MAX_PENDING_LINES
        if big:
            self.flush()
        event["index"] = index
        event["time"] = now
        return event

    @property
    def count(self) -> int:
        """How many events were appended so far."""
        return self._index

    def elapsed_ns(self) -> int:
        """Nanoseconds since the writer was created (same clock as ``time``)."""
        return time.monotonic_ns() - self._t0

    # -- durability --------------------------------------------------------------------
    def flush(self) -> None:
        """Hand every queued line to the kernel (survives a crash of this process)."""
        with self._write_lock:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch:
                return
            data = memoryview(b"".join(batch))
            while data:
                written = os.write(self._fd, data)
                data = data[written:]

    def _flush_loop(self) -> None:
        while not self._stop.wait(self._interval):
            with contextlib.suppress(OSError):  # disk trouble: close() raises it for real
                self.flush()

    def close(self) -> None:
        """Flush, fsync and close; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        self._flusher.join()
        self.flush()
        os.fsync(self._fd)
        os.close(self._fd)

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class NullSink:
    """A sink that numbers events and drops them (benchmarks: recording off)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._index = 0

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._index += 1
        return event

    @property
    def count(self) -> int:
        return self._index


class ListSink:
    """An in-memory sink (unit tests, small tools); same numbering as the writer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._t0 = time.monotonic_ns()
        self.events: list[dict[str, Any]] = []

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            stored = _stamp(event, len(self.events), time.monotonic_ns() - self._t0)
            self.events.append(stored)
            return stored


def read_history(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], bool]:
    """Complete lines of a history and whether a torn last line was dropped.

    A line that does not parse anywhere but at the end is an error naming file and line.
    """
    events: list[dict[str, Any]] = []
    torn = False
    lines = list(_lines(Path(path)))
    for number, (raw, complete) in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            event = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if number == len(lines) and not complete:
                torn = True
                break
            raise HistoryError(f"not JSON: {exc}", file=str(path), line=number) from exc
        events.append(event)
    return events, torn


def _lines(path: Path) -> Iterator[tuple[bytes, bool]]:
    data = path.read_bytes()
    parts = data.split(b"\n")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if last and not part:
            return
        yield part, not last
