"""The data anomalies of format v1 as Spark queries, over all runs at once.

Each query returns rows of one shape (``COLUMNS``), one row per counted anomaly:
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

from kchaos.harness.analysis.tables import PART, READERS, Tables

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row

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


def _acked(t: Tables) -> DataFrame:
    from pyspark.sql import functions as F

    return t.sends.filter(F.col("outcome") == "ok")


def lost_write(t: Tables) -> DataFrame:
    from pyspark.sql import functions as F

    # Lost: the value is nowhere in the partition's drain (and not above a stuck last
    # stable offset, where the drain could not read), or acknowledged at or above the
    # high watermark and drained only there. Acknowledged at or above the high watermark
    # but drained at another offset is an inconsistent-offset instead.
    marked = t.drain_values.withColumn("in_drain", F.lit(True))
    judged = _acked(t).join(F.broadcast(t.drained), PART).filter(F.col("offset") >= F.col("lso"))
    missing = F.col("in_drain").isNull() & (
        (F.col("offset") < F.col("readable")) | (F.col("offset") >= F.col("hwm"))
    )
    # The second case needs an acknowledgement at or above the high watermark. When no
    # such acknowledgement exists (one small query on the cached sends tells), the join
    # that finds where the drain holds the value is left out: it shuffles every drained
    # record for no row (about 6 s of this query's 11 at 10M events, 2026-11-26).
    if judged.filter(F.col("offset") >= F.col("hwm")).limit(1).count() == 0:
        lost = judged.join(marked, [*PART, "value"], "left").filter(missing)
    else:
        drained_at = (
            t.reads.filter(F.col("src") == "drain")
            .select(*PART, "offset", "value")
            .distinct()
            .withColumn("at_ack", F.lit(True))
        )
        lost = (
            judged.join(marked, [*PART, "value"], "left")
            .join(drained_at, [*PART, "offset", "value"], "left")
            .filter(missing | ((F.col("offset") >= F.col("hwm")) & F.col("at_ack").isNotNull()))
        )
    return shape(
        lost,
        "lost-write",
        F.col("i_done"),
        F.col("t_done"),
        invoke_index=F.col("i_invoke"),
        ok_index=F.col("i_done"),
        log_start_offset=F.col("lso"),
        high_watermark=F.col("hwm"),
        drain_end_index=F.col("i_end"),
    )


def uncommitted_read(t: Tables, excused: DataFrame | None = None) -> DataFrame:
    """``excused``: (rk, index, value) of polls not to count (read_uncommitted reads of
    values of fail or info transactions)."""
    from pyspark.sql import functions as F

    polled = t.reads.filter(F.col("src").isin(*READERS))  # 1.3: a copier's reads too
    if excused is not None:
        polled = polled.join(excused, ["rk", "index", "value"], "left_anti")
    bad = (
        polled.join(F.broadcast(t.drained), PART)
        .filter(F.col("offset") >= F.col("lso"))
        .filter((F.col("offset") < F.col("readable")) | (F.col("offset") >= F.col("hwm")))
        .join(t.drain_values, [*PART, "value"], "left_anti")
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


# At most this many rows of (run key, value, index) are broadcast to every task.
BROADCAST_ROWS = 500_000


def aborted_read(t: Tables) -> DataFrame:
    from pyspark.sql import functions as F

    failed = t.sends.filter(F.col("outcome") == "fail").select(
        "rk", "value", F.col("i_done").alias("fail_index")
    )
    # Failed sends are usually a small share of the sends: broadcast, they let the join
    # scan the read records instead of shuffling them all (a count on the cached sends
    # tells; above BROADCAST_ROWS the join shuffles both sides, as Spark plans it).
    if failed.count() <= BROADCAST_ROWS:
        failed = F.broadcast(failed)
    found = (
        t.reads.join(failed, ["rk", "value"])
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


# At most this many candidate positions of inconsistent-offset are taken to the driver and
# broadcast; with more (a history full of them), its queries run on every row.
FEW = 10_000


def _few_keys(candidates: DataFrame, keys: list[str]) -> list[Row] | None:
    """The distinct ``keys`` of ``candidates`` (one Spark job), or None when there are
    more than ``FEW``."""
    rows = candidates.select(*keys).distinct().limit(FEW + 1).collect()
    return None if len(rows) > FEW else rows


def _only(df: DataFrame, keys: list[Row] | None, names: list[str]) -> DataFrame:
    """The rows of ``df`` whose ``names`` equal one of ``keys`` (None: every row), nulls
    matching nulls as a grouping puts them together. The keys are few and broadcast, so
    ``df`` is only scanned, not shuffled; with no key, not even scanned."""
    from functools import reduce

    from pyspark.sql import functions as F

    if keys is None:
        return df
    if not keys:
        return df.limit(0)
    schema = df.select(*names).schema
    found = df.sparkSession.createDataFrame(keys, schema)
    renamed = found.select(*[F.col(c).alias(f"_k_{c}") for c in names])
    cond = reduce(lambda a, b: a & b, [F.col(c).eqNullSafe(F.col(f"_k_{c}")) for c in names])
    return df.join(F.broadcast(renamed), cond, "left_semi")


def _local(df: DataFrame) -> DataFrame:
    """``df`` (a few rows) computed now, as a local table."""
    return df.sparkSession.createDataFrame(df.collect(), df.schema)


def duplicate(t: Tables) -> DataFrame:
    from pyspark.sql import functions as F

    pos = F.struct("topic", "partition", "offset")
    dup = (
        t.reads.groupBy("rk", "value")
        .agg(
            F.min(pos).alias("lo"),
            F.max(pos).alias("hi"),
            F.min("index").alias("first"),
            F.min("time").alias("t"),
        )
        .filter(F.col("lo") != F.col("hi"))
        .select("rk", "value", "lo.*", "hi", "first", "t")
    )
    return shape(
        dup,
        "duplicate",
        F.col("first"),
        F.col("t"),
        other_position=F.col("hi"),
    )


def _two_values(both: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return (
        both.groupBy(*PART, "offset")
        .agg(
            F.min("value").alias("value"),
            F.max("value").alias("other_value"),
            F.min("index").alias("first"),
            F.min("time").alias("t"),
        )
        .filter(F.col("value") != F.col("other_value"))
    )


def inconsistent_offset(t: Tables, more_acks: DataFrame | None = None) -> DataFrame:
    """``more_acks``: other acknowledged positions (rk, topic, partition, offset, value,
    index, time), the committed transactions' ones."""
    from pyspark.sql import functions as F

    seen = t.reads.select(*PART, "offset", "value", "index", "time", "src")
    acks = _acked(t).filter(F.col("offset") >= 0)
    acked = acks.select(
        *PART, "offset", "value", F.col("i_done").alias("index"), F.col("t_done").alias("time")
    )
    both = seen.unionByName(acked.withColumn("src", F.lit("ack")))
    if more_acks is not None:
        more = more_acks.filter(F.col("offset") >= 0).withColumn("src", F.lit("txn"))
        both = both.unionByName(more)
    both = both.filter(F.col("offset").isNotNull())
    # A moved acknowledgement: acknowledged at or above the drain's log start offset where
    # the drain holds no record (at or above its high watermark, or a gap), the value
    # drained at another offset. One per position, unless two values were seen there.
    #
    # Both parts group every read and acknowledgement by position; a min/max of the
    # values there made Spark sort them all. First, with numbers only in the buffers
    # (hashed), the positions that matter: two or more distinct values (counted over the
    # distinct (position, value) pairs, on one shuffle by position), or an acknowledgement
    # where the drain of its (drained) partition holds no record. Both parts then run on
    # the rows of those positions only.
    by_pair = (
        both.repartition(*PART, "offset")
        .groupBy(*PART, "offset", "value")
        .agg(
            F.max((F.col("src") == "drain").cast("int")).alias("drained"),
            F.max((F.col("src") == "ack").cast("int")).alias("acked"),
        )
    )
    by_pos = by_pair.groupBy(*PART, "offset").agg(
        F.count(F.lit(1)).alias("n"),
        F.max("drained").alias("drained"),
        F.max("acked").alias("acked"),
    )
    ends = t.drained.select(*PART, "lso")
    candidates = by_pos.join(F.broadcast(ends), PART, "left").filter(
        (F.col("n") > 1)
        | (
            (F.col("drained") == 0)
            & (F.col("acked") == 1)
            & F.col("lso").isNotNull()
            & (F.col("offset") >= F.col("lso"))
        )
    )
    where = [*PART, "offset"]
    keys = _few_keys(candidates, where)
    bad = _two_values(_only(both, keys, where).drop("src"))
    if keys is not None:  # a few rows: computed once here, not once per use below
        bad = _local(bad)
    drain_pos = t.reads.filter(F.col("src") == "drain").select(*PART, "offset")
    judged = (
        _only(acks, keys, where)
        .join(F.broadcast(t.drained), PART)
        .filter(F.col("offset") >= F.col("lso"))
        .join(_only(drain_pos, keys, where), where, "left_anti")
    )
    if keys is not None:
        judged = _local(judged)
    if keys is None:
        moved_acks = judged.join(t.drain_values, [*PART, "value"], "left_semi")
    else:  # few acknowledgements: broadcast them and scan the drained values
        wanted = F.broadcast(judged.select(*PART, "value").distinct())
        found = t.drain_values.join(wanted, [*PART, "value"])
        moved_acks = judged.join(found, [*PART, "value"], "left_semi")
    moved = (
        moved_acks.groupBy(*PART, "offset")
        .agg(
            F.min("value").alias("value"),
            F.lit(None).cast("string").alias("other_value"),
            F.min("i_done").alias("first"),
            F.min("t_done").alias("t"),
        )
        .join(bad.select(*PART, "offset"), where, "left_anti")
    )
    return shape(
        bad.unionByName(moved),
        "inconsistent-offset",
        F.col("first"),
        F.col("t"),
        other=F.col("other_value"),
    )


