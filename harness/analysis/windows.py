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
    by_run: dict[int, list[tuple[Any, ...]]] = {}
    for r in rows:
        by_run.setdefault(int(r["rk"]), []).append(tuple(r)[1:])
    return faults_from_rows(by_run)


def faults_from_rows(by_run: dict[int, list[tuple[Any, ...]]]) -> dict[int, list[FaultLine]]:
    """Each run's fault lines from (time, index, phase, id, fault) tuples (the validation
    pass collects them: ``Loaded.faults``), in the order given."""
    out: dict[int, list[FaultLine]] = {}
    for rk, lines in by_run.items():
        out[int(rk)] = [
            FaultLine(
                int(time),
                int(index),
                str(phase or ""),
                str(id_ or fault or index),
                str(fault or "fault"),
            )
            for time, index, phase, id_, fault in lines
        ]
    return out


# ``side`` of a row of the window pass: a send's completion, its invoke, a lost write.
DONE, INVOKED, LOST = 0, 1, 2
LOST_CODE = -1  # the outcome code that marks a lost-write row on the way in
OUTCOME_CODES = {"ok": 1, "fail": 2, "info": 3}  # a send's outcome as a number; null: in flight
ASSIGNED_SCHEMA = "rk int, w int, side tinyint, code tinyint, t_invoke long, t_done long"
ASSIGNED_ARROW = [  # the same, as pyarrow (name, type name) pairs
    ("rk", "int32"),
    ("w", "int32"),
    ("side", "int8"),
    ("code", "int8"),
    ("t_invoke", "int64"),
    ("t_done", "int64"),
]


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


# Below this many ok latencies in a window, Spark's percentile_approx (accuracy 10000,
# relative error 1/10000) keeps every value apart and returns the value of rank
# ceil(p * n): it only merges values once 2 * n / 10000 reaches 1 (n = 5000). Such a
# window's percentiles are computed here, exactly, with the same result; a bigger one
# is left to percentile_approx.
EXACT_BELOW = 4000
PERCENTILES = (0.5, 0.95, 0.99)
# With more sends than this in all the runs, nothing goes to the driver: every window's
# measures are one Spark aggregation (the driver would hold ~25 bytes per send).
DRIVER_SENDS = 20_000_000


def _latency_ms(t_done: Any, t_invoke: Any) -> Any:
    """A send's latency in ms, as Spark's ``(t_done - t_invoke) / 1e6`` gives it."""
    return (t_done - t_invoke) / 1e6


def _measure(placed: Any, n: int, first: dict[int, int]) -> dict[str, Any]:
    """Every measure of the ``n`` windows from the placed rows (an Arrow table in
    ``ASSIGNED_SCHEMA``); ``first``: per run key, the number of its first window among
    the ``n``. Arrays indexed by that number; percentiles exact (None: the window has
    too many ok latencies for them to be, see EXACT_BELOW; nan: it has none)."""
    import numpy as np

    def col(name: str, fill: int = 0) -> Any:
        return placed[name].fill_null(fill).to_numpy()

    keys = np.array(sorted(first), dtype=np.int64)
    bases = np.array([first[k] for k in keys.tolist()], dtype=np.int64)
    rk, w = col("rk"), col("w")
    g = bases[np.searchsorted(keys, rk)] + w if len(rk) else np.zeros(0, dtype=np.int64)
    side, code = col("side"), col("code")
    in_flight = ~placed["code"].is_valid().to_numpy()
    done, invoked = side == DONE, side == INVOKED
    ok = done & (code == OUTCOME_CODES["ok"])

    def count(rows: Any) -> Any:
        return np.bincount(g[rows], minlength=n)

    timed = ok & placed["t_invoke"].is_valid().to_numpy()
    at, latency = g[timed], _latency_ms(col("t_done")[timed], col("t_invoke")[timed])
    order = np.lexsort((latency, at))
    at, latency = at[order], latency[order]
    m = np.bincount(at, minlength=n)
    start = np.cumsum(m) - m
    some = m > 0
    pct = []
    for p in PERCENTILES:
        rank = np.ceil(p * m.astype(np.float64)).astype(np.int64)
        v = np.full(n, np.nan)
        v[some] = latency[(start + rank - 1)[some]]
        pct.append(v)
    top = np.full(n, np.nan)
    top[some] = latency[(start + m - 1)[some]]
    return {
        "done": count(done),
        "ok": count(ok),
        "fail": count(done & (code == OUTCOME_CODES["fail"])),
        "info": count(done & (code == OUTCOME_CODES["info"])),
        "invoked": count(invoked),
        "in_flight": count(invoked & in_flight),
        "lost": count(side == LOST),
        "timed": m,
        "pct": pct,
        "latency_max_ms": top,
    }


def _spark_percentiles(placed: DataFrame, wanted: list[tuple[int, int]]) -> dict[Any, Any]:
    """percentile_approx of the ok latencies of the windows ``wanted`` (run key, window),
    from the placed rows: {(rk, w): [p50, p95, p99]}."""
    from pyspark.sql import functions as F

    pairs = placed.sparkSession.createDataFrame(wanted, "rk int, w int")
    ok = (F.col("side") == DONE) & (F.col("code") == OUTCOME_CODES["ok"])
    latency_ms = _latency_ms(F.col("t_done"), F.col("t_invoke"))
    rows = (
        placed.filter(ok)
        .join(F.broadcast(pairs), ["rk", "w"])
        .groupBy("rk", "w")
        .agg(F.percentile_approx(latency_ms, list(PERCENTILES), 10000).alias("pct"))
        .collect()
    )
    return {(r["rk"], r["w"]): r["pct"] for r in rows}


