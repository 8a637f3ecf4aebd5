"""The one append-only writer of ``history.jsonl`` (format v1, see history-format.md).

Every recorder (producer and consumer workers, the drain, the monitor, the nemesis) takes a
:class:`HistorySink`. It has two ways in:

* ``append(event)``: any event as a dict (serialised with orjson);
* ``record(template, *fields)``: the hot path of the producers. ``template`` comes from
  :func:`line_template` and fixes every constant part of the line; ``fields`` are ints
  only (nothing to escape, cheapest to ship and format; see docs/workloads.md).

The real sink is :class:`HistoryWriter`; :class:`ListSink` (tests) keeps parsed events and
:class:`NullSink` (benchmarks: recording off) only counts.

How the writer stays cheap for the thread that records: a call reads the clock and
extends one list with the line's template and fields (atomic under the GIL, so no lock
is taken). Every 50 ms a flusher thread hands what piled up, as one ``marshal``-ed list,
to the scribe (:mod:`kchaos.harness.rundir.scribe`), a child process that numbers the lines, builds
the JSON text and appends whole lines to the file. Formatting off the recording process
matters because one GIL-bound thread drives the producers (docs/workloads.md).

Crash safety: lines reach the scribe at the latest 100 ms after they were recorded; if the
harness is SIGKILLed, the scribe still writes everything it received, then exits at the
end of its input, so at most the last 100 ms of events are lost and at most the last line
is torn. ``close()`` writes the rest, fsyncs and waits for the scribe; ``flush()`` returns
once every line recorded before it is in the file; :func:`wait_for_writer` waits for a
scribe left behind by a killed harness.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import marshal
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import orjson

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir import scribe as _scribe
from kchaos.harness.rundir.history import read_events

log = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 0.05  # the flusher wakes twice per 100 ms promise
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux

# A template (bytes) is filled with (index, time, field, field, field); a line with fewer
# fields ends in one "%s" per missing field, filled with b"" (see rundir.scribe).
_HEAD = b'{"index":%d,"time":%d'
_FIELDS = 3
_NO = b""  # the filler of an unused field
_EVENT = _HEAD + b"%s%s%s"  # append() and wide templates: the line's rest, pre-rendered
_clock = time.monotonic_ns
_CONVERSION = re.compile(r"%(?:%|[-#0 +]*\d*(?:\.\d+)?([a-zA-Z]))")  # '%%' gives ''


@dataclass(frozen=True)
class LineTemplate:
    """A history line with placeholders for ``arity`` fields (made by :func:`line_template`).

    ``text`` is filled with ``(index, time)`` and the fields, padded with b"" to
    three; a template with more fields is pre-rendered into ``rest`` when recorded.
    """

    text: bytes
    arity: int

    def fill(self, index: int, time: int, fields: tuple[Any, ...]) -> str:
        """The line itself (for in-memory sinks and tests)."""
        return (self.text % (index, time, *_padded(self, fields))).decode()

    def rest(self, fields: tuple[Any, ...]) -> bytes:
        """Everything after ``time``, filled in: how lines of more than three fields and
        ``append``'s events travel."""
        return self.text[len(_HEAD) :] % _fields_of(self, fields)


class HistorySink(Protocol):
    """Anything that records history events."""

    def append(self, event: dict[str, Any]) -> object:
        """Record ``event``; the sink adds ``index`` and ``time``."""
        ...

    def record(self, template: LineTemplate, *fields: Any) -> None:
        """Record one line of ``template`` filled with ``fields``."""
        ...

    def recorder(self, template: LineTemplate) -> Callable[..., None]:
        """A function recording one line of ``template`` per call: ``rec(clock, *fields)``
        where ``clock`` is ``time.monotonic_ns()`` read by the caller at the moment the
        line is about (a caller often has one already). The cheapest way in."""
        ...