def unseen(t: Tables) -> DataFrame:
    from pyspark.sql import functions as F

    seen_values = t.reads.select("rk", "value")  # an anti join needs no distinct
    acked = _acked(t)
    undrained = acked.join(F.broadcast(t.drained.select(*PART)), PART, "left_anti")
    # acknowledged above a stuck last stable offset, where the drain could not read.
    # Only a partition whose readable end is below its high watermark has such offsets;
    # with none (the tiny cached drained table says so), the query leaves this part out,
    # for its anti join would shuffle every drained value for no row (5 s at 10M events).
    stuck = t.drained.filter(F.col("readable") < F.col("hwm"))
    missing = undrained
    if stuck.limit(1).count() > 0:
        blind = (
            acked.join(F.broadcast(stuck), PART)
            .filter(
                (F.col("offset") >= F.col("lso"))
                & (F.col("offset") >= F.col("readable"))
                & (F.col("offset") < F.col("hwm"))
            )
            .join(t.drain_values, [*PART, "value"], "left_anti")
            .select(*undrained.columns)
        )
        missing = missing.unionByName(blind)
    # No acknowledged send outside the drained partitions and no stuck partition (the
    # usual case; one small query on the cached sends tells): nothing can be missing, and
    # the anti join, which would shuffle every read record for no row, is left out.
    if missing is undrained and undrained.limit(1).count() == 0:
        missing = undrained.limit(0)
    missing = missing.join(seen_values, ["rk", "value"], "left_anti")
    return shape(
        missing,
        "unseen",
        F.col("i_done"),
        F.col("t_done"),
        invoke_index=F.col("i_invoke"),
        ok_index=F.col("i_done"),
    )


QUERIES = {
    "lost-write": lost_write,
    "uncommitted-read": uncommitted_read,
    "aborted-read": aborted_read,
    "duplicate": duplicate,
    "inconsistent-offset": inconsistent_offset,
    "unseen": unseen,
}


def union(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for frame in frames[1:]:
        out = out.unionByName(frame)
    return out


def all_anomalies(
    t: Tables, x: TxnTables | None = None, timeouts: DataFrame | None = None
) -> DataFrame:
    """Every data anomaly of every run, one DataFrame of ``COLUMNS``. ``x``: the
    transaction tables (None: no run has a txn line); ``timeouts``: (rk, timeout_ns),
    each run's transaction timeout, for hanging-transaction."""
    from kchaos.harness.analysis import txn_anomalies as tx

    frames = [
        lost_write(t),
        uncommitted_read(t, tx.excused_reads(x) if x is not None else None),
        aborted_read(t),
        duplicate(t),
        inconsistent_offset(t, tx.committed_positions(x) if x is not None else None),
        unseen(t),
    ]
    if timeouts is not None:
        frames.append(tx.hanging_transaction(t, x, timeouts))
    if x is not None:
        frames += tx.txn_queries(x, t)
    return union(frames)
