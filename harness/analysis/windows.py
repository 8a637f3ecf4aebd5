"""Per fault window: what the producers saw between one fault boundary and the next.

The fault lines of a run cut its time into windows at every fault start and stop; each
window carries the set of faults active in it (none: a no-fault stretch). Sends count in
the window where they completed (ok/fail/info, latency, throughput, lost) or, for
``invoked`` and ``in_flight``, where they were invoked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kchaos.harness.rundir.history import F_FAULT

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

NO_FAULT = "no-fault"
BUCKETS_PER_RUN = 2000
BUCKETS_PER_WINDOW = 4  # a run with many windows gets more buckets than BUCKETS_PER_RUN
WINDOW_SCHEMA = (
    "rk int, w int, start_ns long, end_ns long, faults string, fault_ids string, label string"
)


@dataclass(frozen=True)
class FaultLine:
    time: int
    index: int
    phase: str
    id: str
    fault: str


def cut_windows(faults: list[FaultLine], end_ns: int) -> list[dict[str, Any]]:
    """The windows of one run, from time 0 to ``end_ns`` (pure Python, tested alone)."""
    active: dict[str, str] = {}
    windows: list[dict[str, Any]] = []
    start = 0
    ordered = sorted(faults, key=lambda f: (f.time, f.index))
    i = 0
    while True:
        boundary = ordered[i].time if i < len(ordered) else end_ns + 1
        if boundary > start:
            kinds = sorted(set(active.values()))
            windows.append(
                {
                    "w": len(windows),
                    "start_ns": start,
                    "end_ns": boundary,
                    "faults": ",".join(kinds),
                    "fault_ids": ",".join(sorted(active)),
                    "label": "+".join(kinds) if kinds else NO_FAULT,
                }
            )
            start = boundary
        if i >= len(ordered):
            return windows
        # Apply every fault line at this instant before opening the next window.
        while i < len(ordered) and ordered[i].time == boundary:
            line = ordered[i]
            if line.phase == "start":
                active[line.id] = line.fault
            elif line.phase == "stop":
                active.pop(line.id, None)
            i += 1


def fault_lines(events: DataFrame) -> dict[int, list[FaultLine]]:
    from pyspark.sql import functions as F

    rows = (
        events.filter(F.col("f") == F_FAULT)
        .select("rk", "time", "index", "phase", "id", "fault")
        .collect()
    )
    out: dict[int, list[FaultLine]] = {}
    for r in rows:
        line = FaultLine(
            int(r["time"]),
            int(r["index"]),
            str(r["phase"] or ""),
            str(r["id"] or r["fault"] or r["index"]),
            str(r["fault"] or "fault"),
        )
        out.setdefault(int(r["rk"]), []).append(line)
    return out


def window_stats(
    spark: SparkSession,
    sends: DataFrame,
    anomalies: DataFrame,
    faults: dict[int, list[FaultLine]],
    ends: dict[int, int],
) -> list[dict[str, Any]]:
    """One dict per (run key, window), with every measure of the window."""
    from pyspark.sql import functions as F

    rows: list[dict[str, Any]] = []
    buckets: dict[int, int] = {}
    for rk, end in ends.items():
        cut = cut_windows(faults.get(rk, []), end)
        rows.extend({"rk": rk, **window} for window in cut)
        buckets[rk] = max(BUCKETS_PER_RUN, BUCKETS_PER_WINDOW * len(cut))
    if not rows:
        return []
    order = ["rk", "w", "start_ns", "end_ns", "faults", "fault_ids", "label"]
    # Windows are contiguous, so a range join of every send against every window of its
    # run would cost sends x windows. Instead both sides get a time bucket (about
    # BUCKETS_PER_RUN per run, more for a run with many windows) and join on (run,
    # bucket) first: a send meets only the one or two windows that overlap its bucket.
    width = {rk: max(1, -(-(end + 1) // buckets[rk])) for rk, end in ends.items()}
    widths = ", ".join(f"{rk}, {w}L" for rk, w in width.items())
    wdf = spark.createDataFrame([[r[k] for k in order] for r in rows], WINDOW_SCHEMA)
    wdf = wdf.withColumn("_width", F.expr(f"element_at(map({widths}), rk)"))
    wdf = wdf.withColumn(
        "_wb",
        F.explode(F.sequence(F.expr("start_ns div _width"), F.expr("(end_ns - 1) div _width"))),
    ).drop("_width")

    def inside(df: DataFrame, t: str) -> DataFrame:
        keyed = df.withColumn("_b", F.expr(f"`{t}` div element_at(map({widths}), rk)"))
        cond = (
            (keyed["rk"] == wdf["rk"])
            & (keyed["_b"] == wdf["_wb"])
            & (keyed[t] >= wdf["start_ns"])
            & (keyed[t] < wdf["end_ns"])
        )
        return keyed.join(wdf, cond).select(
            wdf["rk"], wdf["w"], *[keyed[c] for c in df.columns if c != "rk"]
        )

    latency_ms = (F.col("t_done") - F.col("t_invoke")) / 1e6
    done = inside(sends.filter(F.col("t_done").isNotNull()), "t_done")
    by_done = done.groupBy("rk", "w").agg(
        F.count(F.when(F.col("outcome") == "ok", 1)).alias("ok"),
        F.count(F.when(F.col("outcome") == "fail", 1)).alias("fail"),
        F.count(F.when(F.col("outcome") == "info", 1)).alias("info"),
        F.percentile_approx(
            F.when(F.col("outcome") == "ok", latency_ms), [0.5, 0.95, 0.99], 10000
        ).alias("pct"),
        F.max(F.when(F.col("outcome") == "ok", latency_ms)).alias("latency_max_ms"),
    )
    invoked = inside(sends.filter(F.col("t_invoke").isNotNull()), "t_invoke")
    by_invoke = invoked.groupBy("rk", "w").agg(
        F.count(F.lit(1)).alias("invoked"),
        F.count(F.when(F.col("outcome").isNull(), 1)).alias("in_flight"),
    )
    lost = inside(anomalies.filter(F.col("kind") == "lost-write").select("rk", "time"), "time")
    by_lost = lost.groupBy("rk", "w").agg(F.count(F.lit(1)).alias("lost"))

    merged: dict[tuple[int, int], dict[str, Any]] = {(r["rk"], r["w"]): r for r in rows}
    for r in by_done.collect():
        pct = r["pct"] or [None, None, None]
        merged[(r["rk"], r["w"])].update(
            ok=r["ok"],
            fail=r["fail"],
            info=r["info"],
            latency_p50_ms=pct[0],
            latency_p95_ms=pct[1],
            latency_p99_ms=pct[2],
            latency_max_ms=r["latency_max_ms"],
        )
    for r in by_invoke.collect():
        merged[(r["rk"], r["w"])].update(invoked=r["invoked"], in_flight=r["in_flight"])
    for r in by_lost.collect():
        merged[(r["rk"], r["w"])]["lost"] = r["lost"]
    out = []
    for row in merged.values():
        for key in ("ok", "fail", "info", "invoked", "in_flight", "lost"):
            row.setdefault(key, 0)
        for key in ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_max_ms"):
            row.setdefault(key, None)
        seconds = (row["end_ns"] - row["start_ns"]) / 1e9
        row["duration_s"] = seconds
        row["throughput_ok_per_s"] = row["ok"] / seconds if seconds > 0 else None
        out.append(row)
    return sorted(out, key=lambda r: (r["rk"], r["w"]))
