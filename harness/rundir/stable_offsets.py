"""``stable-offsets.jsonl``: the monitor's samples of each transactional partition's last
stable offset next to its high watermark, taken while the run lasts.

History format 1.2 defines the drain's ``last_stable_offset`` (once, when the run is
over) and nothing during the run; this file is kchaos's addition (docs/run-directory.md,
"Last stable offsets while the run lasts"). It is written only by runs with
transactional workloads; a run without it simply has no samples.

One JSON object per line, per partition and observation, in the order observed::

    {"time": 5012000000, "topic": "t", "partition": 0, "high_watermark": 1240,
     "last_stable_offset": 1236, "observe_ms": 3.1}

``time`` is nanoseconds since the run started on the history's own clock (the same
origin as ``history.jsonl``'s ``time``), taken when the observation ended; within one
observation the last stable offset is asked first and the high watermark after it, so
``high_watermark - last_stable_offset`` (the lag) is never below 0 and may overstate the
lag by what was produced between the two answers.

:class:`StableOffsetsWriter` appends lines as the monitor takes them (flushed after each
observation: a crash leaves at most a torn last line); :func:`read_stable_offsets` is the
one reader (absent file: no samples; a torn last line is ignored; any other bad line is
a HistoryError naming file, line and field).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.history import numbered
from kchaos.harness.rundir.names import STABLE_OFFSETS_JSONL as STABLE_OFFSETS_JSONL
from kchaos.harness.rundir.where import LineCursor


@dataclass(frozen=True)
class StableOffsetSample:
    """One partition's (high watermark, last stable offset) at ``time`` (ns, history clock)."""

    time: int
    topic: str
    partition: int
    high_watermark: int
    last_stable_offset: int
    observe_ms: float | None = None
    line: int = 0  # 1-based line in the file it was read from (0: not read from one)

    @property
    def lag(self) -> int:
        """Offsets written but not yet stable: the open transactions' reach."""
        return self.high_watermark - self.last_stable_offset

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "time": self.time,
            "topic": self.topic,
            "partition": self.partition,
            "high_watermark": self.high_watermark,
            "last_stable_offset": self.last_stable_offset,
        }
        if self.observe_ms is not None:
            out["observe_ms"] = round(self.observe_ms, 1)
        return out


class StableOffsetsWriter:
    """Appends samples to one file; ``write`` may be called from any thread."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fh: IO[bytes] | None = self.path.open("ab")
        self.lines = 0

    def write(self, samples: Sequence[StableOffsetSample]) -> None:
        """Append one observation's samples and flush them to the kernel."""
        data = b"".join(orjson.dumps(s.to_json()) + b"\n" for s in samples)
        with self._lock:
            if self._fh is None:
                raise HistoryError("stable-offset writer is closed", file=str(self.path))
            self._fh.write(data)
            self._fh.flush()
            self.lines += len(samples)

    def close(self) -> None:
        """Close the file; idempotent."""
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


def read_stable_offsets(
    path: str | os.PathLike[str], *, on_torn: Callable[[str], None] | None = None
) -> tuple[StableOffsetSample, ...]:
    """Every sample of ``path`` in file order; () when the file does not exist (runs
    without transactions, and runs from before the file existed)."""
    path = Path(path)
    if not path.exists():
        return ()
    name = str(path)
    if path.is_dir():
        raise HistoryError("expected a file, found a directory", file=name)
    where = LineCursor(name)
    out: list[StableOffsetSample] = []
    for no, line in numbered(path, strict=True, on_torn=on_torn):
        where.at(no)
        if type(line) is not dict:
            where.fail("expected a JSON object")
        observe = line.get("observe_ms")
        if observe is not None and (type(observe) not in (int, float) or observe < 0):
            where.fail(f"expected milliseconds (a number >= 0), got {observe!r}", "observe_ms")
        out.append(
            StableOffsetSample(
                time=where.natural(line, "time"),
                topic=where.expect(line, "topic", str),
                partition=where.natural(line, "partition"),
                high_watermark=where.natural(line, "high_watermark"),
                last_stable_offset=where.natural(line, "last_stable_offset"),
                observe_ms=None if observe is None else float(observe),
                line=no,
            )
        )
    return tuple(out)
