"""The data anomalies of format v1, over all runs at once, in two stages.

First stage (:func:`per_partition`): every read record, acknowledged send and committed
transaction position, shuffled once by (run, topic, partition); each partition's rows go
through :func:`kchaos.harness.analysis.partitions.partition_pass` as one Arrow table.
Second stage: Spark, on the first stage's few output rows (and, for the values read
outside their acknowledged partition, on those values' reads), each query returning rows
of one shape (``COLUMNS``), one row per counted anomaly:
- lost-write: one per acknowledged send lost;
- uncommitted-read: one per value polled (or consumed by a copier, format 1.3) but not
  in its partition's drain;
- aborted-read: one per failed value that any reader returned;
- duplicate: one per value read at two or more positions;
- inconsistent-offset: one per position where two different values were seen, or where
  a value was acknowledged that the drain holds only elsewhere (no record there);
- unseen: one per acknowledged send of an undrained partition that no reader saw.

Format 1.2's kinds, and its extensions of lost-write and aborted-read to transactions,
are in :mod:`kchaos.harness.analysis.txn_anomalies`; :func:`all_anomalies` unions both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kchaos.harness.analysis.tables import PART, Tables

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from kchaos.harness.analysis.txn import TxnTables

COLUMNS = [
    "rk",
    "kind",
    "value",
    "topic",
    "partition",
    "offset",
    "index",
    "time",
    "txn",
    "transactional_id",
    "detail",
]


def shape(
    df: DataFrame,
    kind: str,
    index: Column,
    time: Column,
    txn: Column | None = None,
    tid: Column | None = None,
    **detail: Column,
) -> DataFrame:
    """One row per anomaly in ``COLUMNS``; ``detail`` becomes the example's extra keys."""
    from pyspark.sql import functions as F

    none = F.lit(None).cast("string")
    info = F.to_json(F.struct(*[c.alias(k) for k, c in detail.items()])) if detail else F.lit("{}")
    return df.select(
        "rk",
        F.lit(kind).alias("kind"),
        "value",
        "topic",
        "partition",
        F.col("offset").cast("long").alias("offset"),
        index.cast("long").alias("index"),
        time.cast("long").alias("time"),
        (txn if txn is not None else none).alias("txn"),
        (tid if tid is not None else none).alias("transactional_id"),
        info.alias("detail"),
    )


def shape_acked(
    df: DataFrame,
    kind: str,
    index: Column,
    time: Column,
    invoke: Column,
    *txn: Column,
    **detail: Column,
) -> DataFrame:
    """:func:`shape` for an acknowledged value's anomaly (lost-write, unseen): at its
    acknowledgement's ``index`` and ``time``, the detail led by ``invoke_index`` (its send's
    or transaction's invoke) and ``ok_index``, then ``detail``; ``txn``: a transactional
    value's txn and tid columns."""
    return shape(df, kind, index, time, *txn, invoke_index=invoke, ok_index=index, **detail)


def _acked(t: Tables) -> DataFrame:
    from pyspark.sql import functions as F

    return t.sends.filter(F.col("outcome") == "ok")


# -- the first stage: one shuffle by (run, topic, partition), one pass per partition


def partition_input(t: Tables, more_acks: DataFrame | None = None) -> DataFrame:
    """The rows of :mod:`kchaos.harness.analysis.partitions`' pass, in ``INPUT_SCHEMA``:
    every read record, every acknowledged send (one row per value, from the sends table)
    and ``more_acks``, other acknowledged positions (rk, topic, partition, offset, value,
    index, time: the committed transactions' ones)."""
    from pyspark.sql import functions as F

    from kchaos.harness.analysis import partitions as pp

    none = F.lit(None).cast("long")
    names = F.array(*[F.lit(s) for s in pp.READ_SOURCES])
    code = (F.array_position(names, F.col("src")) - 1).cast("tinyint")
    frames = [
        t.reads.select(*PART, code.alias("src"), "value", "offset", "index", "time"),
        _acked(t).select(
            *PART,
            F.lit(pp.ACK).cast("tinyint").alias("src"),
            "value",
            "offset",
            F.col("i_done").alias("index"),
            F.col("t_done").alias("time"),
            "i_invoke",
        ),
    ]
    frames[0] = frames[0].withColumn("i_invoke", none)
    if more_acks is not None:
        frames.append(
            more_acks.select(
                *PART,
                F.lit(pp.TXN_ACK).cast("tinyint").alias("src"),
                "value",
                "offset",
                "index",
                "time",
                none.alias("i_invoke"),
            )
        )
    return union(frames)


