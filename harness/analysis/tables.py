"""The derived tables every query starts from: sends, reads and completed drains.

- sends: one row per sent value: its invoke (time, index) and its completion (outcome
  ok/fail/info or null while in flight, time, index, topic, partition, offset).
- reads: one row per record a reader returned (``src`` is "poll", "drain", or, format
  1.3, "consumed": a record a copier's txn invoke lists as consumed, its process the
  reader).
- drained: one row per partition with a ``drain-end`` line (log start offset, high
  watermark, isolation, last stable offset, time and index of its last such line).
- drain_values: the distinct (run, topic, partition, value) the drain returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.history import (
    F_DRAIN,
    F_DRAIN_END,
    F_POLL,
    F_SEND,
    F_TXN,
    INVOKE,
    OK,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

PART = ["rk", "topic", "partition"]
CONSUMED = "consumed"  # ``src`` of a copier's consumed record (format 1.3)
#: The ``src`` of the reads judged as a consumer's (uncommitted-read, isolation): a
#: poll's records and a copier's consumed ones.
READERS = (F_POLL, CONSUMED)


@dataclass(frozen=True)
class Tables:
    sends: DataFrame
    reads: DataFrame
    drained: DataFrame
    drain_values: DataFrame


OUTCOMES = ("ok", "fail", "info")  # outcome codes 1, 2, 3 inside the sends aggregation


def send_topics(events: DataFrame) -> list[str]:
    """The topics named on send lines, sorted (one small query; the job has them from
    its validation pass instead)."""
    from pyspark.sql import functions as F

    rows = events.filter(F.col("f") == F_SEND).select("topic").distinct().collect()
    return sorted(r["topic"] for r in rows if r["topic"] is not None)


def build_sends(events: DataFrame, topics: Sequence[str] | None = None) -> DataFrame:
    """One row per (run, value) sent. ``topics``: every topic on a send line.

    Every aggregation buffer is a number (topics by their position in the sorted
    ``topics``, outcomes by code, the completion chosen by ``min_by`` its index), so Spark
    aggregates in a hash table; a string or struct buffer makes it sort millions of rows
    (measured 10.5 s against 4.4 s at 2.7 million sends).
    """
    from pyspark.sql import functions as F

    names = sorted(set(topics if topics is not None else send_topics(events)))
    by_id = F.array(*[F.lit(t) for t in names]) if names else F.array().cast("array<string>")
    outcomes = F.array(*[F.lit(o) for o in OUTCOMES])
    tid = F.array_position(by_id, F.col("topic")).cast("int")  # 1-based; null: no topic
    code = F.array_position(outcomes, F.col("type")).cast("int")
    send = events.filter(F.col("f") == F_SEND)
    is_inv = F.col("type") == INVOKE
    at_done = F.when(~is_inv, F.col("index"))  # min_by skips the invoke lines (null)
    agg = send.groupBy("rk", "value").agg(
        F.min(F.when(is_inv, F.col("time"))).alias("t_invoke"),
        F.min(F.when(is_inv, F.col("index"))).alias("i_invoke"),
        F.min(F.when(is_inv, tid)).alias("tid_invoke"),
        F.count(F.when(is_inv, 1)).alias("n_invoke"),
        F.min(at_done).alias("i_done"),
        F.min_by(code, at_done).alias("code"),
        F.min_by(F.col("time"), at_done).alias("t_done"),
        F.min_by(tid, at_done).alias("tid_done"),
        F.min_by(F.col("partition"), at_done).alias("partition"),
        F.min_by(F.col("offset"), at_done).alias("offset"),
        F.count(at_done).alias("n_done"),
    )
    topic = F.coalesce(
        F.try_element_at(by_id, F.col("tid_done")), F.try_element_at(by_id, F.col("tid_invoke"))
    )
    return agg.select(
        "rk",
        "value",
        "t_invoke",
        "i_invoke",
        "n_invoke",
        "n_done",
        F.try_element_at(outcomes, F.col("code")).alias("outcome"),  # null: in flight
        "t_done",
        "i_done",
        topic.alias("topic"),
        "partition",
        "offset",
    )


def build_reads(events: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    lines = events.filter(F.col("f").isin(F_POLL, F_DRAIN) & (F.col("type") == OK))
    rec = lines.select(
        "rk",
        F.col("f").alias("src"),
        "index",
        "time",
        "process",
        F.explode("records").alias("r"),
    )
    # format 1.3: a copier's consumed records are reads by its process, on its invoke
    copier = events.filter((F.col("f") == F_TXN) & (F.col("type") == INVOKE)).select(
        "rk",
        F.lit(CONSUMED).alias("src"),
        "index",
        "time",
        "process",
        F.explode("consumed").alias("r"),
    )
    rec = rec.unionByName(copier)
    return rec.select(
        "rk",
        "src",
        "index",
        "time",
        "process",
        F.col("r.topic").alias("topic"),
        F.col("r.partition").alias("partition"),
        F.col("r.offset").alias("offset"),
        F.col("r.value").alias("value"),
    )


def build_drained(events: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    ends = events.filter((F.col("f") == F_DRAIN_END) & (F.col("type") == OK))
    by_part = ends.groupBy(*PART).agg(
        F.max_by("log_start_offset", "index").alias("lso"),
        F.max_by("high_watermark", "index").alias("hwm"),
        F.max("index").alias("i_end"),
        F.max_by("isolation", "index").alias("isolation"),
        F.max_by("last_stable_offset", "index").alias("last_stable"),
        F.max_by("time", "index").alias("t_end"),
    )
    # where the drain's complete view ends: a read_committed drain cannot read past a
    # last stable offset stuck below the high watermark
    stuck = (
        F.col("last_stable").isNotNull()
        & (F.coalesce(F.col("isolation"), F.lit("read_committed")) != "read_uncommitted")
        & (F.col("last_stable") < F.col("hwm"))
    )
    return by_part.withColumn(
        "readable", F.when(stuck, F.col("last_stable")).otherwise(F.col("hwm"))
    )


def build_tables(
    events: DataFrame,
    files: dict[int, str],
    topics: Sequence[str] | None = None,
    keep_reads: bool = False,
) -> Tables:
    """Derive the tables (the caller unpersists them); ``topics`` as :func:`build_sends`
    takes them. The sends and the drained partitions are cached; the read records and
    the drained values only with ``keep_reads`` (the transaction tables query them again
    and again): otherwise the per-partition stage reads them once, straight from the
    events, and the second stage only where it must (see anomalies.foreign_reads)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    keep = StorageLevel.MEMORY_AND_DISK
    sends = build_sends(events, topics).persist(keep)
    reads = build_reads(events)
    drained = build_drained(events).persist(keep)
    orphan = (
        sends.filter((F.col("n_invoke") == 0) & (F.col("n_done") > 0))
        .select("rk", "value", "i_done")
        .limit(1)
        .collect()
    )
    if orphan:
        row = orphan[0]
        raise HistoryError(
            f"a send completion (index {row['i_done']}) without an invoke"
            f" of value {row['value']!r}",
            file=files.get(row["rk"]),
            field="value",
        )
    drain_values = reads.filter(F.col("src") == "drain").select(*PART, "value").distinct()
    if keep_reads:
        reads = reads.persist(keep)
        drain_values = drain_values.persist(keep)
    return Tables(sends=sends, reads=reads, drained=drained, drain_values=drain_values)


def unpersist(tables: Tables) -> None:
    for df in (tables.sends, tables.reads, tables.drained, tables.drain_values):
        df.unpersist()
