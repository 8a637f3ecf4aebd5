"""``kchaos bench analyze``, the measuring: the Spark job against DuckDB computing the
same kinds, on one generated run directory or on many.

Two shapes: one run of ``events`` events (``runs=1``), or ``runs`` runs of ``events``
events each (the many-runs shape, e.g. 200 runs of 50,000 events). Each run (a
history.jsonl from harness.histgen, one lost write injected, its own seed) is generated
once and reused; it gets its run-end Parquet copy as a real run does
(:meth:`RunDir.write_history_parquet`), so the job's ``--input auto`` reads
``history.parquet``. Side by side, over all the runs at once (one job, one DuckDB
query set):
- the Parquet copy itself (what the runner pays at the end of a run), reported on its own;
- Spark start-up (session creation), reported on its own;
- the full ``kchaos analyze`` job in the started session (every kind, windows, outputs);
- DuckDB computing every data kind of format v1 by the job's counting rules
  (:mod:`kchaos.bench.duck_kinds`), as many threads as Spark has cores, on the same
  Parquet copy before and after Spark (the mean is used: the machine may be shared), and
  on the JSON lines once, reported beside it.
The ratio analyze / DuckDB all kinds (Parquet) is printed; the goal is <= 3 in both
shapes. Every kind's count, summed over the runs, must be the same on every side, and
lost-write the injected count (one per run).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kchaos.bench.duck_kinds import KINDS, duckdb_kinds
from kchaos.harness.errors import AnalysisError
from kchaos.harness.rundir.parquet import part_files
from kchaos.harness.rundir.rundir import RunDir


def _timed(fn: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _silent(_: str) -> None:
    pass


def job_counts(summary: dict[str, Any]) -> dict[str, int]:
    """Every format-v1 data kind's count in a summary.json (0 where the job found none)."""
    found = summary.get("anomalies", {})
    return {kind: int(found.get(kind, {}).get("count", 0)) for kind in KINDS}


def _parquet_copy(rd: RunDir, threads: int) -> float:
    """The run's history.parquet, written as the runner writes it at the end of a run;
    the seconds it took (0 when a copy at least as new as the history is there)."""
    from kchaos.harness.analysis.runs import resolve_runs

    if resolve_runs([rd.path])[0].fmt == "parquet":  # the job's own freshness rule
        return 0.0
    made, secs = _timed(lambda: rd.write_history_parquet(threads))
    if not made:
        raise AnalysisError(f"DuckDB could not write {rd.history_parquet} from {rd.history}")
    return secs


def _generated(rd: RunDir, events: int, seed: int, log: Callable[[str], None]) -> dict[str, Any]:
    """The generator's record of the run ``rd`` (events, expected counts): generated now,
    with one lost write, unless it is already there."""
    from kchaos.harness.histgen import generate_run

    meta = rd.generated_json
    if not (rd.history.is_file() and meta.is_file()):
        log(f"generating {events:,} events into {rd} ...")
        gen, secs = _timed(
            lambda: generate_run(rd, events=events, seed=seed, inject=("lost-write",))
        )
        meta.write_text(json.dumps({"events": gen.events, "expected": gen.expected}))
        log(f"  generated in {secs:.1f}s")
    info: dict[str, Any] = json.loads(meta.read_text())
    return info


def bench_runs(workdir: Path, events: int, runs: int) -> list[Path]:
    """Where the bench keeps its runs: ``hist-EVENTS`` for one, ``runs-RUNSxEVENTS/run-NNNN``
    for many."""
    if runs == 1:
        return [workdir / f"hist-{events}"]
    base = workdir / f"runs-{runs}x{events}"
    return [base / f"run-{i:04d}" for i in range(runs)]


