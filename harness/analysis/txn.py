"""The derived tables of history format 1.2: transactions, their values, and their reads.

- txns: one row per (run, txn): the invoke's process, ``transactional_id`` (``tid``),
  index and time, its number of values; the completion's outcome (ok/fail/info, null
  while in flight), index and time; ``i_commit``, the index of its first ``txn-end``
  line with action commit (format 1.3; null where it has none).
- values: one row per value a transaction's invoke lists: the txn's fields, the value's
  topic and ``copy_of`` (from the invoke), partition and offset (from the completion
  where it names them, else the completed drain's partition that holds the value), and
  where the value stands against the completed drains: ``drained`` (its partition was
  drained completely), ``rc`` (and read_committed), ``present`` (the drain holds it),
  ``below`` (its offset is below the drain's log start offset), ``judged`` (counted for
  torn-transaction and the exactly-once kinds), ``lost`` (lost-write).
- reads: one row per record of a fail or info transaction's value a reader returned
  (a poll, the drain, or a copier's consumed record), with ``rc`` true when the reader
  was read_committed at that moment.
- inits: one row per ``txn-init`` completed ``ok``.
- positions: the group's final committed position per input partition (the last ``ok``
  transaction's ``offsets`` that names it).

The decisions where the format is silent are in docs/analysis.md, "Format 1.2 decisions";
format 1.3's rules (txn-end, a copier's reads, a value whose partition is unknown) are
the checker's, applied the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kchaos.harness.analysis.schema import ACTION_COMMIT, READ_COMMITTED, READ_UNCOMMITTED
from kchaos.harness.analysis.tables import CONSUMED, PART, READERS, Tables
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.history import (
    F_ASSIGN,
    F_METADATA,
    F_TXN,
    F_TXN_END,
    F_TXN_INIT,
    FAIL,
    INFO,
    INVOKE,
    OK,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


@dataclass(frozen=True)
class TxnTables:
    txns: DataFrame
    values: DataFrame
    reads: DataFrame
    inits: DataFrame
    positions: DataFrame
    producers: DataFrame  # (rk, t_last): the time of the run's last txn/txn-init line
    consumed: DataFrame  # (rk, group, topic, partition, offset, value): txns' consumed


def rc_drain(isolation: Column) -> Column:
    """A drain-end's isolation read as read_committed unless it says read_uncommitted."""
    from pyspark.sql import functions as F

    return F.coalesce(isolation, F.lit(READ_COMMITTED)) != F.lit(READ_UNCOMMITTED)


