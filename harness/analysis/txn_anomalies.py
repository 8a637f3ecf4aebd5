"""The anomalies of history format 1.2 as Spark queries, over all runs at once.

Counting units (the checker's, see docs/analysis.md "Format 1.2 decisions"):
- lost-write (extended): one per value of an ok transaction missing from its drain;
- aborted-read (extended): one per value of a fail transaction that a read_committed
  reader (a poll in a read_committed stretch, or the drain) returned;
- torn-transaction: one per transaction;
- zombie-commit: one per ok transaction of a fenced producer;
- hanging-transaction: one per partition;
- eos-duplicate, eos-lost: one per input value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kchaos.harness.analysis.anomalies import shape
from kchaos.harness.analysis.tables import PART, Tables
from kchaos.harness.analysis.txn import rc_drain
from kchaos.harness.rundir.history import FAIL, INFO, OK

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from kchaos.harness.analysis.txn import TxnTables

_FIRST = 5  # values listed in an example's detail


def excused_reads(x: TxnTables) -> DataFrame:
    """(rk, index, value) of polls that are no uncommitted-read: a read_uncommitted
    reader returning a value of a fail or info transaction (it may see aborted data)."""
    from pyspark.sql import functions as F

    ok_to_see = (F.col("src") == "poll") & ~F.col("rc") & F.col("outcome").isin(FAIL, INFO)
    return x.reads.filter(ok_to_see).select("rk", "index", "value").distinct()


def committed_positions(x: TxnTables) -> DataFrame:
    """The positions ok transactions' completions report, as acknowledgements."""
    from pyspark.sql import functions as F

    return x.values.filter(
        (F.col("outcome") == OK) & F.col("known_partition") & F.col("offset").isNotNull()
    ).select(
        *PART, "offset", "value", F.col("i_done").alias("index"), F.col("t_done").alias("time")
    )


def lost_write(x: TxnTables) -> DataFrame:
    from pyspark.sql import functions as F

    return shape(
        x.values.filter(F.col("lost")),
        "lost-write",
        F.col("i_done"),
        F.col("t_done"),
        F.col("txn"),
        F.col("tid"),
        invoke_index=F.col("i_invoke"),
        ok_index=F.col("i_done"),
        log_start_offset=F.col("lso"),
        high_watermark=F.col("hwm"),
        drain_end_index=F.col("i_end"),
    )


def aborted_read(x: TxnTables) -> DataFrame:
    from pyspark.sql import functions as F

    found = (
        x.reads.filter((F.col("outcome") == FAIL) & F.col("rc"))
        .groupBy("rk", "value")
        .agg(
            F.min(F.struct("index", "topic", "partition", "offset", "time", "src")).alias("r"),
            F.first("txn").alias("txn"),
            F.first("tid").alias("tid"),
            F.first("i_done").alias("fail_index"),
            F.count(F.lit(1)).alias("times_read"),
        )
        .select("rk", "value", "r.*", "txn", "tid", "fail_index", "times_read")
    )
    return shape(
        found,
        "aborted-read",
        F.col("index"),
        F.col("time"),
        F.col("txn"),
        F.col("tid"),
        fail_index=F.col("fail_index"),
        read_index=F.col("index"),
        reader=F.col("src"),
        times_read=F.col("times_read"),
    )


def torn_transaction(x: TxnTables) -> DataFrame:
    from pyspark.sql import functions as F

    judged = x.values.filter(F.col("judged"))
    here, gone = F.col("present"), ~F.col("present")
    torn = (
        judged.groupBy("rk", "txn")
        .agg(
            F.first("tid").alias("tid"),
            F.first("outcome").alias("outcome"),
            F.first(F.coalesce("i_done", "i_invoke")).alias("index"),
            F.first(F.coalesce("t_done", "t_invoke")).alias("time"),
            F.count(F.when(here, 1)).alias("n_present"),
            F.count(F.when(gone, 1)).alias("n_missing"),
            F.min(F.when(gone, F.struct("value", "topic", "partition", "offset"))).alias("m"),
            F.sort_array(F.collect_list(F.when(here, F.col("value")))).alias("present"),
            F.sort_array(F.collect_list(F.when(gone, F.col("value")))).alias("missing"),
        )
        .filter((F.col("n_present") > 0) & (F.col("n_missing") > 0))
        .select("rk", "txn", "tid", "outcome", "index", "time", "m.*", "present", "missing")
    )
    return shape(
        torn,
        "torn-transaction",
        F.col("index"),
        F.col("time"),
        F.col("txn"),
        F.col("tid"),
        outcome=F.col("outcome"),
        present=F.slice("present", 1, _FIRST),
        missing=F.slice("missing", 1, _FIRST),
    )


def zombie_commit(x: TxnTables) -> DataFrame:
    from pyspark.sql import functions as F

    committed = x.txns.filter((F.col("outcome") == OK) & F.col("tid").isNotNull())
    fenced = (
        committed.join(x.inits, ["rk", "tid"])
        .filter(F.col("i_init") < F.col("i_invoke"))
        .groupBy("rk", "txn", "tid", "process", "i_invoke", "i_done", "t_done")
        .agg(
            F.max_by("p_init", "i_init").alias("holder"),
            F.max("i_init").alias("i_fence"),
        )
        .filter(F.col("holder") != F.col("process"))
    )
    first = x.values.groupBy("rk", "txn").agg(
        F.min(F.struct("value", "topic", "partition", "offset")).alias("v"),
        F.slice(F.sort_array(F.collect_list("value")), 1, _FIRST).alias("values"),
    )
    rows = fenced.join(first, ["rk", "txn"], "left").select("*", "v.*")
    return shape(
        rows,
        "zombie-commit",
        F.col("i_done"),
        F.col("t_done"),
        F.col("txn"),
        F.col("tid"),
        process=F.col("process"),
        invoke_index=F.col("i_invoke"),
        fenced_by_process=F.col("holder"),
        fencing_init_index=F.col("i_fence"),
        values=F.col("values"),
    )


