"""The history scribe: a child process that turns queued events into ``history.jsonl`` lines.

:class:`kchaos.harness.rundir.history_writer.HistoryWriter` starts it with
``python -I -S scribe.py FD T0 PATH`` (standard library only, so it starts in
milliseconds). Formatting JSON text is the expensive part of recording; doing it here
keeps it off the recording process's GIL, whose one thread drives the producers.

The writer queues each line flat on one list, ``template, clock, field, field, field``
(the template is bytes; ``clock`` is ``time.monotonic_ns()``, ``T0`` is subtracted here;
fields are ints, unused ones b""), and every 50 ms sends what piled up as one
``marshal``-ed list. Flat, because a list of ints and bytes gives the garbage collector
nothing to track, where a tuple per line made it run hundreds of times per second; ints
and bytes, because they cost a third less than strings to marshal and to format.

Protocol on stdin, frames of ``<length: u32 LE><kind: 1 byte><payload>``:

* ``B``: a batch (marshal of a flat list as above);
* ``S``: sync: once everything received so far is written, answer ``S`` on stdout.

The scribe answers ``R`` once it holds an exclusive ``flock`` on the file, which it keeps
while it runs, so a reader can wait for it
(:func:`kchaos.harness.rundir.history_writer.wait_for_writer`). On end of input (the
writer closed, or its process died) it fsyncs, prints a JSON status (``{"bad": [...],
"error": ..., "lines": N}``) and exits. SIGINT and SIGTERM are ignored:
the scribe lives exactly as long as its writer's pipe, and a Ctrl-C must not cost lines.

Order: lines are numbered in the order they were queued (``list.extend`` is atomic under
the GIL). A recorder reads the clock just before it queues; a thread switch in between can
let another line in first with a later reading, so a reading behind its predecessor's is
raised to it: ``index`` counts 0, 1, 2, ... and ``time`` never goes backwards.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import marshal
import operator
import os
import signal
import struct
import sys
from typing import Any, BinaryIO

FRAME = struct.Struct("<IB")
BATCH, SYNC = ord("B"), ord("S")
WIDTH = 5  # items per queued line: template, clock, three fields (unused ones b"")


class Renderer:
    """Numbers queued lines in arrival order, repairs times, builds the JSON text.

    A batch is a flat list, :data:`WIDTH` items per line. A template has placeholders for
    index, time and three fields (``%s`` filled with b"" where a line has fewer). Once
    the templates are taken out, the list itself becomes the arguments (each template's
    slot gets the line's index, each clock its time, by C-level slice assignments), so
    the whole batch is one ``%`` of the joined templates.
    """

    def __init__(self, t0: int = 0) -> None:
        self.t0 = t0
        self.next_index = 0
        self.last_clock = t0
        self.bad: list[str] = []  # lines left out: a recorder's bug, reported at the end

    def render(self, flat: list[Any]) -> bytes:
        if len(flat) % WIDTH:
            self.bad.append(f"a batch of {len(flat)} items is not whole lines; dropped")
            return b""
        n = len(flat) // WIDTH
        if not n:
            return b""
        templates, clocks = flat[0::WIDTH], flat[1::WIDTH]
        if clocks[0] < self.last_clock or clocks != sorted(clocks):
            clocks = self._raise_stale(clocks)
        first = self.next_index
        self.next_index, self.last_clock = first + n, clocks[-1]
        flat[0::WIDTH] = range(first, first + n)
        flat[1::WIDTH] = map(operator.sub, clocks, itertools.repeat(self.t0))
        try:
            return b"".join(templates) % tuple(flat)
        except (TypeError, ValueError):
            return self._line_by_line(templates, flat)

    def _raise_stale(self, clocks: list[int]) -> list[int]:
        """A clock read just before a thread switch let another line in first is raised
        to its predecessor's, so time never goes backwards along the file."""
        last, fixed = self.last_clock, []
        for clock in clocks:
            last = max(last, clock)
            fixed.append(last)
        return fixed

    def _line_by_line(self, templates: list[Any], args: list[Any]) -> bytes:
        parts = []
        for i, template in enumerate(templates):
            line = tuple(args[i * WIDTH : (i + 1) * WIDTH])
            try:
                parts.append(template % line)
            except (TypeError, ValueError) as exc:
                self.bad.append(f"index {line[0]}: {exc}: {template!r} {line[2:]!r}")
        return b"".join(parts)


def _read_exact(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    return data if len(data) == size else None


def serve(stream: BinaryIO, reply: int, fd: int, t0: int = 0) -> dict[str, Any]:
    """Write lines from ``stream`` to ``fd`` until end of input, answering syncs on the
    descriptor ``reply``; the closing status."""
    renderer = Renderer(t0)
    error: str | None = None
    while True:
        head = _read_exact(stream, FRAME.size)
        if head is None:
            break
        size, kind = FRAME.unpack(head)
        payload = _read_exact(stream, size)
        if payload is None:
            break
        if kind == BATCH:
            data = memoryview(renderer.render(marshal.loads(payload)))
            while data and error is None:
                try:
                    data = data[os.write(fd, data) :]
                except OSError as exc:  # keep reading so the writer never blocks on us
                    error = f"writing the history failed: {exc}"
        elif kind == SYNC:
            os.write(reply, b"S")
    try:
        os.fsync(fd)
    except OSError as exc:
        error = error or f"fsync of the history failed: {exc}"
    return {"bad": renderer.bad, "error": error, "lines": renderer.next_index}


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    fd, t0 = int(argv[1]), int(argv[2])
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(1, b"R")  # ready: the lock is held
    status = serve(sys.stdin.buffer, 1, fd, t0)
    with contextlib.suppress(OSError):  # the writer's process is gone; the file matters
        os.write(1, json.dumps(status).encode() + b"\n")
    return 0 if status["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
