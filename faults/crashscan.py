"""What a page-cache-losing crash left of each partition's leader-epoch checkpoint.

Read on the host, on the node's data filesystem, after the crash's remount and before the
broker starts again (a restarted broker rewrites the file from its recovered segments, so
this is the only moment the loss can be seen). One :class:`EpochFile` per partition
directory that has a ``leader-epoch-checkpoint``.

The file's format (Kafka's ``CheckpointFile``): a version line (0), a count line, then one
``epoch start-offset`` line per entry. Kafka reads an empty file, or one with only the
version, as no entries; anything else that does not parse fails the log directory.

A file with no entries while the partition's segment files on the same disk still hold
bytes is what KAFKA-16541 leaves behind: every epoch assignment is written with fsync
before the record it describes is appended, so on a filesystem that keeps its promises the
checkpoint of a log with data has at least one entry. 3.7.x rewrites the file on
``truncateFromStart``/``truncateFromEnd`` without fsync; after the crash the rename is on
disk and the new file's data is not.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

CHECKPOINT = "leader-epoch-checkpoint"
HEAD_BYTES = 48  # the start of the file kept as evidence
_SKIP_SUFFIXES = ("-delete", "-stray", "-future")


@dataclass(frozen=True)
class EpochFile:
    partition: str  # the directory's name: topic-partition
    size: int  # bytes of the checkpoint
    entries: int | None  # None: unreadable (see error)
    error: str | None
    log_bytes: int  # bytes in the partition's .log segment files
    head: str  # the first HEAD_BYTES bytes, with escapes for anything not printable

    @property
    def lost(self) -> bool:
        """No usable entry while the log on the same disk holds data."""
        return not self.entries and self.log_bytes > 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def count_entries(data: bytes) -> int:
    """The number of entries Kafka would read from the checkpoint's bytes; ValueError with
    Kafka's reason when it would fail instead."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 at byte {exc.start}") from None
    lines = text.splitlines()
    if not lines:
        return 0
    if lines[0] != "0":
        raise ValueError(f"malformed version line {lines[0]!r}")
    if len(lines) == 1:
        return 0
    try:
        expected = int(lines[1])
    except ValueError:
        raise ValueError(f"malformed count line {lines[1]!r}") from None
    for line in lines[2:]:
        parts = line.split()
        if len(parts) != 2 or not all(p.lstrip("-").isdigit() for p in parts):
            raise ValueError(f"malformed entry line {line!r}")
    if len(lines) - 2 != expected:
        raise ValueError(f"expected {expected} entries, found {len(lines) - 2}")
    return expected


def entries_of(data: bytes) -> list[tuple[int, int]]:
    """The (epoch, start offset) entries of a checkpoint Kafka would read (ValueError else)."""
    count_entries(data)
    return [(int(a), int(b)) for a, b in (line.split() for line in data.decode().splitlines()[2:])]


def after_restart(log_dir: Path, partitions: list[str]) -> dict[str, Any]:
    """Per partition, its checkpoint's entries now (after the broker loaded its logs and
    rewrote the file) and the base offset of its first segment: an epoch starting after
    the log does says that the epochs of the offsets between are gone."""
    out: dict[str, Any] = {}
    for name in partitions:
        directory = log_dir / name
        try:
            data = (directory / CHECKPOINT).read_bytes()
            bases = sorted(
                int(f.name[:-4]) for f in directory.glob("*.log") if f.name[:-4].isdigit()
            )
        except OSError as exc:
            out[name] = {"error": str(exc)}
            continue
        try:
            entries: Any = [list(e) for e in entries_of(data)]
        except ValueError as exc:
            entries = {"error": str(exc), "head": _head(data)}
        out[name] = {"entries": entries, "first_segment": bases[0] if bases else None}
    return out


def _head(data: bytes) -> str:
    # latin-1 maps every byte to one character; unicode_escape then shows the
    # unprintable ones as \xNN
    return data[:HEAD_BYTES].decode("latin-1").encode("unicode_escape").decode("ascii")


def _log_bytes(directory: Path) -> int:
    total = 0
    with os.scandir(directory) as it:
        for entry in it:
            if entry.name.endswith(".log") and entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    return total


def read_partition(directory: Path) -> EpochFile | None:
    """The partition directory's checkpoint, or None when it has none."""
    path = directory / CHECKPOINT
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    entries: int | None
    error: str | None = None
    try:
        entries = count_entries(data)
    except ValueError as exc:
        entries, error = None, str(exc)
    return EpochFile(directory.name, len(data), entries, error, _log_bytes(directory), _head(data))


def scan(log_dir: Path) -> list[EpochFile]:
    """Every partition checkpoint under ``log_dir`` (a node's data directory), by name."""
    found = []
    with os.scandir(log_dir) as it:
        dirs = sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
    for name in dirs:
        if name.endswith(_SKIP_SUFFIXES) or "-" not in name:
            continue
        epoch_file = read_partition(log_dir / name)
        if epoch_file is not None:
            found.append(epoch_file)
    return found


def summary(files: list[EpochFile], log_dir: Path | None = None) -> dict[str, Any]:
    """What a fault records for one node: counts, every lost checkpoint in full, and (with
    ``log_dir``) the entries of every intact checkpoint beside a log with data, to show
    what a complete one held (``kept``: partition -> [[epoch, start offset], ...])."""
    out: dict[str, Any] = {
        "checked": len(files),
        "with_entries": sum(1 for f in files if f.entries),
        "empty": sum(1 for f in files if f.entries == 0),
        "unreadable": sum(1 for f in files if f.entries is None),
        "lost": [f.to_dict() for f in files if f.lost],
    }
    if log_dir is not None:
        kept: dict[str, Any] = {}
        for f in files:
            if f.entries and f.log_bytes > 0:
                try:
                    data = (log_dir / f.partition / CHECKPOINT).read_bytes()
                    kept[f.partition] = [list(e) for e in entries_of(data)]
                except (OSError, ValueError) as exc:
                    kept[f.partition] = {"error": str(exc)}
        out["kept"] = kept
    return out