def _spark_measures(placed: DataFrame, n: int, first: dict[int, int]) -> dict[str, Any]:
    """:func:`_measure`'s arrays from one Spark aggregation of the placed rows by (run,
    window), for sends too many to collect; every percentile by percentile_approx
    (``timed`` is 0 for every window: none needs the driver's exact ones)."""
    import numpy as np
    from pyspark.sql import functions as F

    side, outcome = F.col("side"), F.col("code")
    done, invoked = side == DONE, side == INVOKED
    ok = done & (outcome == OUTCOME_CODES["ok"])
    latency_ms = _latency_ms(F.col("t_done"), F.col("t_invoke"))
    counted = {
        "done": done,
        "ok": ok,
        "fail": done & (outcome == OUTCOME_CODES["fail"]),
        "info": done & (outcome == OUTCOME_CODES["info"]),
        "invoked": invoked,
        "in_flight": invoked & outcome.isNull(),
        "lost": side == LOST,
    }
    got: dict[str, Any] = {k: np.zeros(n, dtype=np.int64) for k in [*counted, "timed"]}
    got["pct"] = [np.full(n, np.nan) for _ in PERCENTILES]
    got["latency_max_ms"] = np.full(n, np.nan)
    measures = placed.groupBy("rk", "w").agg(
        *[F.count(F.when(c, 1)).alias(k) for k, c in counted.items()],
        F.percentile_approx(F.when(ok, latency_ms), list(PERCENTILES), 10000).alias("pct"),
        F.max(F.when(ok, latency_ms)).alias("latency_max_ms"),
    )
    for r in measures.collect():
        i = first[r["rk"]] + r["w"]
        for k in counted:
            got[k][i] = r[k]
        for v, p in zip(got["pct"], r["pct"] or [None] * len(PERCENTILES), strict=True):
            v[i] = np.nan if p is None else p
        if r["latency_max_ms"] is not None:
            got["latency_max_ms"][i] = r["latency_max_ms"]
    return got


def window_stats(
    spark: SparkSession,
    sends: DataFrame,
    anomalies: DataFrame,
    faults: dict[int, list[FaultLine]],
    ends: dict[int, int],
    n_sends: int = 0,
) -> list[dict[str, Any]]:
    """One dict per (run key, window), with every measure of the window.

    The windows are cut on the driver (a few per fault line: cheap). Every send and lost
    write is placed in its windows by :func:`assign_batch`, a binary search over its
    run's window starts (a run's windows are contiguous), and the measures are counted
    per window with numpy: one read of four numbers per send (``toArrow``), no join and
    no aggregation in Spark, save percentile_approx for the rare window with too many
    ok sends to compute its percentiles exactly (EXACT_BELOW). ``n_sends``: the sends of
    all runs; above DRIVER_SENDS the sends stay on the executors, which place them
    (``mapInArrow``), and one Spark aggregation by (run, window) measures every window.
    Until 2026-12-07 each measure was a join of the sends with a
    window table built on the driver (a row per window and time bucket), three Spark jobs
    in all: 12-15 s of the 10M-event bench."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import functions as F

    rows: list[dict[str, Any]] = []
    bounds: dict[int, tuple[Any, int]] = {}
    first: dict[int, int] = {}
    for rk, end in ends.items():
        cut = cut_windows(faults.get(rk, []), end)
        first[rk] = len(rows)
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
    source = sends.select("rk", "t_invoke", "t_done", code.alias("code")).unionByName(
        lost.select(
            "rk",
            F.lit(None).cast("long").alias("t_invoke"),
            F.col("time").alias("t_done"),
            F.lit(LOST_CODE).cast("tinyint").alias("code"),
        )
    )
    on_executors = source.mapInArrow(_assigner(bounds), ASSIGNED_SCHEMA)
    if n_sends > DRIVER_SENDS:
        got = _spark_measures(on_executors, len(rows), first)
    else:
        batches = [p for b in source.toArrow().to_batches() for p in assign_batch(b, bounds)]
        placed = pa.Table.from_batches(batches, schema=pa.schema(ASSIGNED_ARROW))
        got = _measure(placed, len(rows), first)
    big = np.flatnonzero(got["timed"] >= EXACT_BELOW)
    approx = (
        _spark_percentiles(on_executors, [(rows[i]["rk"], rows[i]["w"]) for i in big.tolist()])
        if len(big)
        else {}
    )

    def as_float(v: Any) -> float | None:
        return None if np.isnan(v) else float(v)

    out = []
    for i, row in enumerate(rows):
        # the keys in the order the measures were always added (the JSON's key order)
        if got["done"][i]:
            if got["timed"][i] >= EXACT_BELOW:
                pct = approx.get((row["rk"], row["w"])) or [None, None, None]
            else:
                pct = [as_float(v[i]) for v in got["pct"]]
            row.update(
                ok=int(got["ok"][i]),
                fail=int(got["fail"][i]),
                info=int(got["info"][i]),
                latency_p50_ms=pct[0],
                latency_p95_ms=pct[1],
                latency_p99_ms=pct[2],
                latency_max_ms=as_float(got["latency_max_ms"][i]),
            )
        if got["invoked"][i]:
            row.update(invoked=int(got["invoked"][i]), in_flight=int(got["in_flight"][i]))
        if got["lost"][i]:
            row["lost"] = int(got["lost"][i])
        for key in ("ok", "fail", "info", "invoked", "in_flight", "lost"):
            row.setdefault(key, 0)
        for key in ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_max_ms"):
            row.setdefault(key, None)
        seconds = (row["end_ns"] - row["start_ns"]) / 1e9
        row["duration_s"] = seconds
        row["throughput_ok_per_s"] = row["ok"] / seconds if seconds > 0 else None
        out.append(row)
    return sorted(out, key=lambda r: (r["rk"], r["w"]))