def json_text(value: Any) -> str:
    """``value`` as JSON text fit to be a constant part of a :func:`line_template`."""
    return orjson.dumps(value).decode().replace("%", "%%")


def line_template(body: str) -> LineTemplate:
    """A template for ``record``: ``body`` is the line's fields after ``index`` and ``time``.

    Constants in ``body`` should come from :func:`json_text`; the only placeholder is
    ``%d``, an int field (a string that varies goes through ``append``, or is an int
    inside a constant string, as the producers' values are).
    Example: ``line_template('"process":1,"type":"invoke","f":"send","value":"1-%d"')``.
    """
    line = _HEAD + ("," + body if body else "").encode() + b"}\n"
    kinds = [k for k in _CONVERSION.findall(line.decode()) if k][2:]  # after index, time
    if any(kind != "d" for kind in kinds):
        raise ValueError(f"not a history line template: {body!r} (fields are %d only)")
    arity = len(kinds)
    try:
        orjson.loads(line % ((0, 0) + (0,) * arity))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not a history line template: {body!r} ({exc})") from exc
    return LineTemplate(line + b"%s" * max(0, _FIELDS - arity), arity)


def _fields_of(template: LineTemplate, fields: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(fields) != template.arity:
        raise TypeError(f"{template.arity} fields expected, got {len(fields)}: {fields!r}")
    return fields


def _padded(template: LineTemplate, fields: tuple[Any, ...]) -> tuple[Any, ...]:
    fields = _fields_of(template, fields)
    if len(fields) > _FIELDS:
        raise TypeError("a template of more than three fields is filled through rest()")
    return fields + (_NO,) * (_FIELDS - len(fields))


class HistoryWriter:
    """Writer of one history file, safe from any thread; use as a context manager.

    Lines get ``index`` 0, 1, 2, ... in the order they were recorded and ``time`` in
    monotonic nanoseconds since the writer was created, never going backwards along the
    file. Recording relies on the GIL: ``list.extend`` of a tuple is atomic. The JSON
    text is made by the scribe process (:mod:`kchaos.harness.rundir.scribe`).
    """

    def __init__(self, path: str | os.PathLike[str], *, flush_interval: float = FLUSH_INTERVAL_S):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists() and self.path.stat().st_size > 0:
            # appending would restart index and time in the middle of another run's history
            raise HistoryError("history file exists and is not empty", file=str(self.path))
        self._t0 = _clock()
        self._scribe = _start_scribe(self.path, self._t0)
        self._pending: list[Any] = []  # flat lines (see rundir.scribe), taken by _send
        self._queue = self._pending.extend
        self._open = [True]
        self._pipe_lock = threading.Lock()  # one frame at a time on the scribe's stdin
        self._bad: list[str] = []
        self._failure: OSError | None = None
        self._interval = flush_interval
        self._stop = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="history-flush", daemon=True)
        self._flusher.start()

    # -- recording (any thread) ----------------------------------------------------------
    def append(self, event: dict[str, Any]) -> None:
        """Queue ``event`` as one line; ``index`` and ``time`` keys in it are replaced."""
        if not self._open[0]:
            raise _closed_error(self.path)
        if "index" in event or "time" in event:
            event = {k: v for k, v in event.items() if k != "index" and k != "time"}
        body = orjson.dumps(event)
        rest = (b"," + body[1:] if len(body) > 2 else b"}") + b"\n"
        self._queue((_EVENT, _clock(), rest, _NO, _NO))

    def record(self, template: LineTemplate, *fields: Any) -> None:
        """Queue one line of ``template`` filled with ``fields``."""
        if not self._open[0]:
            raise _closed_error(self.path)
        self._queue(_queued(template, _clock(), fields))

    def recorder(self, template: LineTemplate) -> Callable[..., None]:
        """See :meth:`HistorySink.recorder`."""
        return _line_recorder(self._queue, self._open, self.path, template)

    def elapsed_ns(self) -> int:
        """Nanoseconds since the writer was created (same clock as ``time``)."""
        return _clock() - self._t0

    # -- durability ----------------------------------------------------------------------
    def flush(self) -> None:
        """Return once every line recorded before the call is in the file (in the kernel:
        it survives a crash of this process)."""
        with self._pipe_lock:
            self._send()
            self._frame(_scribe.SYNC, b"")
            assert self._scribe.stdout is not None
            if self._scribe.stdout.read(1) != b"S":
                raise self._died()

    def _send(self) -> None:
        """Hand the queued lines to the scribe (caller holds the pipe lock)."""
        pending = self._pending
        n = len(pending)
        if not n:
            return
        batch = pending[:n]
        del pending[:n]  # lines queued meanwhile stay
        try:
            payload = marshal.dumps(batch)
        except ValueError:  # a field marshal cannot carry: a recorder's bug
            payload = marshal.dumps([self._plain(item) for item in batch])
        self._frame(_scribe.BATCH, payload)

    def _plain(self, item: Any) -> Any:
        try:
            marshal.dumps(item)
            return item
        except ValueError:
            self._bad.append(f"field {item!r} is not a plain value")
            return repr(item)

    def _frame(self, kind: int, payload: bytes) -> None:
        stdin = self._scribe.stdin
        assert stdin is not None
        try:
            stdin.write(_scribe.FRAME.pack(len(payload), kind))
            stdin.write(payload)
            stdin.flush()
        except OSError as exc:
            self._failure = self._failure or exc
            raise self._died() from exc

    def _died(self) -> HistoryError:
        return HistoryError(
            f"the history scribe stopped (exit code {self._scribe.poll()})", file=str(self.path)
        )

    def _flush_loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                with self._pipe_lock:
                    self._send()
            except HistoryError as exc:  # close() raises it for real
                log.error("%s", exc)
                return

    def close(self) -> None:
        """Write everything, fsync, stop the scribe; idempotent.

        Raises :class:`HistoryError` if the scribe failed or a recorded line could not be
        built (a recorder's bug; the other lines are written).
        """
        with self._pipe_lock:
            if not self._open[0]:
                return
            self._open[0] = False  # the one "closed" flag: the recorders share this list
        self._stop.set()
        self._flusher.join()
        with self._pipe_lock:
            with contextlib.suppress(HistoryError):
                self._send()
            out, _ = self._scribe.communicate()
        status = _status(out)
        problems = self._bad + (status.get("bad") or [])
        if status.get("error") or self._scribe.returncode != 0:
            reason = status.get("error") or self._failure or self._died()
            raise HistoryError(str(reason), file=str(self.path))
        if problems:
            raise HistoryError(
                f"{len(problems)} line(s) could not be written, first: {problems[0]}",
                file=str(self.path),
            )

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _closed_error(path: Path) -> HistoryError:
    return HistoryError("history writer is closed", file=str(path))


