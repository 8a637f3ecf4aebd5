"""The analysis job: one Spark session, every run directory unioned, every output written.

Runnable three ways, unchanged:

    kchaos analyze RUN_DIR [RUN_DIR ...] [--master URL] [--out DIR]
    python -m kchaos.harness.analysis.job RUN_DIR ...
    spark-submit --master spark://HOST:7077 harness/analysis/job.py RUN_DIR ...
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # run as a file by spark-submit: kchaos is the installed package
    _here = str(Path(__file__).resolve().parent)
    # this directory's modules (session, schema, ...) must not shadow anything top-level
    sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _here]

from kchaos.harness.analysis.anomalies import all_anomalies
from kchaos.harness.analysis.load import load_events, precheck
from kchaos.harness.analysis.outputs import write_run_outputs
from kchaos.harness.analysis.runs import RunInput, resolve_runs, txn_timeout_ms
from kchaos.harness.analysis.session import spark_errors, start_session
from kchaos.harness.analysis.tables import build_tables, unpersist
from kchaos.harness.analysis.trend import write_trend
from kchaos.harness.analysis.txn import TxnTables, build_txn_tables, unpersist_txn
from kchaos.harness.analysis.windows import faults_from_rows, window_stats
from kchaos.harness.errors import KchaosError
from kchaos.harness.rundir.anomalies import DATA_KINDS, NOT_INVALID
from kchaos.harness.rundir.history import F_DRAIN, F_POLL, F_SEND, F_TXN, F_TXN_INIT, OK

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXAMPLES = 5


@dataclass(frozen=True)
class RunSummary:
    """What the job found in one run (``summary`` is summary.json's content)."""

    run: RunInput
    summary: dict[str, Any]
    windows: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class JobResult:
    runs: list[RunSummary]
    trend_dir: Path | None
    seconds: dict[str, float]


def verdict(counts: dict[str, int]) -> bool | str:
    """Invalid over unknown over valid, from the data anomaly counts."""
    if any(n > 0 for kind, n in counts.items() if kind not in NOT_INVALID):
        return False
    if counts.get("unseen", 0) > 0:
        return "unknown"
    return True


def _stats(loaded: Any, tables: Any) -> dict[int, dict[str, Any]]:
    """Per run: events, sends by outcome, polls, records read and drained (no new scan)."""
    stats: dict[int, dict[str, Any]] = {}
    for rk, rows in loaded.counts.items():
        s: dict[str, Any] = {
            "events": 0,
            "end_ns": 0,
            "sends": {"invoke": 0, "ok": 0, "fail": 0, "info": 0},
            "polls": 0,
            "records_polled": 0,
            "records_drained": 0,
            "partitions_drained": 0,
        }
        for f, type_, n, end, records in rows:
            s["events"] += n
            s["end_ns"] = max(s["end_ns"], end)
            if f == F_SEND and type_ in s["sends"]:
                s["sends"][type_] += n
            elif f == F_POLL and type_ == OK:
                s["polls"] += n
                s["records_polled"] += records
            elif f == F_DRAIN and type_ == OK:
                s["records_drained"] += records
        stats[rk] = s
    for row in tables.drained.collect():
        if row["rk"] in stats:
            stats[row["rk"]]["partitions_drained"] += 1
    return stats


def _anomaly_report(anomalies: Any, examples: int) -> dict[int, dict[str, dict[str, Any]]]:
    """Counts and the first examples of every kind in every run, in one Spark job."""
    import orjson
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    group = Window.partitionBy("rk", "kind")
    order = group.orderBy("index", "value", "offset")
    first = (
        anomalies.withColumn("n", F.row_number().over(order))
        .withColumn("total", F.count(F.lit(1)).over(group))
        .filter(F.col("n") <= max(examples, 1))
    )
    report: dict[int, dict[str, dict[str, Any]]] = {}
    for r in first.orderBy("rk", "kind", "n").collect():
        entry = report.setdefault(r["rk"], {}).setdefault(
            r["kind"], {"count": r["total"], "examples": []}
        )
        if r["n"] > examples:
            continue
        entry["examples"].append(
            {
                "value": r["value"],
                "topic": r["topic"],
                "partition": r["partition"],
                "offset": r["offset"],
                "index": r["index"],
                **({"txn": r["txn"]} if r["txn"] is not None else {}),
                **(
                    {"transactional_id": r["transactional_id"]}
                    if r["transactional_id"] is not None
                    else {}
                ),
                **orjson.loads(r["detail"]),
            }
        )
    return report


def _txn_stats(x: TxnTables | None, anomalies: Any) -> dict[int, dict[str, Any]]:
    """Per run with transactions: transactions and their values by outcome, and the
    anomalies that name a transactional id, by that id."""
    from pyspark.sql import functions as F

    out: dict[int, dict[str, Any]] = {}
    if x is None:
        return out

    def entry(rk: int) -> dict[str, Any]:
        return out.setdefault(
            rk,
            {
                "ok": 0,
                "fail": 0,
                "info": 0,
                "in_flight": 0,
                "values": {"ok": 0, "fail": 0, "info": 0, "in_flight": 0},
                "by_transactional_id": {},
            },
        )

    for r in (
        x.txns.groupBy("rk", "outcome")
        .agg(F.count(F.lit(1)).alias("n"), F.sum("n_values").alias("values"))
        .collect()
    ):
        s = entry(r["rk"])
        key = r["outcome"] if r["outcome"] in ("ok", "fail", "info") else "in_flight"
        s[key] += r["n"]
        s["values"][key] += int(r["values"] or 0)
    by_tid = (
        anomalies.filter(F.col("transactional_id").isNotNull())
        .groupBy("rk", "transactional_id", "kind")
        .agg(F.count(F.lit(1)).alias("n"))
        .collect()
    )
    for r in by_tid:
        tid = entry(r["rk"])["by_transactional_id"].setdefault(r["transactional_id"], {})
        tid[r["kind"]] = r["n"]
    return out


def _laps(seconds: dict[str, float], start: float) -> Any:
    """A function recording the seconds since its previous call under a phase name."""
    last = [start]

    def lap(name: str) -> None:
        now = time.perf_counter()
        seconds[name] = round(now - last[0], 3)
        last[0] = now

    return lap


def run_job(
    run_args: list[Path],
    *,
    master: str | None = None,
    out: Path | None = None,
    prefer: str = "auto",
    examples: int = EXAMPLES,
    spark: SparkSession | None = None,
    trend: bool | None = None,
    write: bool = True,
    driver_memory: str = "2g",
) -> JobResult:
    """Analyse every run in ``run_args`` in one session; write every output.

    ``spark`` reuses a session (it is not stopped); ``trend`` forces the cross-run table
    on or off (default: on for several runs or with ``out``); ``write=False`` only
    returns the results.
    """
    from pyspark import StorageLevel

    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    runs = resolve_runs(run_args, prefer)
    precheck(runs)  # cheap input errors before paying for a JVM
    own = spark is None
    session = spark if spark is not None else start_session(master, driver_memory=driver_memory)
    seconds["startup"] = time.perf_counter() - t0
    loaded = None
    cached: list[Any] = []  # frames this job put in Spark's cache, released however it ends
    try:
        t1 = time.perf_counter()
        files = {r.key: str(r.history) for r in runs}
        loaded = load_events(session, runs)
        lap = _laps(seconds, t1)
        lap("load")
        with spark_errors("the analysis"):
            has_txn = any(
                f in (F_TXN, F_TXN_INIT) for rows in loaded.counts.values() for f, *_ in rows
            )
            tables = build_tables(loaded.events, files, loaded.send_topics, keep_reads=has_txn)
            cached.append(lambda: unpersist(tables))
            txn = build_txn_tables(loaded.events, tables, files) if has_txn else None
            if txn is not None:
                cached.append(lambda: unpersist_txn(txn))
            lap("tables")
            stats = _stats(loaded, tables)
            lap("stats")
            timeouts = session.createDataFrame(
                [(r.key, txn_timeout_ms(r.path) * 1_000_000) for r in runs],
                "rk int, timeout_ns long",
            )
            anomalies, first_stage = all_anomalies(tables, txn, timeouts)
            cached.append(first_stage.unpersist)
            anomalies = anomalies.persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(anomalies.unpersist)
            report = _anomaly_report(anomalies, examples)
            txn_stats = _txn_stats(txn, anomalies)
            lap("anomalies")
            faults = faults_from_rows(loaded.faults)  # found by the validation pass
            ends = {r.key: stats.get(r.key, {}).get("end_ns", 0) for r in runs}
            n_sends = sum(s.get("sends", {}).get("invoke", 0) for s in stats.values())
            windows = window_stats(session, tables.sends, anomalies, faults, ends, n_sends)
            lap("windows")
            results: list[RunSummary] = []
            for run in runs:
                found = report.get(run.key, {})
                counts = {kind: found[kind]["count"] for kind in DATA_KINDS if kind in found}
                s = stats.get(run.key, {})
                mine = [w for w in windows if w["rk"] == run.key]
                s.setdefault("sends", {})["in_flight"] = sum(w["in_flight"] for w in mine)
                s.update(
                    faults=len([f for f in faults.get(run.key, []) if f.phase == "start"]),
                    torn_last_line=loaded.torn.get(run.key),
                    history=str(run.history),
                    input=run.fmt,
                    engine="spark",
                    kinds_checked=list(DATA_KINDS),
                )
                if run.key in txn_stats:
                    s["transactions"] = txn_stats[run.key]
                summary = {
                    "valid": verdict(counts),
                    "anomalies": {k: found[k] for k in DATA_KINDS if k in found},
                    "stats": s,
                }
                results.append(RunSummary(run, summary, mine))
            trend_dir = None
            if write:
                write_run_outputs(session, results)
                lap("write")
            if write and (trend if trend is not None else (out is not None or len(runs) > 1)):
                trend_dir = write_trend(session, results, out)
                lap("trend")
        seconds["total"] = time.perf_counter() - t0
        return JobResult(results, trend_dir, seconds)
    finally:
        if not own:  # a session that goes on keeps its cache: empty what this job filled
            for release in reversed(cached):
                release()
        if loaded is not None:
            loaded.release()
        if own:
            session.stop()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kchaos-analyze", description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path, help="run directories or directories of runs")
    p.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    p.add_argument("--out", type=Path, default=None, help="where the cross-run table goes")
    p.add_argument("--input", choices=["auto", "jsonl", "parquet"], default="auto")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``python -m`` and ``spark-submit``; exit codes as ``kchaos analyze``."""
    args = _parser().parse_args(argv)
    try:
        result = run_job(args.runs, master=args.master, out=args.out, prefer=args.input)
    except KchaosError as exc:
        print(f"kchaos: {exc}", file=sys.stderr)
        return exc.exit_code
    for rs in result.runs:
        print(f"{rs.run.path}: valid={str(rs.summary['valid']).lower()}")
    return exit_code([rs.summary["valid"] for rs in result.runs])


def exit_code(verdicts: list[bool | str]) -> int:
    """0 all valid, 1 any invalid, 2 any unknown (and none invalid), as `kchaos check`."""
    if any(v is False for v in verdicts):
        return 1
    return 2 if any(v == "unknown" for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
