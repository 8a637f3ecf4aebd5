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


# ``side`` of a row of the window pass: a send's completion, its invoke, a lost write.
DONE, INVOKED, LOST = 0, 1, 2
LOST_CODE = -1  # the outcome code that marks a lost-write row on the way in
OUTCOME_CODES = {"ok": 1, "fail": 2, "info": 3}  # a send's outcome as a number; null: in flight
ASSIGNED_SCHEMA = "rk int, w int, side tinyint, code tinyint, t_invoke long, t_done long"


def window_of(starts: Any, stop: int, times: Any, valid: Any) -> Any:
    """For every time: the index of the window holding it (windows are contiguous, from
    ``starts[0]`` to ``stop``), -1 for a time outside them all or not ``valid``."""
    import numpy as np

    w = np.searchsorted(starts, times, side="right") - 1
    w[~valid | (times >= stop)] = -1
    return w


def assign_batch(batch: Any, bounds: dict[int, tuple[Any, int]]) -> Any:
    """The rows of one Arrow batch (rk, t_invoke, t_done, code) placed in their windows:
    one ``DONE`` row per completion (with both times, for the latency), one ``INVOKED``
    row per invoke and one ``LOST`` row per lost write (code ``LOST_CODE``, at t_done),
    each with its window ``w``; a time in no window gives no row. ``bounds``: per run
    key, its windows' starts (sorted) and the end of its last window."""
    import numpy as np
    import pyarrow as pa

    n = batch.num_rows
    rk = batch["rk"].to_numpy(zero_copy_only=False)
    times = {}
    for name in ("t_invoke", "t_done"):
        col = batch[name]
        times[name] = (
            col.fill_null(0).to_numpy(zero_copy_only=False),
            col.is_valid().to_numpy(zero_copy_only=False),
        )
    w_done = np.full(n, -1, dtype=np.int64)
    w_invoke = np.full(n, -1, dtype=np.int64)
    order = np.argsort(rk, kind="stable")
    keys, first = np.unique(rk[order], return_index=True)
    edges = [*first.tolist(), n]
    for j, key in enumerate(keys.tolist()):
        starts, stop = bounds.get(key, (None, 0))
        if starts is None or len(starts) == 0:
            continue
        rows = order[edges[j] : edges[j + 1]]
        for out, name in ((w_done, "t_done"), (w_invoke, "t_invoke")):
            at, valid = times[name]
            out[rows] = window_of(starts, stop, at[rows], valid[rows])
    code = batch["code"]
    lost = code.fill_null(0).to_numpy(zero_copy_only=False) == LOST_CODE
    parts = []
    for side, w, rows in (
        (DONE, w_done, (w_done >= 0) & ~lost),
        (INVOKED, w_invoke, (w_invoke >= 0) & ~lost),
        (LOST, w_done, (w_done >= 0) & lost),
    ):
        m = int(rows.sum())
        if m == 0:
            continue
        keep = pa.array(rows)
        timed = side == DONE
        parts.append(
            pa.RecordBatch.from_arrays(
                [
                    pa.array(rk[rows], pa.int32()),
                    pa.array(w[rows], pa.int32()),
                    pa.array(np.full(m, side, dtype=np.int8)),
                    code.filter(keep) if side != LOST else pa.nulls(m, pa.int8()),
                    batch["t_invoke"].filter(keep) if timed else pa.nulls(m, pa.int64()),
                    batch["t_done"].filter(keep) if timed else pa.nulls(m, pa.int64()),
                ],
                names=["rk", "w", "side", "code", "t_invoke", "t_done"],
            )
        )
    return parts


def _assigner(bounds: dict[int, tuple[Any, int]]) -> Any:
    """The function ``mapInArrow`` calls: every batch through :func:`assign_batch`."""

    def run(batches: Any) -> Any:
        for batch in batches:
            yield from assign_batch(batch, bounds)

    return run


def window_stats(
    spark: SparkSession,
    sends: DataFrame,
    anomalies: DataFrame,
    faults: dict[int, list[FaultLine]],
    ends: dict[int, int],
) -> list[dict[str, Any]]:
    """One dict per (run key, window), with every measure of the window.

    The windows are cut on the driver (a few per fault line: cheap). Their measures take
    ONE Spark job: the sends table and the lost writes go through ``mapInArrow``, which
    places each completion, invoke and lost write in its window by a binary search over
    its run's window starts (the windows of a run are contiguous), then one aggregation
    by (run, window). Until 2026-12-07 each measure was a join of the sends with the
    windows (a table built on the driver, one row per window and time bucket), three
    Spark jobs in all: 13-15 s of the 10M-event bench."""
    import numpy as np
    from pyspark.sql import functions as F

    rows: list[dict[str, Any]] = []
    bounds: dict[int, tuple[Any, int]] = {}
    for rk, end in ends.items():
        cut = cut_windows(faults.get(rk, []), end)
        rows.extend({"rk": rk, **window} for window in cut)
        if cut:
            starts = np.array([w["start_ns"] for w in cut], dtype=np.int64)
            bounds[rk] = (starts, int(cut[-1]["end_ns"]))
    if not rows:
        return []
    code = F.lit(None).cast("tinyint")
    for name, number in OUTCOME_CODES.items():
        code = F.when(F.col("outcome") == name, F.lit(number).cast("tinyint")).otherwise(code)
    lost = anomalies.filter(F.col("kind") == "lost-write")
    placed = (
        sends.select("rk", "t_invoke", "t_done", code.alias("code"))
        .unionByName(
            lost.select(
                "rk",
                F.lit(None).cast("long").alias("t_invoke"),
                F.col("time").alias("t_done"),
                F.lit(LOST_CODE).cast("tinyint").alias("code"),
            )
        )
        .mapInArrow(_assigner(bounds), ASSIGNED_SCHEMA)
    )
    side, outcome = F.col("side"), F.col("code")
    done, invoked = side == DONE, side == INVOKED
    ok = done & (outcome == OUTCOME_CODES["ok"])
    latency_ms = (F.col("t_done") - F.col("t_invoke")) / 1e6
    measures = placed.groupBy("rk", "w").agg(
        F.count(F.when(done, 1)).alias("done"),
        F.count(F.when(ok, 1)).alias("ok"),
        F.count(F.when(done & (outcome == OUTCOME_CODES["fail"]), 1)).alias("fail"),
        F.count(F.when(done & (outcome == OUTCOME_CODES["info"]), 1)).alias("info"),
        F.percentile_approx(F.when(ok, latency_ms), [0.5, 0.95, 0.99], 10000).alias("pct"),
        F.max(F.when(ok, latency_ms)).alias("latency_max_ms"),
        F.count(F.when(invoked, 1)).alias("invoked"),
        F.count(F.when(invoked & outcome.isNull(), 1)).alias("in_flight"),
        F.count(F.when(side == LOST, 1)).alias("lost"),
    )

    merged: dict[tuple[int, int], dict[str, Any]] = {(r["rk"], r["w"]): r for r in rows}
    for r in measures.collect():
        row = merged[(r["rk"], r["w"])]
        # the keys in the order the measures were always added (the JSON's key order)
        if r["done"]:
            pct = r["pct"] or [None, None, None]
            row.update(
                ok=r["ok"],
                fail=r["fail"],
                info=r["info"],
                latency_p50_ms=pct[0],
                latency_p95_ms=pct[1],
                latency_p99_ms=pct[2],
                latency_max_ms=r["latency_max_ms"],
            )
        if r["invoked"]:
            row.update(invoked=r["invoked"], in_flight=r["in_flight"])
        if r["lost"]:
            row["lost"] = r["lost"]
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
