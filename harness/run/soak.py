"""``kchaos soak``: how often does a healthy, safely configured cluster get a red verdict?

    kchaos soak                      # 20 runs, seeds 1..20, Kafka 4.4.0
    kchaos soak --runs 2 --seed-base 100

Run i (i = 0 .. N-1) is the scenario :func:`soak_data` builds for seed ``seed_base + i``:
three combined broker/controller nodes with only safe settings (RF 3,
``min.insync.replicas=2``, unclean leader election off, acks=all idempotent producers)
and a seeded random schedule (:mod:`kchaos.faults.schedule`, the scenario format's
``nemesis.random``) over every fault family: network, partition, pause, disk and crash.
The same seed base gives the same scenarios and so the same fault schedules: a soak is
reproducible, and each scenario is also written to ``OUT/scenarios/soak-SEED.yaml`` for
``kchaos run``. Faults that Kafka does not promise to survive under these settings are
left out (``power-loss`` of every node: unflushed acknowledged writes are lost by design;
``disk-full``: Kafka takes the log directory offline and the broker stays down).

Every run is a normal run directory, ``OUT/seed-S/``, run one after another on fresh
clusters (the suite's machinery, :func:`kchaos.harness.run.suite.run_entries`). Then
``OUT/report.html`` (how many runs came back invalid, which anomaly kinds, a link to each
invalid run; the grid of seeds; the suite table), ``OUT/junit.xml``, ``OUT/summary.json``
and ``OUT/soak.json`` (:func:`soak_summary`). Exit code: 0 when every run was valid; else
the worst exit code of `kchaos run` (1 invalid, 2 unknown, 4 the harness failed).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from kchaos.harness.errors import ConfigError
from kchaos.harness.run import shard as shards
from kchaos.harness.run.shard import ShardSpec
from kchaos.harness.rundir.anomalies import INVALIDATING
from kchaos.harness.rundir.files import write_json
from kchaos.harness.rundir.rundir import RunDir

DEFAULT_RUNS = 20
DEFAULT_SEED_BASE = 1
DEFAULT_KAFKA_VERSION = "4.4.0"
DEFAULT_DURATION_S = 40.0  # with ~55 s of overhead per run, 20 runs take about 30 min
TOPIC = "soak"

# The faults a soak draws from, by family: each one a fault Kafka must survive with the
# settings below (one node at a time; the random schedule runs one fault at a time).
FAULTS: dict[str, tuple[str, ...]] = {
    "network": ("latency", "bandwidth", "timeout", "reset-peer", "slow-close"),
    "partition": ("isolate", "cut", "bridge", "client-cut", "hold-controller-requests"),
    "pause": ("pause",),
    "disk": ("disk-stall", "slow-disk"),
    "crash": ("kill", "term", "hard-reboot"),
}
FAMILY = {fault: family for family, faults in FAULTS.items() for fault in faults}
TARGETS = ("random", "controller", f"leader:{TOPIC}:0")
# Params: the scenario format's random schedule takes one value per fault, so each run
# draws its values here, from its own seed (the same seed, the same values).
PARAMS: dict[str, dict[str, Sequence[Any]]] = {
    "latency": {"latency_ms": (100, 300, 1000), "jitter_ms": (0, 50)},
    "pause": {"mode": ("sigstop", "freezer")},
    "client-cut": {"mode": ("drop", "refuse")},
    "bandwidth": {"rate_kbps": (16, 64, 256)},
}


def draw_params(seed: int) -> dict[str, dict[str, Any]]:
    """The params of run ``seed``: one value of each choice in :data:`PARAMS`."""
    rng = random.Random(f"kchaos-soak/{seed}")
    return {
        fault: {name: values[rng.randrange(len(values))] for name, values in params.items()}
        for fault, params in PARAMS.items()
    }


# The settings every soak run has; unit-tested to stay safe.
SAFE_SERVER = {
    "min.insync.replicas": 2,
    "default.replication.factor": 3,
    "unclean.leader.election.enable": False,
    "offsets.topic.replication.factor": 3,
    "transaction.state.log.replication.factor": 3,
    "replica.lag.time.max.ms": 5000,
    "group.initial.rebalance.delay.ms": 0,
}
SAFE_TOPIC = {"min.insync.replicas": 2, "unclean.leader.election.enable": False}
# The delivery timeout outlasts any stall the schedule can cause (faults of at most 10 s,
# a killed broker back within about 20 s): librdkafka 2.16 writes values twice when part
# of an in-flight request expires (docs/findings.md), so with 10 s the soak's reds were
# the client's; with 60 s no send expires in flight and a red means the broker or kchaos.
SAFE_PRODUCER = {
    "enable.idempotence": True,
    "delivery.timeout.ms": 60000,
    "request.timeout.ms": 5000,
}


def soak_data(seed: int, *, duration: float = DEFAULT_DURATION_S, kafka_version: str) -> dict:
    """The scenario-file data of soak run ``seed``."""
    return {
        "name": "soak",
        "description": (
            "kchaos soak: a seeded random schedule over every fault family against a "
            "safely configured cluster (RF 3, min.insync.replicas=2, unclean leader "
            "election off, acks=all idempotent producers). Kafka promises to keep every "
            "acknowledged write here, so any anomaly is a false alarm of kchaos or a bug."
        ),
        "tags": ["soak"],
        "seed": seed,
        "cluster": {
            "brokers": 3,
            "kafka_version": kafka_version,
            "server_properties": dict(SAFE_SERVER),
        },
        "topics": [
            {"name": TOPIC, "partitions": 3, "replication_factor": 3, "configs": dict(SAFE_TOPIC)}
        ],
        "workload": {
            "duration": duration,
            "producers": {"count": 2, "rate": 100, "acks": "all", "configs": dict(SAFE_PRODUCER)},
            "consumers": {"count": 1, "mode": "subscribe"},
            "drain_timeout": 60,
        },
        "nemesis": {
            "random": {
                "faults": [f for faults in FAULTS.values() for f in faults],
                "targets": list(TARGETS),
                "start": 5,
                "quiet": 4,
                "min_duration": 4,
                "max_duration": 10,
                "params": draw_params(seed),
            }
        },
        "expect": {"valid": True, "allowed": ["offline"]},
    }


def plan(
    runs: int,
    seed_base: int,
    *,
    kafka_version: str = DEFAULT_KAFKA_VERSION,
    duration: float = DEFAULT_DURATION_S,
    scenario_dir: Path | None = None,
) -> list[Any]:
    """One SuiteEntry per run (label ``seed-S``), each scenario loaded (and so checked as
    ``kchaos validate`` would) before any run; written to ``scenario_dir`` when given."""
    from kchaos.harness.run.suite import SuiteEntry
    from kchaos.harness.scenario.dump import to_yaml
    from kchaos.harness.scenario.loader import load_scenario

    if runs < 1:
        raise ConfigError(f"must be at least 1, got {runs}", field="runs")
    entries, texts = [], {}
    for seed in range(seed_base, seed_base + runs):
        text = to_yaml(soak_data(seed, duration=duration, kafka_version=kafka_version))
        path = (scenario_dir or Path()) / f"soak-{seed}.yaml"
        entries.append(SuiteEntry(f"seed-{seed}", load_scenario(path, text=text)))
        texts[path] = text
    if scenario_dir is not None:
        scenario_dir.mkdir(parents=True, exist_ok=True)
        for path, text in texts.items():
            path.write_text(text, encoding="utf-8")
    return entries


def drawn_faults(sc: Any) -> list[str]:
    """The faults the scenario's seeded random schedule draws (the run draws the same)."""
    from kchaos.harness.scenario.plan import plan_of

    schedule = plan_of(sc).schedule  # the very schedule the runner hands the nemesis
    return [] if schedule is None else [f.spec.fault for f in schedule.faults]