def per_partition(t: Tables, more_acks: DataFrame | None = None) -> DataFrame:
    """The first stage: the rows of every partition grouped once, each group through
    :func:`kchaos.harness.analysis.partitions.partition_pass` (``OUTPUT_SCHEMA`` rows)."""
    from kchaos.harness.analysis import partitions as pp

    ends = {
        (r["rk"], r["topic"], r["partition"]): pp.DrainEnd(r["lso"], r["hwm"], r["readable"])
        for r in t.drained.select(*PART, "lso", "hwm", "readable").collect()
    }
    rows = partition_input(t, more_acks)
    return rows.groupBy(*PART).applyInArrow(pp.grouped_pass(ends), pp.OUTPUT_SCHEMA)


def _tagged(found: DataFrame, tag: str) -> DataFrame:
    from pyspark.sql import functions as F

    return found.filter(F.col("tag") == tag)


def _read_src(found: DataFrame) -> DataFrame:
    """Read rows of the first stage with ``src`` as the tables name it (poll, drain,
    consumed)."""
    from pyspark.sql import functions as F

    from kchaos.harness.analysis import partitions as pp

    names = F.array(*[F.lit(s) for s in pp.READ_SOURCES])
    return found.withColumn("src", F.element_at(names, F.col("src").cast("int") + 1))


# -- the second stage: what one partition cannot settle, on the few rows it needs


def lost_write(found: DataFrame, t: Tables) -> DataFrame:
    from pyspark.sql import functions as F

    from kchaos.harness.analysis import partitions as pp

    lost = _tagged(found, pp.LOST).join(F.broadcast(t.drained), PART)
    return shape_acked(
        lost,
        "lost-write",
        F.col("index"),
        F.col("time"),
        F.col("i_invoke"),
        log_start_offset=F.col("lso"),
        high_watermark=F.col("hwm"),
        drain_end_index=F.col("i_end"),
    )


def uncommitted_read(found: DataFrame, t: Tables, excused: DataFrame | None = None) -> DataFrame:
    """``excused``: (rk, index, value) of polls not to count (read_uncommitted reads of
    values of fail or info transactions)."""
    from pyspark.sql import functions as F

    from kchaos.harness.analysis import partitions as pp

    polled = _tagged(found, pp.UNCOMMITTED)
    if excused is not None:
        polled = polled.join(excused, ["rk", "index", "value"], "left_anti")
    bad = (
        polled.join(F.broadcast(t.drained), PART)
        .groupBy("rk", "value")
        .agg(
            F.min(F.struct("index", "topic", "partition", "offset", "lso", "time")).alias("r"),
            F.count(F.lit(1)).alias("times_read"),
            F.slice(F.sort_array(F.collect_set("index")), 1, 5).alias("poll_indexes"),
        )
        .select("rk", "value", "r.*", "times_read", "poll_indexes")
    )
    return shape(
        bad,
        "uncommitted-read",
        F.col("index"),
        F.col("time"),
        poll_indexes=F.col("poll_indexes"),
        times_read=F.col("times_read"),
        log_start_offset=F.col("lso"),
    )


