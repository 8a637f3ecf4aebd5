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


def _where(t: pa.Table, mask: Any) -> pa.Table:
    return t.filter(mask)  # null in the mask: the row is dropped, as in a SQL WHERE


def partition_pass(t: pa.Table, end: DrainEnd | None) -> pa.Table:
    """Every anomaly and hand-on row of one partition (see the module text); ``t`` has
    the columns src, value, offset, index, time, i_invoke (INPUT_SCHEMA without the keys).

    The output's columns by ``tag``:
    - lost-write, unseen: the send's value and offset, index/time of its completion,
      ``i_invoke``;
    - uncommitted-read, foreign: one read: its ``src``, value, offset, index, time;
    - duplicate: the value, the lowest offset it was read at (``offset``) and the highest
      (``other_offset``), the first index and time it was read;
    - inconsistent-offset: the offset, the lowest value seen there and the highest
      (``other_value``; null for an acknowledgement drained at another offset), the first
      index and time.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    src = t["src"]
    acks = _where(t, pc.equal(src, ACK))
    reads = _where(t, pc.less(src, ACK))
    txn_acks = _where(t, pc.equal(src, TXN_ACK))
    drain = _where(reads, pc.equal(reads["src"], DRAIN))
    drained_values = pc.unique(drain["value"])
    drained_offsets = pc.unique(drain["offset"])
    out: list[pa.Table] = []
    if end is not None:  # typed scalars: a null one compares as SQL's null does
        lso, hwm, readable = (pa.scalar(v, pa.int64()) for v in (end.lso, end.hwm, end.readable))
        stuck = None not in (end.readable, end.hwm) and end.readable < end.hwm  # type: ignore[operator]

    def in_drain(values: Any) -> Any:
        return pc.is_in(values, value_set=drained_values, skip_nulls=True)

    # -- lost-write
    if end is not None and acks.num_rows:
        judged = _where(acks, pc.greater_equal(acks["offset"], lso))
        off = judged["offset"]
        outside = pc.or_kleene(pc.less(off, readable), pc.greater_equal(off, hwm))
        missing = pc.and_kleene(pc.invert(in_drain(judged["value"])), outside)
        above = pc.greater_equal(off, hwm)
        if pc.any(above).as_py():
            # at or above the high watermark and drained at that very offset: the drain
            # says the log ends before it (rare: a plain loop over those rows)
            at = set(zip(drain["offset"].to_pylist(), drain["value"].to_pylist(), strict=True))
            here = [
                bool(a) and (o, v) in at
                for a, o, v in zip(
                    above.to_pylist(), off.to_pylist(), judged["value"].to_pylist(), strict=True
                )
            ]
            missing = pc.or_kleene(missing, pa.array(here, pa.bool_()))
        lost = _where(judged, missing)
        if lost.num_rows:
            out.append(_rows(LOST, lost))

    # -- uncommitted-read: one row per read; the job groups them per value
    if end is not None:
        polled = _where(reads, pc.not_equal(reads["src"], DRAIN))
        off = polled["offset"]
        bad = pc.and_kleene(
            pc.and_kleene(
                pc.greater_equal(off, lso),
                pc.or_kleene(pc.less(off, readable), pc.greater_equal(off, hwm)),
            ),
            pc.invert(in_drain(polled["value"])),
        )
        found = _where(polled, bad)
        if found.num_rows:
            out.append(_rows(UNCOMMITTED, found))

    # -- inconsistent-offset: two values at one offset (reads and acknowledgements)
    seen = pa.concat_tables(
        [
            _where(reads, pc.is_valid(reads["offset"])).select(
                ["offset", "value", "index", "time"]
            ),
            _where(acks, pc.greater_equal(acks["offset"], 0)).select(
                ["offset", "value", "index", "time"]
            ),
            _where(txn_acks, pc.greater_equal(txn_acks["offset"], 0)).select(
                ["offset", "value", "index", "time"]
            ),
        ]
    )
    by_offset = seen.group_by("offset").aggregate(
        [("value", "min"), ("value", "max"), ("index", "min"), ("time", "min")]
    )
    two = _where(by_offset, pc.not_equal(by_offset["value_min"], by_offset["value_max"]))
    if two.num_rows:
        out.append(
            _rows(
                INCONSISTENT,
                two,
                value=two["value_min"],
                other_value=two["value_max"],
                index=two["index_min"],
                time=two["time_min"],
            )
        )
    # ... and an acknowledgement at or above the log start where the drain holds no record,
    # its value drained at another offset of the partition (one per offset, unless two
    # values were seen there)
    if end is not None and acks.num_rows:
        off = acks["offset"]
        moved = _where(
            acks,
            pc.and_kleene(
                pc.and_kleene(pc.greater_equal(off, 0), pc.greater_equal(off, lso)),
                pc.and_kleene(
                    pc.invert(pc.is_in(off, value_set=drained_offsets, skip_nulls=True)),
                    in_drain(acks["value"]),
                ),
            ),
        )
        moved = _where(
            moved, pc.invert(pc.is_in(moved["offset"], value_set=two["offset"], skip_nulls=True))
        )
        if moved.num_rows:
            g = moved.group_by("offset").aggregate(
                [("value", "min"), ("index", "min"), ("time", "min")]
            )
            out.append(
                _rows(
                    INCONSISTENT,
                    g,
                    value=g["value_min"],
                    index=g["index_min"],
                    time=g["time_min"],
                )
            )

    # -- reads of values acknowledged elsewhere or not at all: the second stage's
    acked_here = pc.is_in(reads["value"], value_set=pc.unique(acks["value"]), skip_nulls=True)
    foreign = _where(reads, pc.invert(acked_here))
    if foreign.num_rows:
        out.append(_rows(FOREIGN, foreign))

    # -- duplicate: a value acknowledged here, read here at two or more offsets (its
    # reads elsewhere, if any, make it foreign there, and the second stage judges it)
    own = _where(reads, acked_here)
    if own.num_rows:
        by_value = own.group_by("value").aggregate(
            [
                ("offset", "count_distinct", pc.CountOptions(mode="all")),
                ("offset", "min"),
                ("offset", "max"),
                ("index", "min"),
                ("time", "min"),
            ]
        )
        dup = _where(by_value, pc.greater(by_value["offset_count_distinct"], 1))
        if dup.num_rows:
            out.append(
                _rows(
                    DUPLICATE,
                    dup,
                    offset=dup["offset_min"],
                    other_offset=dup["offset_max"],
                    index=dup["index_min"],
                    time=dup["time_min"],
                )
            )

    # -- unseen candidates: acknowledged, the partition not drained completely (or the
    # value above a stuck last stable offset and not drained), and not read here
    if acks.num_rows:
        if end is None:
            blind = acks
        elif stuck:
            off = acks["offset"]
            blind = _where(
                acks,
                pc.and_kleene(
                    pc.and_kleene(pc.greater_equal(off, lso), pc.greater_equal(off, readable)),
                    pc.and_kleene(pc.less(off, hwm), pc.invert(in_drain(acks["value"]))),
                ),
            )
        else:
            blind = acks.slice(0, 0)
        if blind.num_rows:
            read_here = pc.is_in(
                blind["value"], value_set=pc.unique(reads["value"]), skip_nulls=True
            )
            unseen = _where(blind, pc.invert(read_here))
            if unseen.num_rows:
                out.append(_rows(UNSEEN, unseen))

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
