"""The anomalies of history format 1.2 as Spark queries, over all runs at once.

Counting units (the checker's, see docs/analysis.md "Format 1.2 decisions"):
- lost-write (extended): one per value of an ok transaction missing from its drain;
- aborted-read (extended): one per value of a fail transaction that a read_committed
  reader (a poll in a read_committed stretch, or the drain) returned;
- torn-transaction: one per transaction;
- zombie-commit: one per ok transaction of a fenced producer (its commit called after
  another process's init of its id completed ok: format 1.3);
- hanging-transaction: one per partition;
- eos-duplicate, eos-lost: one per input value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kchaos.harness.analysis.anomalies import shape, shape_acked
from kchaos.harness.analysis.tables import PART, READERS, Tables
from kchaos.harness.rundir.history import FAIL, OK

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from kchaos.harness.analysis.txn import TxnTables

_FIRST = 5  # values listed in an example's detail


def excused_reads(x: TxnTables) -> DataFrame:
    """(rk, index, value) of polls (and, format 1.3, a copier's consumed records) that
    are no uncommitted-read: any poll of a fail transaction's value (read_committed: it
    is an aborted-read instead; one value, one kind), and a read_uncommitted poll of an
    info or open transaction's value (such a reader may see aborted data)."""
    from pyspark.sql import functions as F

    doubtful = (F.col("outcome") == FAIL) | (
        ~F.col("rc") & ~F.coalesce(F.col("outcome") == OK, F.lit(False))
    )
    ok_to_see = F.col("src").isin(*READERS) & doubtful
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

    return shape_acked(
        x.values.filter(F.col("lost")),
        "lost-write",
        F.col("i_done"),
        F.col("t_done"),
        F.col("i_invoke"),
        F.col("txn"),
        F.col("tid"),
        log_start_offset=F.col("lso"),
        high_watermark=F.col("hwm"),
        drain_end_index=F.col("i_end"),
    )


def unseen(x: TxnTables, t: Tables) -> DataFrame:
    """Values of ok transactions no reader saw, on a partition not drained completely or
    above a stuck last stable offset (the drain could not read them)."""
    from pyspark.sql import functions as F

    out = x.values.filter(
        (F.col("outcome") == OK) & ~F.col("present") & (~F.col("drained") | F.col("blind"))
    ).join(t.reads.select("rk", "value"), ["rk", "value"], "left_anti")
    return shape_acked(
        out,
        "unseen",
        F.col("i_done"),
        F.col("t_done"),
        F.col("i_invoke"),
        F.col("txn"),
        F.col("tid"),
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

    # format 1.3: the commit was called at the first txn-end with action commit, or at
    # the invoke where there is none; an init completed before that call fences it
    committed = x.txns.filter((F.col("outcome") == OK) & F.col("tid").isNotNull()).withColumn(
        "i_called", F.coalesce("i_commit", "i_invoke")
    )
    fenced = (
        committed.join(x.inits, ["rk", "tid"])
        .filter(F.col("i_init") < F.col("i_called"))
        .groupBy("rk", "txn", "tid", "process", "i_invoke", "i_called", "i_done", "t_done")
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
        commit_called_index=F.col("i_called"),
        fenced_by_process=F.col("holder"),
        fencing_init_index=F.col("i_fence"),
        values=F.col("values"),
    )


def hanging_transaction(t: Tables, x: TxnTables | None, timeouts: DataFrame) -> DataFrame:
    """Partitions left with an open transaction: last stable offset below the high
    watermark at the drain's end, longer than the run's transaction timeout after the
    run's last txn or txn-init line (every producer done by then; a run without such a
    line is not judged)."""
    from pyspark.sql import functions as F

    stuck = t.drained.filter(
        F.col("last_stable").isNotNull() & (F.col("last_stable") < F.col("hwm"))
    ).join(F.broadcast(timeouts), "rk")
    if x is None:  # no transactional line in any run: nothing to judge
        stuck = stuck.withColumn("t_last", F.lit(None).cast("long"))
    else:
        stuck = stuck.join(F.broadcast(x.producers), "rk", "left")
    waited = F.col("t_end") - F.col("t_last")
    hanging = stuck.filter(F.col("t_last").isNotNull() & (waited > F.col("timeout_ns"))).select(
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


def _copies(x: TxnTables) -> DataFrame:
    """Every copy value, with its group (its transaction's ``offsets.group``), whether
    it is committed (in a judged drain, its transaction not ``fail``) and whether it is
    certainly missing (``out``: judged and not in the drain)."""
    from pyspark.sql import functions as F

    not_fail = F.coalesce(F.col("outcome") != FAIL, F.lit(True))
    return x.values.filter(F.col("copy_of").isNotNull()).select(
        "rk",
        "group",
        "copy_of",
        "value",
        "txn",
        "i_invoke",
        "i_done",
        "t_invoke",
        "t_done",
        (F.col("judged") & F.col("present") & not_fail).alias("committed"),
        (F.col("judged") & ~F.col("present")).alias("out"),
        not_fail.alias("live"),
    )


def eos_duplicate(x: TxnTables) -> DataFrame:
    """One per (group, input value) with two or more committed copies."""
    from pyspark.sql import functions as F

    dup = (
        _copies(x)
        .filter(F.col("committed"))
        .groupBy("rk", "group", F.col("copy_of").alias("value"))
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
        group=F.col("group"),
        copies=F.col("copies"),
        copy_values=F.col("copy_values"),
        txns=F.col("txns"),
    )


def eos_lost(x: TxnTables, t: Tables) -> DataFrame:
    """One per (group, input value) below the group's final committed position, from the
    first offset the group consumed in that partition, with no committed copy; not
    judged while a copy not aborted may be in a partition that was not drained."""
    from pyspark.sql import functions as F

    consumed = x.consumed.filter(F.col("group").isNotNull())
    first = consumed.groupBy("rk", "group", *PART[1:]).agg(F.min("offset").alias("first"))
    final = x.positions.filter(F.col("group").isNotNull()).join(
        first, ["rk", "group", *PART[1:]], "left"
    )
    drained_in = (
        t.reads.filter(F.col("src") == "drain")
        .join(F.broadcast(t.drained.select(*PART, "lso")), PART)
        .select(*PART, "offset", "value", "lso")
    )
    from_drain = (
        drained_in.join(F.broadcast(final), PART)
        .filter(F.col("offset") >= F.greatest(F.coalesce("first", F.lit(0)), F.col("lso")))
        .select("rk", "group", *PART[1:], "offset", "value")
    )
    inputs = consumed.unionByName(from_drain).join(F.broadcast(final), ["rk", "group", *PART[1:]])
    copies = (
        _copies(x)
        .groupBy("rk", "group", F.col("copy_of").alias("value"))
        .agg(
            F.max(F.col("committed").cast("int")).alias("committed"),
            F.max((F.col("live") & ~F.col("out")).cast("int")).alias("maybe"),
        )
    )
    lost = (
        inputs.filter(F.col("offset") < F.col("next"))
        .join(copies, ["rk", "group", "value"], "left")
        .filter(
            (F.coalesce(F.col("committed"), F.lit(0)) == 0)
            & (F.coalesce(F.col("maybe"), F.lit(0)) == 0)
        )
        .groupBy("rk", "group", "value")
        .agg(F.min(F.struct("topic", "partition", "offset", "next", "i_position")).alias("r"))
        .select("rk", "group", "value", "r.*")
    )
    return shape(
        lost,
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
        unseen(x, t),
        aborted_read(x),
        torn_transaction(x),
        zombie_commit(x),
        eos_duplicate(x),
        eos_lost(x, t),
    ]