def inconsistent_offset(found: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    from kchaos.harness.analysis import partitions as pp

    return shape(
        _tagged(found, pp.INCONSISTENT),
        "inconsistent-offset",
        F.col("index"),
        F.col("time"),
        other=F.col("other_value"),
    )


def _foreign_values(found: DataFrame) -> DataFrame:
    from kchaos.harness.analysis import partitions as pp

    return _tagged(found, pp.FOREIGN).select("rk", "value").distinct()


def unseen(found: DataFrame) -> DataFrame:
    """Acknowledged sends no reader of their partition returned, that no other
    partition's reader returned either (no foreign read of them anywhere)."""
    from pyspark.sql import functions as F

    from kchaos.harness.analysis import partitions as pp

    missing = _tagged(found, pp.UNSEEN).join(_foreign_values(found), ["rk", "value"], "left_anti")
    return shape_acked(missing, "unseen", F.col("index"), F.col("time"), F.col("i_invoke"))


# At most this many rows of (run key, value) are broadcast to every task.
BROADCAST_ROWS = 500_000


def _maybe_broadcast(df: DataFrame, n: int) -> DataFrame:
    from pyspark.sql import functions as F

    return F.broadcast(df) if n <= BROADCAST_ROWS else df


def foreign_reads(found: DataFrame, t: Tables) -> DataFrame:
    """Every read (rk, src, index, time, topic, partition, offset, value) of the values
    some partition read without their acknowledgement: the first stage's ``foreign``
    rows, and, for such a value acknowledged in another partition, its reads there too
    (read again from the read records, the few values broadcast; usually there is none)."""

    from kchaos.harness.analysis import partitions as pp

    cols = ["rk", "src", "index", "time", "topic", "partition", "offset", "value"]
    rows = _read_src(_tagged(found, pp.FOREIGN)).select(*cols)
    values = _foreign_values(found)
    n = values.count()
    if n == 0:
        return rows
    homed = _acked(t).select("rk", "value").join(_maybe_broadcast(values, n), ["rk", "value"])
    n_homed = homed.count()
    if n_homed == 0:
        return rows
    homed = (
        homed.sparkSession.createDataFrame(homed.collect(), homed.schema)
        if (n_homed <= BROADCAST_ROWS)
        else homed
    )
    again = t.reads.join(_maybe_broadcast(homed, n_homed), ["rk", "value"], "left_semi")
    rest = rows.join(_maybe_broadcast(homed, n_homed), ["rk", "value"], "left_anti")
    return rest.unionByName(again.select(*cols))


def aborted_read(reads: DataFrame, t: Tables) -> DataFrame:
    """``reads``: every read of the values that may have failed (:func:`foreign_reads`:
    a failed send names no partition, so each read of its value is foreign)."""
    from pyspark.sql import functions as F

    failed = t.sends.filter(F.col("outcome") == "fail").select(
        "rk", "value", F.col("i_done").alias("fail_index")
    )
    found = (
        reads.join(failed, ["rk", "value"])
        .groupBy("rk", "value")
        .agg(
            F.min(F.struct("index", "topic", "partition", "offset", "time", "src")).alias("r"),
            F.first("fail_index").alias("fail_index"),
            F.count(F.lit(1)).alias("times_read"),
        )
        .select("rk", "value", "r.*", "fail_index", "times_read")
    )
    return shape(
        found,
        "aborted-read",
        F.col("index"),
        F.col("time"),
        fail_index=F.col("fail_index"),
        read_index=F.col("index"),
        reader=F.col("src"),
        times_read=F.col("times_read"),
    )


def duplicate(found: DataFrame, reads: DataFrame) -> DataFrame:
    """The first stage's duplicates of values read in one partition only, and those of
    the foreign values over ``reads``, all their reads (:func:`foreign_reads`)."""
    from pyspark.sql import functions as F

    from kchaos.harness.analysis import partitions as pp

    pos = F.struct("topic", "partition", "offset")
    across = (
        reads.groupBy("rk", "value")
        .agg(
            F.min(pos).alias("lo"),
            F.max(pos).alias("hi"),
            F.min("index").alias("first"),
            F.min("time").alias("t"),
        )
        .filter(F.col("lo") != F.col("hi"))
        .select("rk", "value", "lo.*", "hi", "first", "t")
    )
    within = (
        _tagged(found, pp.DUPLICATE)
        .join(_foreign_values(found), ["rk", "value"], "left_anti")
        .select(
            "rk",
            "value",
            "topic",
            "partition",
            "offset",
            F.struct("topic", "partition", F.col("other_offset").alias("offset")).alias("hi"),
            F.col("index").alias("first"),
            F.col("time").alias("t"),
        )
    )
    return shape(
        across.unionByName(within),
        "duplicate",
        F.col("first"),
        F.col("t"),
        other_position=F.col("hi"),
    )


def union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def all_anomalies(
    t: Tables, x: TxnTables | None = None, timeouts: DataFrame | None = None
) -> tuple[DataFrame, DataFrame]:
    """Every data anomaly of every run, one DataFrame of ``COLUMNS``, and the first
    stage's rows it was made from (cached: the caller unpersists them). ``x``: the
    transaction tables (None: no run has a txn line); ``timeouts``: (rk, timeout_ns),
    each run's transaction timeout, for hanging-transaction."""
    from pyspark import StorageLevel

    from kchaos.harness.analysis import txn_anomalies as tx

    more_acks = tx.committed_positions(x) if x is not None else None
    found = per_partition(t, more_acks).persist(StorageLevel.MEMORY_AND_DISK)
    reads = foreign_reads(found, t)
    frames = [
        lost_write(found, t),
        uncommitted_read(found, t, tx.excused_reads(x) if x is not None else None),
        aborted_read(reads, t),
        duplicate(found, reads),
        inconsistent_offset(found),
        unseen(found),
    ]
    if timeouts is not None:
        frames.append(tx.hanging_transaction(t, x, timeouts))
    if x is not None:
        frames += tx.txn_queries(x, t)
    return union(frames), found