def run_bench(
    events: int,
    workdir: Path,
    master: str,
    threads: int,
    driver_memory: str = "6g",
    log: Callable[[str], None] = _silent,
    runs: int = 1,
) -> dict[str, Any]:
    """Every timing side by side (see the module text); ``events`` per run; ``log`` hears
    of the generation of a history that is not there yet."""
    from kchaos.harness.analysis.job import run_job
    from kchaos.harness.analysis.runs import resolve_runs
    from kchaos.harness.analysis.session import spark_errors, start_session

    dirs = bench_runs(workdir, events, runs)
    rds = [RunDir(run) for run in dirs]
    infos = [_generated(rd, events, 7 + i, log) for i, rd in enumerate(rds)]
    copy_s = sum(_parquet_copy(rd, threads) for rd in rds)
    for run, found in zip(dirs, resolve_runs(dirs), strict=True):
        if found.fmt != "parquet":
            raise AnalysisError(f"the job would read {found.fmt}, not the Parquet copy, in {run}")
    parquet = [rd.history_parquet for rd in rds]
    history = [rd.history for rd in rds]
    # DuckDB on Parquet before and after Spark: the machine is shared, take the mean.
    duck_before, before_s = _timed(lambda: duckdb_kinds(parquet, threads))
    spark, startup = _timed(
        lambda: start_session(master, app_name="kchaos-bench", driver_memory=driver_memory)
    )
    try:
        with spark_errors("the benchmark"):
            result, analyze = _timed(lambda: run_job(dirs, spark=spark, trend=False))
    finally:
        spark.stop()
    duck_after, after_s = _timed(lambda: duckdb_kinds(parquet, threads))
    duck_json, json_s = _timed(lambda: duckdb_kinds(history, threads))
    duck = (before_s + after_s) / 2
    analyzed = {kind: 0 for kind in KINDS}
    for rs in result.runs:
        for kind, n in job_counts(rs.summary).items():
            analyzed[kind] += n
    return {
        "runs": len(dirs),
        "events_per_run": events,
        "events": sum(int(info["events"]) for info in infos),
        "history_mb": round(sum(h.stat().st_size for h in history) / 1e6, 1),
        "parquet_mb": round(
            sum(p.stat().st_size for copy in parquet for p in part_files(copy)) / 1e6, 1
        ),
        "master": master,
        "driver_memory": driver_memory,
        "duckdb_threads": threads,
        "spark_input": ",".join(sorted({rs.run.fmt for rs in result.runs})),
        "parquet_copy_s": round(copy_s, 2),
        "spark_startup_s": round(startup, 2),
        "spark_analyze_s": round(analyze, 2),
        "spark_analyze_phases_s": result.seconds,
        "duckdb_kinds_parquet_s": round(duck, 2),
        "duckdb_before_after_s": [round(before_s, 2), round(after_s, 2)],
        "duckdb_kinds_json_s": round(json_s, 2),
        "ratio_analyze_to_duckdb": round(analyze / duck, 2),
        "ratio_analyze_to_duckdb_json": round(analyze / json_s, 2),
        "kinds": {
            "analyze": analyzed,
            "duckdb_parquet": duck_before,
            "duckdb_parquet_after": duck_after,
            "duckdb_json": duck_json,
        },
        "expected_lost_write": sum(int(i["expected"].get("lost-write", 0)) for i in infos),
    }


def disagreements(report: dict[str, Any]) -> list[str]:
    """Each kind whose count differs between the sides, and a lost-write count that is
    not the injected one."""
    sides: dict[str, dict[str, int]] = report["kinds"]
    wrong = []
    for kind in KINDS:
        seen = {name: counts.get(kind) for name, counts in sides.items()}
        if len(set(seen.values())) != 1:
            wrong.append(f"{kind}: {seen}")
    lost = sides["analyze"].get("lost-write")
    if lost != report["expected_lost_write"]:
        wrong.append(f"lost-write: {lost} found, {report['expected_lost_write']} injected")
    return wrong


def counts_agree(report: dict[str, Any]) -> bool:
    """Every kind counted alike by the Spark job and DuckDB (Parquet before and after,
    JSON), and as many lost writes as the generator injected."""
    return not disagreements(report)


def summary(report: dict[str, Any]) -> str:
    """What ``kchaos bench analyze`` prints."""
    master, threads = report["master"], report["duckdb_threads"]
    counts = report["kinds"]["analyze"]
    rows = [
        ("parquet copy (run end, DuckDB)", f"{report['parquet_copy_s']:8.2f} s"),
        (f"spark start-up ({master})", f"{report['spark_startup_s']:8.2f} s"),
        (
            f"kchaos analyze (whole job, {report['spark_input']})",
            f"{report['spark_analyze_s']:8.2f} s",
        ),
        (
            f"duckdb all kinds, Parquet ({threads} threads)",
            f"{report['duckdb_kinds_parquet_s']:8.2f} s"
            f"  (before/after spark: {report['duckdb_before_after_s']})",
        ),
        ("duckdb all kinds, JSON lines", f"{report['duckdb_kinds_json_s']:8.2f} s"),
        (
            "ratio analyze / duckdb all kinds",
            f"{report['ratio_analyze_to_duckdb']:8.2f}  (goal <= 3)",
        ),
        ("  against duckdb on JSON lines", f"{report['ratio_analyze_to_duckdb_json']:8.2f}"),
    ]
    runs = report.get("runs", 1)
    shape = f"{runs} runs of {report['events_per_run']:,} events, " if runs > 1 else ""
    lines = [
        f"history: {shape}{report['events']:,} events, {report['history_mb']} MB JSON lines,"
        f" {report['parquet_mb']} MB Parquet",
        *(f"{label + ':':<40}{value}" for label, value in rows),
        "counts: " + ", ".join(f"{k} {counts[k]}" for k in KINDS),
        f"counts agree (every kind, every side; lost-write {report['expected_lost_write']}"
        f" injected): {counts_agree(report)}",
    ]
    lines += [f"  differs: {w}" for w in disagreements(report)]
    return "\n".join(lines)