def build_txns(events: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    tx = events.filter(F.col("f").isin(F_TXN, F_TXN_END))
    line = F.col("f") == F_TXN
    inv = line & (F.col("type") == INVOKE)
    at_inv = F.when(inv, F.col("index"))
    at_done = F.when(line & (F.col("type") != INVOKE), F.col("index"))
    at_end = F.when(~line, F.col("index"))
    at_commit = F.when(~line & (F.col("action") == ACTION_COMMIT), F.col("index"))
    return tx.groupBy("rk", "txn").agg(
        F.min(at_inv).alias("i_invoke"),
        F.min_by("time", at_inv).alias("t_invoke"),
        F.count(at_inv).alias("n_invoke"),
        F.min_by("process", at_inv).alias("process"),
        F.min_by("transactional_id", at_inv).alias("tid"),
        F.min_by(F.size("sends"), at_inv).alias("n_values"),
        F.min_by("offsets.group", at_inv).alias("group"),
        F.min(at_done).alias("i_done"),
        F.min_by("type", at_done).alias("outcome"),
        F.min_by("time", at_done).alias("t_done"),
        F.count(at_done).alias("n_done"),
        F.min(at_commit).alias("i_commit"),
        F.min(at_end).alias("i_end_first"),
        F.max(at_end).alias("i_end_last"),
    )


def _known_partitions(events: DataFrame, t: Tables, completed: DataFrame) -> DataFrame:
    """Every (run, topic, partition) the history names anywhere."""
    from pyspark.sql import functions as F

    meta = events.filter(F.col("f") == F_METADATA).select(*PART)
    acked = t.sends.filter(F.col("partition").isNotNull()).select(*PART)
    txn_acked = completed.filter(F.col("partition").isNotNull()).select(*PART)
    parts = [t.drained.select(*PART), t.reads.select(*PART), meta, acked, txn_acked]
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out.filter(F.col("topic").isNotNull() & F.col("partition").isNotNull()).distinct()


def _topics(known: DataFrame, t: Tables) -> DataFrame:
    """Per (run, topic): ``fully``, every partition the history names drained completely
    (format 1.3: log start 0, last stable offset, where stated, equal to the high
    watermark), so a value of it whose partition is unknown can be judged missing; and
    ``fully_rc``, all of them read_committed too."""
    from pyspark.sql import functions as F

    whole = (F.col("lso") == 0) & (F.coalesce(F.col("last_stable"), F.col("hwm")) == F.col("hwm"))
    drained = t.drained.select(
        *PART,
        whole.cast("int").alias("d"),
        (whole & rc_drain(F.col("isolation"))).cast("int").alias("c"),
    )
    return (
        known.join(drained, PART, "left")
        .groupBy("rk", "topic")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(F.coalesce(F.col("d"), F.lit(0))).alias("n_drained"),
            F.sum(F.coalesce(F.col("c"), F.lit(0))).alias("n_rc"),
        )
        .select(
            "rk",
            "topic",
            (F.col("n") == F.col("n_drained")).alias("fully"),
            (F.col("n") == F.col("n_rc")).alias("fully_rc"),
        )
    )


def _values(events: DataFrame, t: Tables, txns: DataFrame) -> DataFrame:
    """Every transaction value placed against the completed drains."""
    from pyspark.sql import functions as F

    tx = events.filter(F.col("f") == F_TXN)
    inv = F.col("type") == INVOKE
    listed = (
        tx.filter(inv)
        .select("rk", "txn", F.explode("sends").alias("s"))
        .select(
            "rk",
            "txn",
            F.col("s.value").alias("value"),
            F.col("s.topic").alias("topic"),
            F.col("s.copy_of").alias("copy_of"),
        )
    )
    done = (
        tx.filter(~inv)
        .select("rk", "txn", "index", F.explode("sends").alias("s"))
        .groupBy("rk", "txn", F.col("s.value").alias("value"))
        .agg(
            F.min_by("s.partition", "index").alias("partition"),
            F.min_by("s.offset", "index").alias("offset"),
        )
    )
    completed = t.drain_values.join(F.broadcast(t.drained.select(*PART)), PART)
    found = completed.groupBy("rk", "topic", "value").agg(
        F.min("partition").alias("found_partition")
    )
    topics = _topics(_known_partitions(events, t, listed.join(done, ["rk", "txn", "value"])), t)
    drained = t.drained.select(
        *PART,
        "lso",
        "hwm",
        "i_end",
        "readable",
        F.lit(True).alias("has_end"),
        rc_drain(F.col("isolation")).alias("end_rc"),
    )
    marked = completed.select(*PART, "value", F.lit(True).alias("in_drain"))
    placed = (
        listed.join(done, ["rk", "txn", "value"], "left")
        .join(
            txns.drop("n_invoke", "n_done", "i_commit", "i_end_first", "i_end_last"), ["rk", "txn"]
        )
        .join(found, ["rk", "topic", "value"], "left")
        .withColumn("known_partition", F.col("partition").isNotNull())
        .withColumn("partition", F.coalesce("partition", "found_partition"))
        .drop("found_partition")
        .join(F.broadcast(drained), PART, "left")
        .join(F.broadcast(topics), ["rk", "topic"], "left")
        .join(marked, [*PART, "value"], "left")
    )
    present = F.coalesce(F.col("in_drain"), F.lit(False))
    # a value whose partition is unknown and that no completed drain holds: its topic
    # decides (every partition of it the history names drained completely, or not)
    no_part = F.col("partition").isNull()
    drained_ = F.when(no_part, F.coalesce("fully", F.lit(False))).otherwise(
        F.coalesce("has_end", F.lit(False))
    )
    rc = F.when(no_part, F.coalesce("fully_rc", F.lit(False))).otherwise(
        F.coalesce("end_rc", F.lit(False))
    )
    below = F.coalesce(F.col("offset") < F.col("lso"), F.lit(False))
    above_hwm = F.coalesce(F.col("offset") >= F.col("hwm"), F.lit(False))
    # above a stuck last stable offset: the drain could not read there
    blind = ~present & F.coalesce(
        (F.col("offset") >= F.col("readable")) & (F.col("offset") < F.col("hwm")), F.lit(False)
    )
    # no offset, and the drain started above 0: retention may have deleted the value
    maybe_deleted = F.col("offset").isNull() & F.coalesce(F.col("lso") > 0, F.lit(False))
    out = (
        placed.withColumn("present", present)
        .withColumn("drained", drained_)
        .withColumn("rc", rc)
        .withColumn("below", below)
        .withColumn("blind", blind)
        .withColumn("judged", F.col("rc") & ~F.col("below") & ~F.col("blind"))
        .withColumn(
            "lost",
            (F.col("outcome") == OK)
            & F.col("drained")
            & ~F.col("below")
            & ((~F.col("present") & ~F.col("blind") & ~maybe_deleted) | above_hwm),
        )
        .drop("in_drain", "has_end", "end_rc", "fully", "fully_rc")
    )
    return out