def _queued(template: LineTemplate, clock: int, fields: tuple[Any, ...]) -> tuple[Any, ...]:
    """One line as the scribe takes it: template, clock, three fields."""
    if template.arity > _FIELDS:
        return (_EVENT, clock, template.rest(fields), _NO, _NO)
    return (template.text, clock, *_padded(template, fields))


def _line_recorder(
    queue: Callable[[Any], None], open_: list[bool], path: Path, template: LineTemplate
) -> Callable[..., None]:
    """Closures over locals, one per common arity: the cheapest calls Python has (the
    producers' send loop makes two per record; see docs/workloads.md)."""
    text, arity = template.text, template.arity

    def closed() -> HistoryError:
        return _closed_error(path)

    if arity == 1:

        def record1(clock: int, a: Any) -> None:
            if not open_[0]:
                raise closed()
            queue((text, clock, a, _NO, _NO))

        return record1
    if arity == 2:

        def record2(clock: int, a: Any, b: Any) -> None:
            if not open_[0]:
                raise closed()
            queue((text, clock, a, b, _NO))

        return record2
    if arity == 3:

        def record3(clock: int, a: Any, b: Any, c: Any) -> None:
            if not open_[0]:
                raise closed()
            queue((text, clock, a, b, c))

        return record3

    def record(clock: int, *fields: Any) -> None:
        if not open_[0]:
            raise closed()
        queue(_queued(template, clock, fields))

    return record