def hanging_transaction(t: Tables, x: TxnTables | None, timeouts: DataFrame) -> DataFrame:
    """Partitions left with an open transaction: last stable offset below the high
    watermark at the drain's end, every transactional operation completed, and longer
    than the run's transaction timeout since the last txn or txn-init line (time 0 in a
    history without one)."""
    from pyspark.sql import functions as F

    stuck = t.drained.filter(
        F.col("last_stable").isNotNull() & (F.col("last_stable") < F.col("hwm"))
    ).join(F.broadcast(timeouts), "rk")
    if x is not None:
        stuck = stuck.join(F.broadcast(x.producers), "rk", "left")
    else:
        stuck = stuck.withColumn("t_last", F.lit(None).cast("long")).withColumn(
            "unfinished", F.lit(0)
        )
    waited = F.col("t_end") - F.coalesce(F.col("t_last"), F.lit(0))
    hanging = stuck.filter(
        (F.coalesce(F.col("unfinished"), F.lit(0)) == 0) & (waited > F.col("timeout_ns"))
    ).select(
        "rk",
        F.lit(None).cast("string").alias("value"),
        *PART[1:],
        F.col("last_stable").alias("offset"),
        "i_end",
        "t_end",
        "hwm",
        (waited / 1_000_000).cast("long").alias("waited_ms"),
        (F.col("timeout_ns") / 1_000_000).cast("long").alias("timeout_ms"),
    )
    return shape(
        hanging,
        "hanging-transaction",
        F.col("i_end"),
        F.col("t_end"),
        last_stable_offset=F.col("offset"),
        high_watermark=F.col("hwm"),
        drain_end_index=F.col("i_end"),
        waited_ms=F.col("waited_ms"),
        timeout_ms=F.col("timeout_ms"),
    )


def _committed_copies(x: TxnTables) -> DataFrame:
    from pyspark.sql import functions as F

    return x.values.filter(F.col("copy_of").isNotNull() & F.col("judged") & F.col("present"))


def eos_duplicate(x: TxnTables) -> DataFrame:
    from pyspark.sql import functions as F

    dup = (
        _committed_copies(x)
        .groupBy("rk", F.col("copy_of").alias("value"))
        .agg(
            F.countDistinct("value").alias("copies"),
            F.min(F.coalesce("i_done", "i_invoke")).alias("index"),
            F.min(F.coalesce("t_done", "t_invoke")).alias("time"),
            F.slice(F.sort_array(F.collect_set("value")), 1, _FIRST).alias("copy_values"),
            F.slice(F.sort_array(F.collect_set("txn")), 1, _FIRST).alias("txns"),
        )
        .filter(F.col("copies") >= 2)
        .select(
            "*",
            F.lit(None).cast("string").alias("topic"),
            F.lit(None).cast("int").alias("partition"),
            F.lit(None).cast("long").alias("offset"),
        )
    )
    return shape(
        dup,
        "eos-duplicate",
        F.col("index"),
        F.col("time"),
        copies=F.col("copies"),
        copy_values=F.col("copy_values"),
        txns=F.col("txns"),
    )


def eos_lost(x: TxnTables, t: Tables) -> DataFrame:
    """Input values below the group's final committed position with no committed copy;
    judged only in runs where every topic that copies go to was drained completely and
    read_committed (else a missing copy could be in a partition nobody read)."""
    from pyspark.sql import functions as F

    copies = x.values.filter(F.col("copy_of").isNotNull())
    out_topics = copies.select("rk", "topic").distinct().join(x.topics, ["rk", "topic"], "left")
    judgeable = (
        out_topics.groupBy("rk")
        .agg(F.min(F.coalesce(F.col("fully_rc").cast("int"), F.lit(0))).alias("all_rc"))
        .filter(F.col("all_rc") == 1)
        .select("rk")
    )
    rc_ends = t.drained.filter(rc_drain(F.col("isolation"))).select(*PART)
    drained_in = (
        t.reads.filter(F.col("src") == "drain")
        .join(F.broadcast(rc_ends), PART)
        .select(*PART, "offset", "value")
    )
    inputs = x.consumed.unionByName(drained_in)
    below = (
        inputs.join(F.broadcast(x.positions), PART)
        .filter(F.col("offset") < F.col("next"))
        .join(F.broadcast(judgeable), "rk")
        .join(
            _committed_copies(x).select("rk", F.col("copy_of").alias("value")),
            ["rk", "value"],
            "left_anti",
        )
        .groupBy("rk", "value")
        .agg(
            F.min(F.struct("topic", "partition", "offset", "group", "next", "i_position")).alias(
                "r"
            )
        )
        .select("rk", "value", "r.*")
    )
    return shape(
        below,
        "eos-lost",
        F.col("i_position"),
        F.lit(None),
        group=F.col("group"),
        committed_position=F.col("next"),
        position_txn_index=F.col("i_position"),
    )


def txn_queries(x: TxnTables, t: Tables) -> list[DataFrame]:
    """Every format 1.2 query that needs the transaction tables."""
    return [
        lost_write(x),
        aborted_read(x),
        torn_transaction(x),
        zombie_commit(x),
        eos_duplicate(x),
        eos_lost(x, t),
    ]