def soak_summary(
    reports: Sequence[Any],
    failures: Sequence[Any],
    out_dir: Path,
    *,
    kafka_version: str,
    seed_base: int,
    planned: Mapping[int, Sequence[str]],
) -> dict[str, Any]:
    """soak.json: counts by verdict, the invalidating kinds with the runs that showed
    them, each invalid run with its report, the faults drawn per family."""
    verdicts = {"valid": 0, "invalid": 0, "unknown": 0, "error": len(failures)}
    kinds: dict[str, int] = {}
    invalid_runs = []
    for r in sorted(reports, key=lambda r: r.summary.get("seed") or 0):
        s = r.summary
        verdict = str(s.get("verdict"))
        verdicts[verdict if verdict in verdicts else "unknown"] += 1
        if verdict != "invalid":
            continue
        found = {k: n for k, n in (s.get("anomalies") or {}).items() if k in INVALIDATING and n}
        for k in found:
            kinds[k] = kinds.get(k, 0) + 1
        invalid_runs.append(
            {
                "seed": s.get("seed"),
                "run_id": s.get("run_id"),
                "anomalies": found,
                "report": os.path.relpath(r.paths["html"], out_dir),
            }
        )
    families: dict[str, int] = {family: 0 for family in FAULTS}
    for faults in planned.values():
        for fault in faults:
            families[FAMILY.get(fault, "other")] = families.get(FAMILY.get(fault, "other"), 0) + 1
    return {
        "kafka_version": kafka_version,
        "seed_base": seed_base,
        "runs": len(reports) + len(failures),
        "planned": len(planned),
        **verdicts,
        "kinds": dict(sorted(kinds.items())),
        "invalid_runs": invalid_runs,
        "errors": [{"seed": f.seed, "error": f.error, "run_dir": f.run_dir} for f in failures],
        "faults_by_family": families,
        "faults_by_seed": {str(k): list(v) for k, v in planned.items()},
    }


