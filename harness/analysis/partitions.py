"""The per-partition pass: every data kind a partition can settle alone, in one columnar
pass over that partition's rows.

The job shuffles its rows once by (run key, topic, partition) and hands each group, as
one Arrow table, to :func:`partition_pass`. A group holds the partition's read records
(polls, the drain, a copier's consumed records), its acknowledged sends (one row per
value whose send completed ``ok`` naming this partition, from the sends table) and the
positions committed transactions report here. The partition's last ``drain-end`` line
comes beside the table (:class:`DrainEnd`; None when it has none).

What a group settles alone (the rules of docs/analysis.md, as the checker has them):

- ``lost-write``: an acknowledged send at or above the drain's log start offset whose
  value is nowhere in the partition's drain (and below the readable end, or at or above
  the high watermark), or acknowledged at or above the high watermark and drained at
  that very offset;
- ``uncommitted-read``: one row per poll (or copier's consumed record) at or above the
  log start offset, outside the drain's complete view, whose value the drain lacks; the
  job groups these rows per value, and leaves out the reads a transaction excuses;
- ``inconsistent-offset``: one row per offset where two different values were read or
  acknowledged, or where an acknowledged value was drained at another offset of the
  partition and the drain holds no record at the acknowledged one;
- ``duplicate``: one row per value of this partition's acknowledged sends read here at
  two or more offsets.

What it cannot settle alone, it hands on as rows for the job's second stage:

- ``foreign``: every read of a value not acknowledged in this partition (a failed, unknown
  or unsent value, a transaction's value, or a value acknowledged elsewhere). Such a value
  may have been read in other partitions too; the duplicate and aborted-read of those
  values are judged over all their reads in the second stage;
- ``unseen``: an acknowledged send of a partition not drained completely (or above a stuck
  last stable offset) that no reader of this partition returned. It is unseen when no
  other partition read it either, i.e. when it is no ``foreign`` value anywhere.

Pure pyarrow: tested without Spark (tests/unit/analysis/test_partition_pass.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

# ``src`` codes of the rows a group holds; the reads first, in READ_SOURCES' order.
POLL, DRAIN, CONSUMED, ACK, TXN_ACK = 0, 1, 2, 3, 4
READ_SOURCES = ("poll", "drain", "consumed")  # the name of read code 0, 1, 2

INPUT_SCHEMA = (
    "rk int, topic string, partition int, src tinyint, value string, offset long,"
    " index long, time long, i_invoke long"
)
# One row per anomaly or hand-on; which columns mean what depends on ``tag`` (see
# partition_pass). The keys come first, as the group's key gives them.
OUTPUT_SCHEMA = (
    "rk int, topic string, partition int, tag string, src tinyint, value string,"
    " offset long, index long, time long, i_invoke long, other_value string,"
    " other_offset long"
)
LOST, UNCOMMITTED, INCONSISTENT, DUPLICATE = (
    "lost-write",
    "uncommitted-read",
    "inconsistent-offset",
    "duplicate",
)
FOREIGN, UNSEEN = "foreign", "unseen"
_COLUMNS = [
    ("tag", "string"),
    ("src", "int8"),
    ("value", "string"),
    ("offset", "int64"),
    ("index", "int64"),
    ("time", "int64"),
    ("i_invoke", "int64"),
    ("other_value", "string"),
    ("other_offset", "int64"),
]


@dataclass(frozen=True)
class DrainEnd:
    """A partition's last drain-end line: log start offset, high watermark, and the
    readable end (the last stable offset where a read_committed drain stopped below the
    high watermark, the high watermark otherwise)."""

    lso: int | None
    hwm: int | None
    readable: int | None


def _empty() -> pa.Table:
    import pyarrow as pa

    return pa.table({n: pa.array([], type=getattr(pa, t)()) for n, t in _COLUMNS})


def _rows(tag: str, t: pa.Table, **columns: Any) -> pa.Table:
    """``t``'s rows in the output's columns: those of ``t`` where it has them, then
    ``columns`` (arrays or None), nulls for the rest."""
    import pyarrow as pa

    n = t.num_rows
    out = {}
    for name, kind in _COLUMNS:
        typ = getattr(pa, kind)()
        if name == "tag":
            col = pa.array([tag] * n, typ)
        elif columns.get(name) is not None:
            col = columns[name]
        elif name in t.column_names and name not in columns:
            col = t[name]
        else:
            col = pa.nulls(n, typ)
        out[name] = col.cast(typ) if col.type != typ else col
    return pa.table(out)


class _Offsets:
    """A group's offsets as numbers, with comparisons as a SQL filter reads them: a null
    offset, or a null bound, satisfies none. ``slot``: a small number per distinct
    offset (``slots`` of them; a null offset has slot ``slots``, its own), so that sets
    of offsets are boolean arrays indexed by slot rather than hash sets."""

    def __init__(self, column: Any) -> None:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        self.valid = column.is_valid().to_numpy(zero_copy_only=False)
        self.at = column.fill_null(0).to_numpy(zero_copy_only=False)
        known = self.at[self.valid]
        lo = int(known.min()) if len(known) else 0
        hi = int(known.max()) if len(known) else -1
        if hi - lo <= 4 * len(self.at) + 1024:  # dense, as a partition's offsets are
            self.slots = hi - lo + 1
            self.slot = np.where(self.valid, self.at - lo, self.slots)
        else:
            encoded = pc.dictionary_encode(pa.array(known))
            self.slots = len(encoded.dictionary)
            self.slot = np.full(len(self.at), self.slots)
            self.slot[self.valid] = encoded.indices.to_numpy(zero_copy_only=False)

    def ge(self, bound: int | None) -> Any:
        import numpy as np

        if bound is None:
            return np.zeros(len(self.at), dtype=bool)
        return self.valid & (self.at >= bound)

    def lt(self, bound: int | None) -> Any:
        import numpy as np

        if bound is None:
            return np.zeros(len(self.at), dtype=bool)
        return self.valid & (self.at < bound)

    def marked(self, rows: Any) -> Any:
        """For every row: whether its offset is one of the offsets of ``rows`` (never for
        a null offset)."""
        import numpy as np

        found = np.zeros(self.slots + 1, dtype=bool)
        found[self.slot[rows]] = True
        found[self.slots] = False
        return found[self.slot]


def _differ(keys: Any, codes: Any, size: int) -> Any:
    """For every row: whether some row with the same key (a number below ``size``) has
    another code. One pass: each key keeps some row's code; a key holding two codes has
    a row that differs from whichever was kept."""
    import numpy as np

    kept = np.full(size, -1, dtype=np.int64)
    kept[keys] = codes
    return np.asarray(codes != kept[keys])


def partition_pass(t: pa.Table, end: DrainEnd | None) -> pa.Table:
    """Every anomaly and hand-on row of one partition (see the module text); ``t`` has
    the columns src, value, offset, index, time, i_invoke (INPUT_SCHEMA without the keys).

    The output's columns by ``tag``:
    - lost-write, unseen: the send's value and offset, index/time of its completion,
      ``i_invoke``;
    - uncommitted-read, foreign: one read: its ``src``, value, offset, index, time;
    - duplicate: the value, the lowest offset it was read at (``offset``; null when one
      of its reads has none, as Spark orders nulls first) and the highest
      (``other_offset``), the first index and time it was read;
    - inconsistent-offset: the offset, the lowest value seen there and the highest
      (``other_value``; null for an acknowledgement drained at another offset), the first
      index and time.

    Values are compared as numbers: each distinct value gets a code once per group (a
    null value gets one of its own that matches nothing), and "is this value in the
    drain / acknowledged here / read here" become lookups in arrays indexed by code.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if t.num_rows == 0:
        return _empty()
    t = t.combine_chunks()
    src = t["src"].to_numpy(zero_copy_only=False)
    encoded = pc.dictionary_encode(t["value"]).combine_chunks()
    null_code = len(encoded.dictionary)
    codes = encoded.indices.fill_null(null_code).to_numpy(zero_copy_only=False)
    off = _Offsets(t["offset"])

    is_ack, is_read, is_drain = src == ACK, src < ACK, src == DRAIN
    is_poll, is_txn = is_read & ~is_drain, src == TXN_ACK

    def per_value(rows: Any) -> Any:
        """For every row: whether its value is among the values of ``rows``."""
        found = np.zeros(null_code + 1, dtype=bool)
        found[codes[rows]] = True
        found[null_code] = False  # a null value matches nothing, as in a join
        return found[codes]

    in_drain = per_value(is_drain)
    acked_here = per_value(is_ack)
    out: list[pa.Table] = []

    def emit(tag: str, rows: Any, **columns: Any) -> None:
        if rows.any():
            out.append(_rows(tag, t.filter(pa.array(rows)), **columns))

    lso, hwm, readable = (end.lso, end.hwm, end.readable) if end is not None else (None,) * 3
    outside = off.lt(readable) | off.ge(hwm)  # outside the drain's complete view

    # -- lost-write
    if end is not None:
        judged = is_ack & off.ge(lso)
        lost = judged & ~in_drain & outside
        # at or above the high watermark and drained at that very offset: the drain says
        # the log ends before it (rare: a plain loop over those rows)
        check = judged & off.ge(hwm) & ~lost
        if check.any():
            where = is_drain & off.valid
            drained_at = set(zip(off.at[where].tolist(), codes[where].tolist(), strict=True))
            for i in np.flatnonzero(check):
                lost[i] = (int(off.at[i]), int(codes[i])) in drained_at
        emit(LOST, lost)

    # -- uncommitted-read: one row per read; the job groups them per value
    if end is not None:
        emit(UNCOMMITTED, is_poll & off.ge(lso) & outside & ~in_drain)

    # -- inconsistent-offset: two values at one offset (reads and acknowledgements);
    # the offsets are found on codes, their values' text only for those few
    positions = (is_read & off.valid) | ((is_ack | is_txn) & off.ge(0))
    valued = np.flatnonzero(positions & (codes != null_code))
    conflict = np.zeros(len(src), dtype=bool)
    conflict[valued] = _differ(off.slot[valued], codes[valued], off.slots + 1)
    at_bad = positions & off.marked(conflict)
    if at_bad.any():
        g = (
            t.filter(pa.array(at_bad))
            .group_by("offset")
            .aggregate([("value", "min"), ("value", "max"), ("index", "min"), ("time", "min")])
        )
        out.append(
            _rows(
                INCONSISTENT,
                g,
                value=g["value_min"],
                other_value=g["value_max"],
                index=g["index_min"],
                time=g["time_min"],
            )
        )
    # ... and an acknowledgement at or above the log start where the drain holds no record,
    # its value drained at another offset of the partition (one per offset, unless two
    # values were seen there)
    if end is not None:
        moved = is_ack & off.ge(0) & off.ge(lso) & ~off.marked(is_drain) & in_drain
        moved &= ~at_bad
        if moved.any():
            g = (
                t.filter(pa.array(moved))
                .group_by("offset")
                .aggregate([("value", "min"), ("index", "min"), ("time", "min")])
            )
            out.append(
                _rows(
                    INCONSISTENT, g, value=g["value_min"], index=g["index_min"], time=g["time_min"]
                )
            )

    # -- reads of values not acknowledged here: the second stage's
    emit(FOREIGN, is_read & ~acked_here)

    # -- duplicate: a value acknowledged here, read here at two or more offsets (a null
    # offset counting as one); its reads elsewhere, if any, make it foreign there, and
    # the second stage judges it
    own = np.flatnonzero(is_read & acked_here)
    two_offsets = np.zeros(len(src), dtype=bool)
    two_offsets[own] = _differ(codes[own], off.slot[own], null_code + 1)
    twice = np.zeros(len(src), dtype=bool)
    twice[own] = per_value(two_offsets)[own]
    if twice.any():
        rows = t.filter(pa.array(twice))
        dup = (
            rows.append_column("c", pa.array(codes[twice]))
            .group_by("c")
            .aggregate(
                [
                    ("offset", "min"),
                    ("offset", "max"),
                    ("offset", "count", pc.CountOptions(mode="only_valid")),
                    ("index", "count", pc.CountOptions(mode="all")),
                    ("index", "min"),
                    ("time", "min"),
                ]
            )
        )
        nulls_first = pc.if_else(
            pc.less(dup["offset_count"], dup["index_count"]),
            pa.nulls(dup.num_rows, pa.int64()),
            dup["offset_min"],
        )
        out.append(
            _rows(
                DUPLICATE,
                dup,
                value=encoded.dictionary.take(dup["c"]),
                offset=nulls_first,
                other_offset=dup["offset_max"],
                index=dup["index_min"],
                time=dup["time_min"],
            )
        )

    # -- unseen candidates: acknowledged, the partition not drained completely (or the
    # value above a stuck last stable offset and not drained), and not read here
    if end is None:
        blind = is_ack
    elif readable is not None and hwm is not None and readable < hwm:
        blind = is_ack & off.ge(lso) & off.ge(readable) & off.lt(hwm) & ~in_drain
    else:
        blind = np.zeros(len(src), dtype=bool)
    emit(UNSEEN, blind & ~per_value(is_read))

    return pa.concat_tables(out) if out else _empty()


def grouped_pass(ends: dict[tuple[int, str, int], DrainEnd]) -> Any:
    """The function ``applyInArrow`` calls per (run key, topic, partition) group: the
    pass, with the group's keys in front. ``ends``: every drained partition's DrainEnd."""

    def run(key: tuple[Any, ...], t: pa.Table) -> pa.Table:
        import pyarrow as pa

        rk, topic, partition = (k.as_py() if hasattr(k, "as_py") else k for k in key)
        # as a join on (run, topic, partition) would: a null key matches no drain-end
        end = ends.get((rk, topic, partition)) if None not in (topic, partition) else None
        found = partition_pass(t, end)
        n = found.num_rows
        keys = {
            "rk": pa.array([rk] * n, pa.int32()),
            "topic": pa.array([topic] * n, pa.string()),
            "partition": pa.array([partition] * n, pa.int32()),
        }
        return pa.table({**keys, **{c: found[c] for c in found.column_names}})

    return run