def _reads(events: DataFrame, t: Tables, values: DataFrame) -> DataFrame:
    """Reads of fail and info transactions' values, each with its reader's isolation."""
    from pyspark.sql import functions as F

    # an open transaction (no completion) is judged like an info one
    doubtful = values.filter(F.col("outcome").isin(FAIL, INFO) | F.col("outcome").isNull())
    doubtful = doubtful.select("rk", "value", "txn", "tid", "outcome", "i_done")
    reads = t.reads.join(doubtful, ["rk", "value"])
    assigns = events.filter((F.col("f") == F_ASSIGN) & (F.col("type") == OK)).select(
        "rk",
        "process",
        F.col("index").alias("i_assign"),
        F.coalesce("isolation", F.lit(READ_UNCOMMITTED)).alias("iso"),
    )
    polls = reads.filter(F.col("src").isin(*READERS))
    key = list(polls.columns)
    # a poll's isolation: that of its process's last assign before it (none: uncommitted);
    # a copier's consumed record's (1.3): the same, but read_committed where none
    a = assigns.alias("a")
    on = (
        (F.col("p.rk") == F.col("a.rk"))
        & (F.col("p.process") == F.col("a.process"))
        & (F.col("a.i_assign") < F.col("p.index"))
    )
    unstated = F.when(F.col("src") == CONSUMED, F.lit(READ_COMMITTED)).otherwise(
        F.lit(READ_UNCOMMITTED)
    )
    polled = (
        polls.alias("p")
        .join(a, on, "left")
        .select("p.*", "a.i_assign", "a.iso")
        .groupBy(*key)
        .agg(F.max_by("iso", "i_assign").alias("iso"))
        .withColumn("rc", F.coalesce(F.col("iso"), unstated) == READ_COMMITTED)
        .drop("iso")
    )
    ends = t.drained.select(*PART, rc_drain(F.col("isolation")).alias("end_rc"))
    drained = (
        reads.filter(~F.col("src").isin(*READERS))
        .join(F.broadcast(ends), PART, "left")
        .withColumn("rc", F.coalesce("end_rc", F.lit(True)))
        .drop("end_rc")
    )
    return polled.unionByName(drained)


