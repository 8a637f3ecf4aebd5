"""The derived tables every query starts from: sends, reads and completed drains.

- sends: one row per sent value: its invoke (time, index) and its completion (outcome
  ok/fail/info or null while in flight, time, index, topic, partition, offset).
- reads: one row per record a reader returned (``src`` is "poll" or "drain").
- drained: one row per partition with a ``drain-end`` line (log start offset and high
  watermark of its last such line).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.errors import HistoryError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

PART = ["rk", "topic", "partition"]


@dataclass(frozen=True)
class Tables:
    sends: DataFrame
    reads: DataFrame
    drained: DataFrame
    drain_values: DataFrame


def build_sends(events: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    send = events.filter(F.col("f") == "send")
    is_inv = F.col("type") == "invoke"
    done = F.struct(
        F.col("index").alias("i"),
        F.col("type").alias("outcome"),
        F.col("time").alias("t"),
        F.col("topic").alias("topic"),
        F.col("partition").alias("partition"),
        F.col("offset").alias("offset"),
    )
    agg = send.groupBy("rk", "value").agg(
        F.min(F.when(is_inv, F.col("time"))).alias("t_invoke"),
        F.min(F.when(is_inv, F.col("index"))).alias("i_invoke"),
        F.min(F.when(is_inv, F.col("topic"))).alias("topic_invoke"),
        F.count(F.when(is_inv, 1)).alias("n_invoke"),
        F.min(F.when(~is_inv, done)).alias("done"),
        F.count(F.when(~is_inv, 1)).alias("n_done"),
    )
    return agg.select(
        "rk",
        "value",
        "t_invoke",
        "i_invoke",
        "n_invoke",
        "n_done",
        F.col("done.outcome").alias("outcome"),
        F.col("done.t").alias("t_done"),
        F.col("done.i").alias("i_done"),
        F.coalesce(F.col("done.topic"), F.col("topic_invoke")).alias("topic"),
        F.col("done.partition").alias("partition"),
        F.col("done.offset").alias("offset"),
    )


def build_reads(events: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    lines = events.filter(F.col("f").isin("poll", "drain") & (F.col("type") == "ok"))
    rec = lines.select(
        "rk",
        F.col("f").alias("src"),
        "index",
        "time",
        "process",
        F.explode("records").alias("r"),
    )
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

    ends = events.filter((F.col("f") == "drain-end") & (F.col("type") == "ok"))
    return ends.groupBy(*PART).agg(
        F.max_by("log_start_offset", "index").alias("lso"),
        F.max_by("high_watermark", "index").alias("hwm"),
        F.max("index").alias("i_end"),
    )


def build_tables(events: DataFrame, files: dict[int, str]) -> Tables:
    """Derive and cache the three tables (the caller unpersists them)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    sends = build_sends(events).persist(StorageLevel.MEMORY_AND_DISK)
    reads = build_reads(events).persist(StorageLevel.MEMORY_AND_DISK)
    drained = build_drained(events).persist(StorageLevel.MEMORY_AND_DISK)
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
    drain_values = (
        reads.filter(F.col("src") == "drain").select(*PART, "value").distinct()
    ).persist(StorageLevel.MEMORY_AND_DISK)
    return Tables(sends=sends, reads=reads, drained=drained, drain_values=drain_values)


def unpersist(tables: Tables) -> None:
    for df in (tables.sends, tables.reads, tables.drained, tables.drain_values):
        df.unpersist()
