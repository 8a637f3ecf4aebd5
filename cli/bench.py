"""``kchaos bench ...``: the options and the printing of each benchmark.

The measuring code is in :mod:`kchaos.bench`, one module per benchmark, imported only when
its command runs (``kchaos bench check`` never loads Docker or Spark).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kchaos.harness.errors import ConfigError

if TYPE_CHECKING:
    from kchaos.bench.produce import Case, ProduceArgs


@click.command("produce")
@click.option("--sizes", default="100,1024", show_default=True, help="Record sizes in bytes.")
@click.option(
    "--clients",
    default=None,
    help="Client libraries [default: confluent-kafka,kafka-python; confluent-kafka with "
    "--transactional, or java for Kafka's Java transactional producer].",
)
@click.option("--records", type=int, default=None, help="Records per case (default by size).")
@click.option("--repeat", type=int, default=1, show_default=True, help="Rounds; medians.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write JSON here.")
@click.option(
    "--perf-props",
    default="",
    help="Extra perf-test producer props, comma-separated (e.g. batch.size=1000000).",
)
@click.option(
    "--transactional",
    is_flag=True,
    help="The transactional producer, recording and bare, against the plain idempotent "
    "recording producer (no perf-test).",
)
@click.option(
    "--max-sends",
    type=int,
    default=50,
    show_default=True,
    help="With --transactional: values per transaction, 1 to this many.",
)
def produce_cmd(
    sizes: str,
    clients: str | None,
    records: int | None,
    repeat: int,
    out: Path | None,
    perf_props: str,
    transactional: bool,
    max_sends: int,
) -> int:
    """Recording producer vs kafka-producer-perf-test, with and without recording;
    with --transactional, the transactional producer vs the idempotent one."""
    from kchaos.bench import produce

    args = produce.parse_produce_args(sizes, clients, records, perf_props, transactional, max_sends)
    if repeat < 1:
        raise ConfigError("must be at least 1", field="--repeat")
    if transactional:
        return _produce_transactional(args, repeat, out)
    with produce.bench_cluster(args) as cluster:
        click.echo(f"cluster {cluster.run_id} ready; bootstrap {cluster.bootstrap_servers}")
        cases = produce.run_bench(cluster, list(args.sizes), list(args.libs), args.records,
                                  repeat, _log_case, args.perf_props)  # fmt: skip
    rows = produce.ratios(cases)
    click.echo("")
    click.echo("client          size   perf-test/s  recording/s   bare/s   rec/perf  rec/bare")
    for r in rows:
        click.echo(
            f"{r['client']:15} {r['size']:5}  {r['perf_test_rps']:11}  {r['recording_rps']:11}"
            f"  {r['bare_rps']:7}  {r['recording_vs_perf_test']:8}  {r['recording_vs_bare']:8}"
        )
    click.echo("goals: rec/perf >= 0.8, rec/bare >= 0.9")
    if out is not None:
        out.write_text(json.dumps({"cases": [c.__dict__ for c in cases], "ratios": rows}, indent=2))
    return 0


def _log_case(case: Case) -> None:
    from kchaos.bench.produce import case_line

    click.echo(case_line(case))


def _produce_transactional(args: ProduceArgs, repeat: int, out: Path | None) -> int:
    from kchaos.bench import produce, produce_txn

    with (
        produce.bench_cluster(args) as cluster,
        tempfile.TemporaryDirectory(prefix="kchaos-bench-") as tmp,
    ):
        click.echo(f"cluster {cluster.run_id} ready; bootstrap {cluster.bootstrap_servers}")
        java = None
        if args.libs == ("java",):
            from kchaos.workloads.java_client import JavaRuntime
            from kchaos.workloads.java_txn import target_of

            java = target_of(JavaRuntime.for_cluster(cluster, None))
        run_case = produce_txn.real_cases(
            cluster.bootstrap_servers, args.max_sends, Path(tmp), java=java
        )
        cases = produce_txn.txn_rounds(list(args.sizes), args.records, repeat, run_case, _log_case)
    rows = produce_txn.txn_ratios(cases)
    click.echo("")
    for line in produce_txn.report_lines(rows):
        click.echo(line)
    if out is not None:
        body = {"transactional": True, "max_sends": args.max_sends,
                "cases": [c.__dict__ for c in cases], "ratios": rows}  # fmt: skip
        out.write_text(json.dumps(body, indent=2))
    return 0


@click.command("cluster")
@click.option("--brokers", default=3, show_default=True, type=click.IntRange(1, 9))
@click.option("--rounds", default=1, show_default=True, type=click.IntRange(1, 5))
@click.option("--setup/--no-setup", default=True, help="Also time a repeated compose/setup.sh.")
@click.option(
    "--kafka-defaults/--no-kafka-defaults",
    default=True,
    help="Also start a cluster with Kafka's own JVM flags (G1, C2) as the baseline.",
)
def bench_cluster_cmd(brokers: int, rounds: int, setup: bool, kafka_defaults: bool) -> int:
    """Cluster.start() to full ISR (harness JVM flags vs Kafka's) and a repeated set-up."""
    from kchaos.bench.cluster import (
        CLUSTER_GOAL_S,
        cluster_start,
        jvm_start_seconds,
        setup_seconds,
    )

    tuned: list[float] = []
    plain: list[float] = []
    jvm: list[float] = []
    for i in range(rounds):
        seconds, image = cluster_start(brokers, None)
        tuned.append(seconds)
        if kafka_defaults:
            plain.append(cluster_start(brokers, "")[0])
        jvm.append(jvm_start_seconds(image))
        line = f"round {i + 1}: cluster start {tuned[-1]:.1f}s"
        if plain:
            line += f", with Kafka's JVM flags {plain[-1]:.1f}s"
        click.echo(line + f", one JVM start {jvm[-1]:.1f}s")
    best = min(tuned)
    click.echo(f"Cluster.start() to full ISR ({brokers} brokers): {best:.1f}s (best of {rounds})")
    if plain:
        click.echo(
            f"same with Kafka's default JVM flags (baseline): {min(plain):.1f}s; "
            f"ratio {best / min(plain):.2f}"
        )
    click.echo(f"one JVM start in a Kafka container: {min(jvm):.1f}s; ratio {best / min(jvm):.1f}x")
    click.echo(
        f"goal <= {CLUSTER_GOAL_S:.0f}s: {'met' if best <= CLUSTER_GOAL_S else 'MISSED'} "
        f"({best / CLUSTER_GOAL_S:.2f} of the goal)"
    )
    status = 0 if best <= CLUSTER_GOAL_S else 1
    if setup:
        seconds, code = setup_seconds()
        click.echo(f"repeated set-up (bash compose/setup.sh): {seconds:.1f}s (exit {code})")
        if code != 0:
            status = 1
    return status


@click.command("check")
@click.option("--events", default=1_000_000, show_default=True, help="History size.")
@click.option("--repeat", default=3, show_default=True, help="Runs of each side.")
@click.option("--seed", default=1, show_default=True)
@click.option("--memory-events", default=0, help="Also measure peak RSS at this size.")
@click.option(
    "--transactional",
    is_flag=True,
    help="A transactional history (format 1.2) against a plain one of as many lines.",
)
@click.option(
    "--dir",
    "workdir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to write the generated histories (default: a temp dir).",
)
def bench_check_cmd(
    events: int,
    repeat: int,
    seed: int,
    memory_events: int,
    transactional: bool,
    workdir: Path | None,
) -> int:
    """Checker speed vs json.loads of every line (ratio), and peak memory; with
    --transactional, a transactional history vs a plain one of the same size.

    Exit code 1 when a check's verdict is not the one the generated history calls for.
    """
    from kchaos.bench.check import (
        compare,
        compare_txn,
        peak_memory,
        plain_history,
        txn_history,
        txn_report,
        wrong_verdict,
    )

    wrong: list[str] = []

    def judge(what: str, got: object, expected: bool | str) -> None:
        message = wrong_verdict(what, got, expected)
        if message is not None:
            wrong.append(message)

    with tempfile.TemporaryDirectory(prefix="kchaos-bench-check-") as tmp:
        base = workdir or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        path = base / "bench-history.jsonl"
        make = txn_history if transactional else plain_history
        t0 = time.perf_counter()
        gen = make(path, events, seed)
        click.echo(f"generated {gen.events} events in {time.perf_counter() - t0:.1f} s")
        if transactional:
            plain = plain_history(base / "bench-history-plain.jsonl", gen.events, seed)
            click.echo(f"generated a plain history of {plain.events} events")
            result = compare_txn(gen, plain, repeat)
            for line in txn_report(result):
                click.echo(line)
            judge("the transactional history", result.txn.verdict, gen.expected_valid)
            judge("the plain history", result.plain.verdict, plain.expected_valid)
        else:
            r = compare(path, repeat)
            click.echo(f"history: {r.events} lines, {r.file_mb:.0f} MB; verdict {r.verdict}")
            click.echo(f"json.loads every line: {r.json_seconds:7.2f} s  (cpu {r.json_cpu:.2f} s)")
            click.echo(
                f"kchaos check         : {r.check_seconds:7.2f} s  (cpu {r.check_cpu:.2f} s)"
            )
            met = "met" if r.ratio <= 1.0 else "NOT met"
            click.echo(
                f"ratio check/json: {r.ratio:.2f} (cpu {r.cpu_ratio:.2f}); goal <= 1.0 {met}"
            )
            judge("the history", r.verdict, gen.expected_valid)
        if memory_events:
            big = base / "bench-history-big.jsonl"
            t0 = time.perf_counter()
            big_gen = make(big, memory_events, seed)
            click.echo(f"generated {memory_events} events in {time.perf_counter() - t0:.1f} s")
            seconds, mb, verdict = peak_memory(big)
            click.echo(
                f"check of {memory_events} events: {seconds:.1f} s, peak RSS {mb:.0f} MB, "
                f"verdict {verdict}; goal <= 2048 MB "
                f"{'met' if mb <= 2048 else 'NOT met'}"
            )
            judge(f"the {memory_events}-event history", verdict, big_gen.expected_valid)
            big.unlink()
    for message in wrong:
        click.echo(f"kchaos bench check: {message}", err=True)
    return 1 if wrong else 0


@click.command("analyze")
@click.option("--events", default=10_000_000, show_default=True, help="History size (of each run).")
@click.option(
    "--runs",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Runs analysed together, each of --events events (the many-runs shape: 200 of 50000).",
)
@click.option(
    "--dir",
    "workdir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where the generated history is kept and reused (default runs/bench-analyze).",
)
@click.option("--master", default="local[2]", show_default=True)
@click.option("--threads", default=2, show_default=True, help="DuckDB threads.")
@click.option("--driver-memory", default="6g", show_default=True, help="Spark driver heap.")
@click.option("--json-out", type=click.Path(path_type=Path, dir_okay=False), default=None)
def bench_analyze_cmd(
    events: int,
    runs: int,
    workdir: Path | None,
    master: str,
    threads: int,
    driver_memory: str,
    json_out: Path | None,
) -> int:
    """The Spark job vs DuckDB computing the same kinds, on one generated run or many."""
    from kchaos.bench.analyze import counts_agree, run_bench, summary
    from kchaos.harness.paths import runs_dir

    where = workdir or runs_dir() / "bench-analyze"
    report = run_bench(
        events,
        where,
        master,
        threads,
        driver_memory,
        log=lambda m: click.echo(m, err=True),
        runs=runs,
    )
    click.echo(summary(report))
    if json_out is not None:
        json_out.write_text(json.dumps(report, indent=2))
    return 0 if counts_agree(report) else 1


@click.command("faults")
@click.option("--faults", "count", default=60, show_default=True, help="faults in the schedule")
@click.option("--seed", default=1, show_default=True)
@click.option("--run", "run_id", default=None, help="use this live run's cluster")
def bench_faults_cmd(count: int, seed: int, run_id: str | None) -> int:
    """Nemesis start/stop lateness against its schedule (p50, p99, max)."""
    from kchaos.bench.faults import run_bench
    from kchaos.harness.cluster import Cluster, attach

    if run_id:
        result = run_bench(attach(run_id), count, seed)
    else:
        with Cluster() as cluster:
            result = run_bench(cluster, count, seed)
    click.echo(f"schedule: {result['faults']} faults, seed {seed}")
    for label in ("baseline_ms", "nemesis_ms", "starts_ms", "stops_ms"):
        s = result[label]
        click.echo(
            f"{label[:-3]:>9}: n={s['n']}  p50={s['p50']:.1f} ms  "
            f"p99={s['p99']:.1f} ms  max={s['max']:.1f} ms"
        )
    click.echo(f"p99 ratio nemesis/baseline: {result['ratio_p99']:.2f}  (goal: p99 <= 100 ms)")
    if result["errors"]:
        click.echo(f"{len(result['errors'])} faults failed to start: {result['errors'][:3]}")
        return 1
    return 0
