"""``kchaos matrix``, ``replay``, ``shrink`` and ``soak``: the commands that start runs
from something other than one scenario file (several scenarios and versions, a stored run,
a search, random schedules). The work is in :mod:`kchaos.harness.run`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kchaos.cli.options import (
    kafka_version_option,
    out_option,
    overrides_option,
    prometheus_option,
    quiet_option,
    shard_options,
)
from kchaos.harness.run.matrix import run_matrix
from kchaos.harness.run.replay import replay_run
from kchaos.harness.run.shard import ShardSpec, default_durations
from kchaos.harness.run.shrink import shrink_run
from kchaos.harness.run.soak import (
    DEFAULT_DURATION_S,
    DEFAULT_KAFKA_VERSION,
    DEFAULT_RUNS,
    DEFAULT_SEED_BASE,
    run_soak,
)
from kchaos.harness.rundir.names import DURATIONS_JSON


@click.command("matrix")
@click.argument("scenarios", nargs=-1, metavar="[SCENARIO...]")
@click.option(
    "--tag",
    metavar="TAG",
    help="Add every library scenario with this tag (known-bug: the Kafka tickets).",
)
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Add every library scenario. As with --tag, a release a scenario's ticket does "
    "not cover is skipped and listed, not an error.",
)
@click.option(
    "--kafka-version",
    "versions",
    metavar="V1,V2,...",
    help="Kafka releases to run every scenario on, comma-separated, e.g. 3.4.1,3.5.2 "
    "(default: each ticket scenario's own compare releases).",
)
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Runs per scenario and version; run i uses the scenario's seed + i.",
)
@overrides_option(every_scenario=True)
@out_option("runs/matrix-NAMES-TIME")
@prometheus_option()
@shard_options()
@click.option(
    "--parallel",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="P",
    help="Run up to P cells at once on this host, each its own cluster in a process of its "
    "own (results in plan order, as a sequential run's). See docs/ci.md for choosing P.",
)
def matrix_cmd(
    scenarios: tuple[str, ...],
    tag: str | None,
    every: bool,
    versions: str | None,
    seeds: int,
    overrides: tuple[str, ...],
    out: Path | None,
    prometheus: bool,
    shard: ShardSpec | None,
    durations: Path | None,
    dry_run: bool,
    parallel: int,
) -> int:
    """Run SCENARIO... on every Kafka version, SEEDS times each, and write one page.

    SCENARIO is a library scenario name or a YAML file. Every combination runs on a fresh
    cluster, one after another (--parallel P: up to P at once, each with its own
    cluster). Writes OUT/report.html (per scenario a grid of versions by seeds, each cell
    linking to its run's report), OUT/junit.xml and OUT/summary.json.
    Bad input (a scenario, a malformed or unknown version) is reported before any run.
    Exit code: 0 when every run ended as its scenario expects, otherwise the worst exit
    code of `kchaos run`.
    """
    from kchaos.harness.scenario import library

    refs = list(scenarios)
    tagged: list[str] = []
    if tag is not None:
        tagged = [n for n in library.names_with_tag(tag) if n not in refs]
        refs += tagged
    if every:
        added = [n for n in library.library_names() if n not in refs]
        tagged += added
        refs += added
    return run_matrix(
        refs,
        versions,
        seeds=seeds,
        out=out,
        overrides=overrides,
        command=sys.argv,
        prometheus=prometheus,
        tagged=tagged,
        shard=shard,
        durations=durations or default_durations(),
        dry_run=dry_run,
        parallel=parallel,
    )


@click.command("replay")
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(path_type=Path))
@kafka_version_option(otherwise="the stored run's")
@out_option("runs/RUN_ID")
@quiet_option()
@prometheus_option()
def replay_cmd(
    run_dir: Path, kafka_version: str | None, out: Path | None, quiet: bool, prometheus: bool
) -> int:
    """Run RUN_DIR again from its run.json alone, into a new run directory.

    Same Kafka version, images, broker/topic/client configs, seed and concrete fault
    schedule (times, targets, params) as the stored run; its run.json names the original
    (`replay_of`). --kafka-version tries the same run on another release, judged by
    what the scenario's `expect` says for that release (its `before` entries). Exit code
    as `kchaos run`; 3 when RUN_DIR has no usable run.json.
    """
    return replay_run(
        run_dir,
        kafka_version=kafka_version,
        out=out,
        quiet=quiet,
        prometheus=prometheus,
        command=sys.argv,
    )


@click.command("shrink")
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(path_type=Path))
@click.option(
    "--budget",
    type=click.IntRange(min=1),
    default=12,
    show_default=True,
    help="At most this many runs (each a fresh cluster).",
)
@click.option(
    "--repeat",
    "repeats",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Clean runs before a candidate counts as not reproducing (flaky reproductions).",
)
@out_option("runs/shrink-RUN_ID-TIME")
@prometheus_option()
def shrink_cmd(run_dir: Path, budget: int, repeats: int, out: Path | None, prometheus: bool) -> int:
    """Find a smaller fault schedule that still produces RUN_DIR's anomaly.

    RUN_DIR must be a run whose verdict was invalid. Delta debugging over its concrete
    schedule (fewer steps, then shorter durations, then fewer targets), each candidate a
    full run, at most --budget runs; a candidate counts as not reproducing only after
    --repeat clean runs. Writes OUT/shrunk.yaml (a scenario) and OUT/report.html (every
    attempt and its verdict). Exit code 0; 3 for bad input (no run.json, a valid run).
    """
    shrink_run(
        run_dir, budget=budget, repeats=repeats, out=out, command=sys.argv, prometheus=prometheus
    )
    return 0


@click.command("soak")
@click.option(
    "--runs",
    type=click.IntRange(min=1),
    default=DEFAULT_RUNS,
    show_default=True,
    help="Number of runs (seeds SEED_BASE .. SEED_BASE+RUNS-1).",
)
@click.option(
    "--seed-base",
    type=int,
    default=DEFAULT_SEED_BASE,
    show_default=True,
    help="Seed of the first run; the same base gives the same schedules.",
)
@kafka_version_option(DEFAULT_KAFKA_VERSION)
@click.option(
    "--duration",
    type=click.FloatRange(min=20),
    default=DEFAULT_DURATION_S,
    show_default=True,
    help="Seconds of workload per run.",
)
@out_option("runs/soak-VERSION-seeds-A-B-TIME")
@prometheus_option()
@shard_options()
def soak_cmd(
    runs: int,
    seed_base: int,
    kafka_version: str,
    duration: float,
    out: Path | None,
    prometheus: bool,
    shard: ShardSpec | None,
    durations: Path | None,
    dry_run: bool,
) -> int:
    """Run RUNS seeded random fault schedules against a safely configured cluster.

    Every run: 3 nodes, RF 3, min.insync.replicas=2, unclean leader election off, acks=all
    idempotent producers, a random schedule over every fault family (network, partition,
    pause, disk, crash). Kafka promises to keep every acknowledged write, so each invalid
    run is a false alarm or a bug. Writes OUT/seed-S/ (one run directory each),
    OUT/scenarios/soak-S.yaml, OUT/report.html, OUT/junit.xml and OUT/soak.json.
    Exit code: 0 when every run was valid, else the worst exit code of `kchaos run`.
    """
    return run_soak(
        runs=runs,
        seed_base=seed_base,
        kafka_version=kafka_version,
        duration=duration,
        out=out,
        command=sys.argv,
        prometheus=prometheus,
        shard=shard,
        durations=durations or default_durations(),
        dry_run=dry_run,
    )


@click.command("merge")
@click.argument("out", metavar="OUT", type=click.Path(file_okay=False, path_type=Path))
@click.argument(
    "shard_dirs", nargs=-1, required=True, metavar="SHARD_DIR...", type=click.Path(path_type=Path)
)
@click.option(
    "--durations",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"Fold the shards' measured run times into this file (default: runs/{DURATIONS_JSON}).",
)
def merge_cmd(out: Path, shard_dirs: tuple[Path, ...], durations: Path | None) -> int:
    """Join the output directories of `--shard K/N` runs of one plan into OUT.

    OUT gets the report.html, junit.xml and summary.json an unsharded run of the plan
    (matrix, suite or soak) would have written, linking into the shard directories. A shard
    that is missing or did not run to the end is named on the page, its runs are error
    rows, and the exit code is at least 4. Otherwise: 0 when every run ended as expected,
    else the worst exit code of `kchaos run`; 3 when the directories hold shards of
    different plans.
    """
    from kchaos.harness.run.merge import merge

    return merge(out, list(shard_dirs), durations=durations or default_durations())
