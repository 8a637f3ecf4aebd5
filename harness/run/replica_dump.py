"""From ``kafka-dump-log.sh --deep-iteration --print-data-log`` text to replica batches.

Pure functions (no Docker): :func:`parse_segments` reads the tool's text for the
segment files of one broker and yields one :class:`Batch` per record batch, tagged with
the partition whose directory the segment lies in. The tool prints, for every segment,
a ``Dumping <path>`` line, then per batch one line of ``key: value`` pairs
(``baseOffset``, ``lastOffset``, ``baseSequence``, ``producerId``, ``producerEpoch``,
``partitionLeaderEpoch``, ``isTransactional``, ``isControl``, ...) and, with
``--deep-iteration``, one ``| offset: N ... payload: BYTES`` line per record (control
records carry ``endTxnMarker:`` instead of a payload). This layout is the same from
Kafka 3.3 to 4.4.

Values are decoded as the workloads encode them (:func:`kchaos.workloads.values.value_of`):
the text before the first ``|`` of the payload. A record whose payload is absent (a
tombstone, a control record) has value ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from kchaos.harness.errors import DumpError
from kchaos.workloads.values import value_of

NO_PRODUCER = -1  # producerId of a batch written without idempotence
_PAIR = re.compile(r"(\w+): (\S*)")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")


@dataclass(frozen=True)
class Record:
    offset: int
    sequence: int  # -1 where the batch has no producer sequence
    value: str | None


@dataclass(frozen=True)
class Batch:
    """One record batch of one replica's log."""

    topic: str
    partition: int
    base_offset: int
    last_offset: int
    leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool
    control: bool
    segment: str
    records: tuple[Record, ...]

    def to_json(self, broker: int) -> dict[str, Any]:
        """One line of replicas.jsonl: records as ``[offset, sequence, value]``."""
        return {
            "broker": broker,
            "topic": self.topic,
            "partition": self.partition,
            "base_offset": self.base_offset,
            "last_offset": self.last_offset,
            "leader_epoch": self.leader_epoch,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "base_sequence": self.base_sequence,
            "transactional": self.transactional,
            "control": self.control,
            "segment": self.segment,
            "records": [[r.offset, r.sequence, r.value] for r in self.records],
        }


def partition_of(path: str) -> tuple[str, int]:
    """(topic, partition) of a segment path ``.../<topic>-<partition>/<offset>.log``."""
    match = _PARTITION_DIR.match(PurePosixPath(path).parent.name)
    if not match:
        raise ValueError(f"not in a partition directory: {path}")
    return match.group(1), int(match.group(2))


def _pairs(line: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _PAIR.finditer(line)}


def _record(line: str, no: int, source: str) -> Record:
    """A ``| offset: ...`` line. The payload is the rest of the line after ``payload: ``
    (it may hold spaces), so it is split off before the other pairs are read."""
    head, sep, payload = line.partition(" payload: ")
    pairs = _pairs(head)
    try:
        offset = int(pairs["offset"])
        sequence = int(pairs.get("sequence", "-1"))
    except (KeyError, ValueError):
        raise DumpError("a record line without a numeric offset", file=source, line=no) from None
    value = value_of(payload.encode()) if sep else None
    return Record(offset, sequence, value)


def _int(pairs: dict[str, str], key: str, no: int, source: str, default: int | None = None) -> int:
    raw = pairs.get(key)
    if raw is None:
        if default is not None:
            return default
        raise DumpError("a batch line without this field", file=source, line=no, field=key)
    try:
        return int(raw)
    except ValueError:
        raise DumpError(f"not an integer: {raw!r}", file=source, line=no, field=key) from None


def parse_segments(text: str | Iterable[str], *, source: str = "dump") -> Iterator[Batch]:
    """Every batch of the dump, in the order printed (segment by segment, offset order
    within a segment). Lines the parser does not need (``Log starting offset``, the
    tool's warnings, index files) are skipped."""
    lines = text.splitlines() if isinstance(text, str) else text
    segment = ""
    tp: tuple[str, int] | None = None
    head: dict[str, str] | None = None
    head_no = 0
    records: list[Record] = []

    def flush() -> Batch | None:
        if head is None or tp is None:
            return None
        base = _int(head, "baseOffset", head_no, source)
        return Batch(
            topic=tp[0],
            partition=tp[1],
            base_offset=base,
            last_offset=_int(head, "lastOffset", head_no, source),
            leader_epoch=_int(head, "partitionLeaderEpoch", head_no, source),
            producer_id=_int(head, "producerId", head_no, source, NO_PRODUCER),
            producer_epoch=_int(head, "producerEpoch", head_no, source, -1),
            base_sequence=_int(head, "baseSequence", head_no, source, -1),
            transactional=head.get("isTransactional") == "true",
            control=head.get("isControl") == "true",
            segment=segment,
            records=tuple(records),
        )

    for no, raw in enumerate(lines, 1):
        line = raw.rstrip("\n")
        if line.startswith("Dumping "):
            done = flush()
            if done is not None:
                yield done
            head, records = None, []
            segment = line[len("Dumping ") :].strip()
            tp = partition_of(segment) if segment.endswith(".log") else None
        elif line.startswith("baseOffset: ") and tp is not None:
            done = flush()
            if done is not None:
                yield done
            head, head_no, records = _pairs(line), no, []
        elif line.startswith("| offset: ") and head is not None:
            records.append(_record(line[2:], no, source))
    done = flush()
    if done is not None:
        yield done


__all__ = ["NO_PRODUCER", "Batch", "Record", "parse_segments", "partition_of"]