def _start_scribe(path: Path, t0: int) -> subprocess.Popen[bytes]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", _scribe.__file__, str(fd), str(t0), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            pass_fds=(fd,),
            start_new_session=True,  # a Ctrl-C meant for the harness must not stop it
        )
    except OSError as exc:
        raise HistoryError(f"cannot start the history scribe: {exc}", file=str(path)) from exc
    finally:
        os.close(fd)
    assert proc.stdin is not None and proc.stdout is not None
    with contextlib.suppress(OSError):  # fewer, larger pipe writes; the default is 64 KiB
        fcntl.fcntl(proc.stdin.fileno(), _F_SETPIPE_SZ, 1 << 20)
    if proc.stdout.read(1) != b"R":
        proc.kill()
        proc.wait()
        raise HistoryError("the history scribe did not start", file=str(path))
    return proc


def _status(out: bytes) -> dict[str, Any]:
    try:
        status = orjson.loads(out.strip() or b"{}")
    except orjson.JSONDecodeError:
        return {"error": f"the history scribe answered {out[-200:]!r}"}
    return status if isinstance(status, dict) else {}


def wait_for_writer(path: str | os.PathLike[str], timeout: float = 30.0) -> bool:
    """Wait until no scribe is writing ``path`` (e.g. after the harness was killed);
    False if one still is after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    with open(path, "rb") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.02)


class NullSink:
    """A sink that counts events and drops them (benchmarks: recording off)."""

    def __init__(self) -> None:
        self.count = 0  # not locked: exact for one recording thread, close enough for more

    def append(self, event: dict[str, Any]) -> None:
        self.count += 1

    def record(self, template: LineTemplate, *fields: Any) -> None:
        self.count += 1

    def recorder(self, template: LineTemplate) -> Callable[..., None]:
        def count(clock: int, *fields: Any) -> None:
            self.count += 1

        return count


class ListSink:
    """An in-memory sink (unit tests, small tools); same numbering as the writer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._t0 = _clock()
        self.events: list[dict[str, Any]] = []

    def append(self, event: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            stored: dict[str, Any] = {"index": len(self.events), "time": _clock() - self._t0}
            for key, value in event.items():
                if key not in stored:
                    stored[key] = value
            self.events.append(stored)
            return stored

    def elapsed_ns(self) -> int:
        """Nanoseconds since the sink was created (same clock as ``time``)."""
        return _clock() - self._t0

    def record(self, template: LineTemplate, *fields: Any) -> None:
        self._record(template, _clock(), fields)

    def recorder(self, template: LineTemplate) -> Callable[..., None]:
        return lambda clock, *fields: self._record(template, clock, fields)

    def _record(self, template: LineTemplate, clock: int, fields: tuple[Any, ...]) -> None:
        with self._lock:
            now = max(0, clock - self._t0)
            index = len(self.events)
            if template.arity > _FIELDS:
                line = _EVENT % (index, now, template.rest(fields), _NO, _NO)
                self.events.append(orjson.loads(line))
            else:
                self.events.append(orjson.loads(template.fill(index, now, fields)))


def read_history(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], bool]:
    """Complete lines of a history and whether a torn last line was dropped.

    A line that does not parse anywhere but at the end is an error naming file and line
    (the run directory's one reader, :func:`kchaos.harness.rundir.history.read_events`).
    """
    torn: list[str] = []
    events = list(read_events(Path(path), strict=True, on_torn=torn.append))
    return events, bool(torn)