def _positions(events: DataFrame, txns: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    committed = txns.filter(F.col("outcome") == OK).select("rk", "txn", "i_done")
    pos = (
        events.filter((F.col("f") == F_TXN) & (F.col("type") == INVOKE))
        .filter(F.col("offsets.positions").isNotNull())
        .select(
            "rk",
            "txn",
            F.col("offsets.group").alias("group"),
            F.explode("offsets.positions").alias("p"),
        )
        .join(committed, ["rk", "txn"])
    )
    return pos.groupBy(
        "rk",
        "group",
        F.col("p")[0].alias("topic"),
        F.col("p")[1].cast("int").alias("partition"),
    ).agg(
        F.max_by(F.col("p")[2].cast("long"), "i_done").alias("next"),
        F.max("i_done").alias("i_position"),
    )


def _producers(events: DataFrame) -> DataFrame:
    """Per run: the time of its last txn or txn-init line."""
    from pyspark.sql import functions as F

    lines = events.filter(F.col("f").isin(F_TXN, F_TXN_INIT))
    return lines.groupBy("rk").agg(F.max("time").alias("t_last"))


def _check(events: DataFrame, txns: DataFrame, files: dict[int, str]) -> None:
    """Bad input the line checks cannot see: a txn completion without its invoke, a
    ``copy_of`` naming a value no transaction consumed."""
    from pyspark.sql import functions as F

    orphan = txns.filter((F.col("n_invoke") == 0) & (F.col("n_done") > 0)).limit(1).collect()
    if orphan:
        row = orphan[0]
        raise HistoryError(
            f"a txn completion (index {row['i_done']}) without an invoke of txn {row['txn']!r}",
            file=files.get(row["rk"]),
            field="txn",
        )
    # 1.3: a txn-end line belongs between its transaction's invoke and its completion
    stray_end = (
        txns.filter(
            F.col("i_end_first").isNotNull()
            & (
                F.col("i_invoke").isNull()
                | (F.col("i_end_first") < F.col("i_invoke"))
                | F.coalesce(F.col("i_end_last") > F.col("i_done"), F.lit(False))
            )
        )
        .limit(1)
        .collect()
    )
    if stray_end:
        row = stray_end[0]
        raise HistoryError(
            f"a txn-end line of txn {row['txn']!r} outside its open transaction",
            file=files.get(row["rk"]),
            field="txn",
        )
    inv = events.filter((F.col("f") == F_TXN) & (F.col("type") == INVOKE))
    consumed = inv.select("rk", F.explode("consumed.value").alias("copy_of"))
    copies = inv.select("rk", "index", F.explode("sends.copy_of").alias("copy_of")).filter(
        F.col("copy_of").isNotNull()
    )
    stray = copies.join(consumed, ["rk", "copy_of"], "left_anti").limit(1).collect()
    if stray:
        row = stray[0]
        raise HistoryError(
            f"copy_of {row['copy_of']!r} (txn invoke at index {row['index']}) names a value"
            " no transaction consumed",
            file=files.get(row["rk"]),
            field="sends.copy_of",
        )


def build_txn_tables(events: DataFrame, t: Tables, files: dict[int, str]) -> TxnTables:
    """Derive and cache the transaction tables (the caller unpersists them)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    keep = StorageLevel.MEMORY_AND_DISK
    txns = build_txns(events).persist(keep)
    _check(events, txns, files)
    values = _values(events, t, txns)
    values = values.persist(keep)
    inits = events.filter((F.col("f") == F_TXN_INIT) & (F.col("type") == OK)).select(
        "rk",
        F.col("transactional_id").alias("tid"),
        F.col("process").alias("p_init"),
        F.col("index").alias("i_init"),
    )
    return TxnTables(
        txns=txns,
        values=values,
        reads=_reads(events, t, values).persist(keep),
        inits=inits,
        positions=_positions(events, txns),
        producers=_producers(events),
        consumed=events.filter((F.col("f") == F_TXN) & (F.col("type") == INVOKE))
        .select("rk", F.col("offsets.group").alias("group"), F.explode("consumed").alias("r"))
        .select("rk", "group", "r.topic", "r.partition", "r.offset", "r.value"),
    )


def unpersist_txn(x: TxnTables) -> None:
    for df in (x.txns, x.values, x.reads):
        df.unpersist()
