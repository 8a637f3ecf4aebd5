"""The per-partition pass alone (no Spark): each kind it settles, with its near misses."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from kchaos.harness.analysis.partitions import (
    ACK,
    CONSUMED,
    DRAIN,
    DUPLICATE,
    FOREIGN,
    INCONSISTENT,
    LOST,
    POLL,
    TXN_ACK,
    UNCOMMITTED,
    UNSEEN,
    DrainEnd,
    grouped_pass,
    partition_pass,
)

_INDEX = iter(range(1000, 10**6))


def rows(*items: tuple[Any, ...]) -> pa.Table:
    """(src, value, offset[, index]) per row; time is the index, i_invoke index - 1 on
    acknowledgements."""
    cols: dict[str, list[Any]] = {k: [] for k in ("src", "value", "offset", "index", "time")}
    cols["i_invoke"] = []
    for item in items:
        src, value, offset = item[:3]
        index = item[3] if len(item) > 3 else next(_INDEX)
        cols["src"].append(src)
        cols["value"].append(value)
        cols["offset"].append(offset)
        cols["index"].append(index)
        cols["time"].append(index)
        cols["i_invoke"].append(index - 1 if src == ACK else None)
    return pa.table(
        {
            "src": pa.array(cols["src"], pa.int8()),
            "value": pa.array(cols["value"], pa.string()),
            "offset": pa.array(cols["offset"], pa.int64()),
            "index": pa.array(cols["index"], pa.int64()),
            "time": pa.array(cols["time"], pa.int64()),
            "i_invoke": pa.array(cols["i_invoke"], pa.int64()),
        }
    )


def tagged(out: pa.Table, tag: str) -> list[dict[str, Any]]:
    return [r for r in out.to_pylist() if r["tag"] == tag]


def values(out: pa.Table, tag: str) -> list[str]:
    return sorted(r["value"] for r in tagged(out, tag))


END = DrainEnd(lso=0, hwm=4, readable=4)


def drained(*values: str) -> list[tuple[Any, ...]]:
    """The drain holding ``values`` at offsets 0, 1, ..."""
    return [(DRAIN, v, i) for i, v in enumerate(values)]


def test_a_clean_partition_gives_nothing() -> None:
    t = rows(
        (ACK, "a", 0), (ACK, "b", 1), (POLL, "a", 0), (POLL, "b", 1), *drained("a", "b")
    )  # fmt: skip
    assert partition_pass(t, DrainEnd(0, 2, 2)).num_rows == 0


def test_lost_write_and_its_near_misses() -> None:
    t = rows(
        *drained("a", "b", "c", "d"),
        (ACK, "a", 0),  # drained where acknowledged
        (ACK, "b", 5),  # at/above the high watermark, drained elsewhere: inconsistent-offset
        (ACK, "x", 2),  # nowhere in the drain: lost
        (ACK, "d", 3),
        (ACK, "y", 9),  # at/above the high watermark, not drained: lost
    )
    out = partition_pass(t, END)
    assert values(out, LOST) == ["x", "y"]
    # below the log start offset: deleted, not lost
    assert values(partition_pass(t, DrainEnd(lso=3, hwm=4, readable=4)), LOST) == ["y"]


def test_acknowledged_at_the_high_watermark_and_drained_there_is_lost() -> None:
    t = rows((DRAIN, "a", 0), (DRAIN, "b", 4), (ACK, "a", 0), (ACK, "b", 4))
    assert values(partition_pass(t, DrainEnd(0, 4, 4)), LOST) == ["b"]


def test_above_a_stuck_stable_offset_is_unseen_not_lost() -> None:
    stuck = DrainEnd(lso=0, hwm=6, readable=2)
    t = rows(*drained("a", "b"), (ACK, "a", 0), (ACK, "p", 3), (ACK, "q", 4), (POLL, "q", 4))
    out = partition_pass(t, stuck)
    assert values(out, LOST) == []
    assert values(out, UNSEEN) == ["p"]  # q was read: seen


def test_unseen_candidates_of_an_undrained_partition() -> None:
    t = rows((ACK, "a", 0), (ACK, "b", 1), (POLL, "a", 0))
    out = partition_pass(t, None)
    assert values(out, UNSEEN) == ["b"]
    assert values(out, LOST) == [] and values(out, UNCOMMITTED) == []
    (row,) = tagged(out, UNSEEN)
    assert row["i_invoke"] == row["index"] - 1


def test_uncommitted_read_and_its_near_misses() -> None:
    t = rows(
        *drained("a", "b", "c", "d"),
        (POLL, "a", 0),  # in the drain
        (POLL, "z", 1),  # not in the drain: uncommitted
        (CONSUMED, "w", 2),  # a copier's read, not in the drain: uncommitted
        (POLL, "u", 7),  # at/above the high watermark, not drained: uncommitted
        (DRAIN, "q", 9),  # the drain's own records are no polls
    )
    assert values(partition_pass(t, END), UNCOMMITTED) == ["u", "w", "z"]
    # below the log start offset: not judged
    assert values(partition_pass(t, DrainEnd(lso=2, hwm=4, readable=4)), UNCOMMITTED) == [
        "u",
        "w",
    ]
    # between a stuck last stable offset and the high watermark: the drain could not read
    assert values(partition_pass(t, DrainEnd(lso=0, hwm=4, readable=1)), UNCOMMITTED) == ["u"]
    # an undrained partition judges no read
    assert values(partition_pass(t, None), UNCOMMITTED) == []


def test_every_uncommitted_read_is_a_row() -> None:
    t = rows(*drained("a"), (POLL, "z", 1), (POLL, "z", 1))
    assert values(partition_pass(t, DrainEnd(0, 1, 1)), UNCOMMITTED) == ["z", "z"]


def test_inconsistent_offset_two_values_at_one_offset() -> None:
    t = rows(
        (POLL, "a", 0, 10),
        (POLL, "b", 0, 11),  # two values at offset 0
        (POLL, "c", 1),
        (POLL, "c", 1),  # the same value twice: fine
        (ACK, "d", 2),
        (POLL, "e", 2),  # a read against an acknowledgement
        (ACK, "f", -1),
        (POLL, "g", -1),  # a negative acknowledged offset is no position
        (TXN_ACK, "h", 3),
        (DRAIN, "i", 3),  # a committed transaction's position counts
    )
    out = tagged(partition_pass(t, None), INCONSISTENT)
    found = sorted((r["offset"], r["value"], r["other_value"]) for r in out)
    assert found == [(0, "a", "b"), (2, "d", "e"), (3, "h", "i")]
    at0 = next(r for r in out if r["offset"] == 0)
    assert (at0["index"], at0["time"]) == (10, 10)


def test_inconsistent_offset_an_acknowledgement_drained_elsewhere() -> None:
    t = rows(
        (DRAIN, "a", 0),
        (DRAIN, "b", 1),
        (ACK, "a", 0),
        (ACK, "b", 3),  # no drain record at 3, b drained at 1: one inconsistent-offset
        (ACK, "c", 2),  # no record at 2 and c not drained: lost, not moved
    )
    out = partition_pass(t, DrainEnd(0, 5, 5))
    moved = tagged(out, INCONSISTENT)
    assert [(r["offset"], r["value"], r["other_value"]) for r in moved] == [(3, "b", None)]
    assert values(out, LOST) == ["c"]
    # below the log start offset: not judged
    assert tagged(partition_pass(t, DrainEnd(4, 5, 5)), INCONSISTENT) == []
    # no drain-end: nothing to compare with
    assert tagged(partition_pass(t, None), INCONSISTENT) == []


def test_a_moved_acknowledgement_where_two_values_were_seen_counts_once() -> None:
    t = rows((DRAIN, "a", 0), (ACK, "a", 2), (POLL, "z", 2))
    out = tagged(partition_pass(t, DrainEnd(0, 5, 5)), INCONSISTENT)
    assert [(r["offset"], r["value"], r["other_value"]) for r in out] == [(2, "a", "z")]


def test_duplicate_of_a_value_acknowledged_here() -> None:
    t = rows(
        (ACK, "a", 0),
        (POLL, "a", 0),
        (POLL, "a", 5),  # read at a second offset: duplicate
        (ACK, "b", 1),
        (POLL, "b", 1),
        (DRAIN, "b", 1),  # the same offset by two readers: fine
    )
    out = partition_pass(t, None)
    (dup,) = tagged(out, DUPLICATE)
    assert (dup["value"], dup["offset"], dup["other_offset"]) == ("a", 0, 5)


def test_reads_of_values_not_acknowledged_here_are_handed_on() -> None:
    t = rows(
        (ACK, "a", 0),
        (POLL, "a", 0),
        (POLL, "f", 1),  # failed, unknown or acknowledged elsewhere: not judged here
        (POLL, "f", 2),
        (DRAIN, "g", 3),
    )
    out = partition_pass(t, None)
    assert values(out, FOREIGN) == ["f", "f", "g"]
    assert tagged(out, DUPLICATE) == []  # f's duplicate is the second stage's
    srcs = sorted(r["src"] for r in tagged(out, FOREIGN))
    assert srcs == [POLL, POLL, DRAIN]


def test_null_offsets_and_values_do_not_match() -> None:
    t = rows((DRAIN, None, 0), (ACK, "a", None), (POLL, None, 1))
    out = partition_pass(t, DrainEnd(0, 1, 1))
    assert values(out, LOST) == []  # no offset: not judged
    assert [r["value"] for r in tagged(out, UNCOMMITTED)] == [None]


def test_grouped_pass_puts_the_keys_in_front_and_matches_no_null_key() -> None:
    t = rows((ACK, "a", 0), (POLL, "z", 0))
    ends = {(1, "t", 0): DrainEnd(0, 1, 1)}
    run = grouped_pass(ends)
    out = run((pa.scalar(1, pa.int32()), pa.scalar("t"), pa.scalar(0, pa.int32())), t)
    assert out.column_names[:3] == ["rk", "topic", "partition"]
    assert {r["tag"] for r in out.to_pylist()} == {LOST, UNCOMMITTED, INCONSISTENT, FOREIGN}
    assert {(r["rk"], r["topic"], r["partition"]) for r in out.to_pylist()} == {(1, "t", 0)}
    # a null partition is never drained, as a join on it would have it
    nulls = run((pa.scalar(1, pa.int32()), pa.scalar("t"), pa.scalar(None, pa.int32())), t)
    assert {r["tag"] for r in nulls.to_pylist()} == {UNSEEN, INCONSISTENT, FOREIGN}


def test_empty_output_has_the_output_columns() -> None:
    out = partition_pass(rows(), None)
    assert out.num_rows == 0
    assert "other_offset" in out.column_names and "tag" in out.column_names


def test_offsets_far_apart_are_matched_as_close_ones() -> None:
    """Offsets spread too far for an array per offset take the hashed way: same rows."""
    far = 10**15
    t = rows(
        (DRAIN, "a", 0),
        (DRAIN, "b", far),
        (ACK, "b", far + 7),  # b drained at another offset: inconsistent-offset
        (POLL, "x", far + 9),
        (POLL, "y", far + 9),  # two values at one offset
        (ACK, "a", far + 7),  # and a third value where b was acknowledged
    )
    out = tagged(partition_pass(t, DrainEnd(0, far + 1, far + 1)), INCONSISTENT)
    found = sorted((r["offset"], r["value"], r["other_value"]) for r in out)
    assert found == [(far + 7, "a", "b"), (far + 9, "x", "y")]


def test_a_read_without_offset_counts_as_one_more_position() -> None:
    t = rows((ACK, "a", 3), (POLL, "a", 3), (POLL, "a", None), (ACK, "b", 4), (POLL, "b", None))
    (dup,) = tagged(partition_pass(t, None), DUPLICATE)
    # Spark orders a null first: the lowest position is the one without offset
    assert (dup["value"], dup["offset"], dup["other_offset"]) == ("a", None, 3)