def summary_section(summary: Mapping[str, Any]) -> str:
    """HTML above the grid: n of N invalid, which kinds, links to the invalid runs."""
    n, total = summary["invalid"], summary["runs"]
    cls = "ok" if n == 0 and summary["error"] == 0 and summary["unknown"] == 0 else "bad"
    parts = [
        f"<div class='banner {cls}'>{n} of {total} runs invalid "
        f"(valid {summary['valid']}, unknown {summary['unknown']}, harness errors "
        f"{summary['error']}) on Kafka {escape(str(summary['kafka_version']))}, seeds "
        f"{summary['seed_base']} to {summary['seed_base'] + summary['planned'] - 1}</div>",
        "<p>Every run: RF 3, min.insync.replicas=2, unclean leader election off, acks=all "
        "idempotent producers, a seeded random schedule over every fault family. Kafka "
        "promises to keep every acknowledged write here: each invalid run is a false alarm "
        "or a bug, to be explained.</p>",
    ]
    fam = ", ".join(f"{escape(k)} {v}" for k, v in summary["faults_by_family"].items())
    parts.append(f"<p>Faults drawn by family: {fam}.</p>")
    if summary["kinds"]:
        kinds = ", ".join(f"{escape(k)} in {v} run(s)" for k, v in summary["kinds"].items())
        parts.append(f"<p>Anomaly kinds: {kinds}.</p>")
    if summary["invalid_runs"]:
        rows = "".join(
            f"<tr><td>{escape(str(r['seed']))}</td><td class='bad'>"
            + escape(", ".join(f"{k} {v}" for k, v in r["anomalies"].items()) or "invalid")
            + f"</td><td><a href='{escape(r['report'])}'>{escape(str(r['run_id']))}</a></td></tr>"
            for r in summary["invalid_runs"]
        )
        parts.append(
            "<h2>Invalid runs</h2><table><tr><th>seed</th><th>anomalies</th><th>report</th>"
            f"</tr>{rows}</table>"
        )
    return "\n".join(parts)


def soak_title(kafka_version: str, seed_base: int) -> str:
    return f"kchaos soak (Kafka {kafka_version}, seeds from {seed_base})"


