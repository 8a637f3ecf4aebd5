"""The ``kchaos analyze`` and ``kchaos export`` commands."""

from __future__ import annotations

from pathlib import Path

import click

from kchaos.harness.rundir.names import HISTORY_JSONL, HISTORY_PARQUET

MASTER_HELP = "Spark master URL: local[*] (default), local[2], spark://HOST:7077, ..."


@click.command("analyze")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--master", default=None, help=MASTER_HELP)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Directory for the cross-run table and plot (default: _analysis beside the runs).",
)
@click.option(
    "--input",
    "prefer",
    type=click.Choice(["auto", "jsonl", "parquet"]),
    default="auto",
    show_default=True,
    help=f"Which history to read: auto takes {HISTORY_PARQUET} when newer than {HISTORY_JSONL}.",
)
@click.option("--examples", default=5, show_default=True, help="Examples kept per anomaly kind.")
@click.option(
    "--driver-memory",
    default="2g",
    show_default=True,
    help="Heap of the embedded Spark driver (ignored under spark-submit).",
)
def analyze_cmd(
    run_dirs: tuple[Path, ...],
    master: str | None,
    out: Path | None,
    prefer: str,
    examples: int,
    driver_memory: str,
) -> int:
    """Spark loss analysis of one or many run directories (or directories of runs).

    Writes RUN_DIR/analysis/summary.json (data anomalies, same names and counts as
    `kchaos check`), windows.json and windows.parquet (per fault window); with several
    runs or --out, also the cross-run table (Parquet, CSV) and trend.html.
    Exit code: 0 all valid, 1 any invalid, 2 any unknown, 3 bad input, 4 Spark failure.
    """
    from kchaos.harness.analysis.job import exit_code, run_job

    result = run_job(
        list(run_dirs),
        master=master,
        out=out,
        prefer=prefer,
        examples=examples,
        driver_memory=driver_memory,
    )
    for rs in result.runs:
        valid = rs.summary["valid"]
        counts = ", ".join(f"{k} {v['count']}" for k, v in rs.summary["anomalies"].items())
        click.echo(
            f"{rs.run.path}: valid={str(valid).lower()}" + (f" ({counts})" if counts else "")
        )
        if rs.summary["stats"].get("torn_last_line"):
            click.echo(f"  torn last line {rs.summary['stats']['torn_last_line']} ignored")
    if result.trend_dir is not None:
        click.echo(f"cross-run table: {result.trend_dir}")
    seconds = result.seconds
    click.echo(
        f"spark start-up {seconds['startup']:.1f}s, total {seconds['total']:.1f}s",
        err=True,
    )
    return exit_code([rs.summary["valid"] for rs in result.runs])


@click.command("export")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--master", default=None, help=MASTER_HELP)
def export_cmd(run_dirs: tuple[Path, ...], master: str | None) -> int:
    """Write RUN_DIR/history.parquet, a Parquet copy of the history partitioned by f.

    A run that ended normally has one already (one file, written by the runner); this is
    for older runs, and for a history the runner's strict conversion refused."""
    from kchaos.harness.analysis.export import export_parquet

    for path in export_parquet(list(run_dirs), master=master):
        click.echo(str(path))
    return 0