def write_soak(
    out_dir: Path,
    reports: list[Any],
    failures: list[Any],
    *,
    kafka_version: str,
    seed_base: int,
    planned: Mapping[int, Sequence[str]],
    console: Any,
    title: str | None = None,
    preface: Sequence[str] = (),
) -> dict[str, Any]:
    """soak.json, report.html, junit.xml and summary.json; the result on the console.
    ``title``: the page's, when not the soak's own; ``preface``: HTML above the rest."""
    from kchaos.reports.console import print_batch
    from kchaos.reports.suite import version_grid, write_suite_reports

    summary = soak_summary(
        reports,
        failures,
        out_dir,
        kafka_version=kafka_version,
        seed_base=seed_base,
        planned=planned,
    )
    title = title or soak_title(kafka_version, seed_base)
    paths = write_suite_reports(
        out_dir,
        reports,
        failures,
        title=title,
        sections=[*preface, summary_section(summary), version_grid(reports, failures, out_dir)],
        unit="runs",
        columns=("seed",),
    )
    summary["report"] = paths["html"]
    summary["junit"] = paths["junit"]
    write_json(RunDir(out_dir).soak_json, summary)
    kinds = ", ".join(f"{k} ({v})" for k, v in summary["kinds"].items())
    result = (
        f"soak: {summary['invalid']} of {summary['runs']} runs invalid"
        + (f": {kinds}" if kinds else "")
        + f"; unknown {summary['unknown']}, harness errors {summary['error']}"
    )
    print_batch(
        console,
        title,
        reports,
        failures,
        paths,
        page="soak report",
        label=lambda s: f"soak seed {s.get('seed')}",
        notes=[result],
    )
    return summary


def run_soak(
    *,
    runs: int = DEFAULT_RUNS,
    seed_base: int = DEFAULT_SEED_BASE,
    kafka_version: str = DEFAULT_KAFKA_VERSION,
    duration: float = DEFAULT_DURATION_S,
    out: Path | None = None,
    console: Any = None,
    command: list[str] | None = None,
    run: Callable[..., Any] | None = None,
    resolver: Callable[[str], str | None] | None = None,
    prometheus: bool = False,
    shard: ShardSpec | None = None,
    durations: Path | None = None,
    dry_run: bool = False,
) -> int:
    """Run the soak; 0 when every run was valid, else the worst exit code of `kchaos run`.
    The version is checked first as `kchaos matrix` checks it (``resolver``: its jar
    resolver, Maven by default). ``prometheus``: a Prometheus server for each run;
    ``shard``, ``durations``, ``dry_run``: as :func:`kchaos.harness.run.matrix.run_matrix`'s."""
    from kchaos.harness.run.matrix import check_versions, maven_resolver, parse_versions
    from kchaos.harness.run.suite import run_entries, suite_dir_for
    from kchaos.reports.console import make_console

    console = console or make_console()
    (version,) = parse_versions(kafka_version)
    entries = plan(runs, seed_base, kafka_version=version, duration=duration)
    split = shards.split("soak", entries, shard, durations)
    if dry_run:
        shards.print_plan(console, split)
        return 0
    check_versions([version], "offline", resolver or maven_resolver())
    suite_dir = suite_dir_for(f"{version}-seeds-{seed_base}-{seed_base + runs - 1}", out, "soak")
    # the same plan again, its scenario files written for `kchaos run`
    plan(
        runs,
        seed_base,
        kafka_version=version,
        duration=duration,
        scenario_dir=suite_dir / "scenarios",
    )
    planned = {e.scenario.seed: drawn_faults(e.scenario) for e in entries}
    title = soak_title(version, seed_base)
    mine = title if split.spec.count == 1 else f"{title} (shard {split.spec})"
    console.print(
        f"soak: {runs} runs on Kafka {version}, seeds {seed_base} to {seed_base + runs - 1}, "
        f"{duration:g} s of workload each -> {suite_dir}"
        + ("" if split.spec.count == 1 else f"; shard {split.spec}: {len(split.chosen)} of them")
    )

    def write(reports: list[Any], failures: list[Any]) -> None:
        write_soak(
            suite_dir,
            reports,
            failures,
            kafka_version=version,
            seed_base=seed_base,
            planned=planned,
            console=console,
            title=mine,
        )

    context = {
        "title": title,
        "kafka_version": version,
        "seed_base": seed_base,
        "planned": {str(k): v for k, v in planned.items()},
    }
    return run_entries(
        suite_dir,
        split.chosen,
        write,
        console=console,
        command=command,
        run=run,
        prometheus=prometheus,
        log=shards.BatchLog(suite_dir, split, context, durations),
    )
