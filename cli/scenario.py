"""``kchaos run``, ``suite``, ``scenarios`` and ``validate``.

Importing this module is cheap: Docker, Kafka clients and the runner load only when a
run starts.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kchaos.cli.options import (
    broker_config_option,
    kafka_version_option,
    out_option,
    overrides_option,
    prometheus_option,
    quiet_option,
    seed_option,
    shard_options,
)
from kchaos.harness.scenario import library

if TYPE_CHECKING:
    from kchaos.harness.run.shard import ShardSpec

SCENARIO_HELP = "a library scenario name (see `kchaos scenarios`) or a path to a YAML file"


@click.command("run")
@click.argument("scenario", metavar="SCENARIO")
@seed_option()
@kafka_version_option()
@overrides_option()
@out_option("runs/RUN_ID")
@broker_config_option()
@quiet_option()
@click.option("--keep-cluster", is_flag=True, help="Leave the cluster up (remove it with cleanup).")
@prometheus_option()
def run_cmd(
    scenario: str,
    seed: int | None,
    kafka_version: str | None,
    overrides: tuple[str, ...],
    broker_config: Path | None,
    out: Path | None,
    quiet: bool,
    keep_cluster: bool,
    prometheus: bool,
) -> int:
    """Run SCENARIO against a real cluster, check the history, write the reports.

    SCENARIO is a library scenario name or a path to a YAML file. The exit code says
    whether the run ended as the scenario's `expect` section says: 0 yes; 1 no (an
    unexpected anomaly, a negative control that found nothing, a failed SLO); 2 the
    verdict is unknown where a definite one was expected; 3 bad input; 4 the harness
    failed (cluster, images, faults); 5 not judged (a kind `expect` requires or forbids
    could not be judged: its source was not read); 6 not exercised (a fault listed in
    `expect.effects` did not show its effect); 130 interrupted.
    """
    sc = library.load(
        scenario,
        overrides=overrides,
        broker_config=broker_config,
        seed=seed,
        kafka_version=kafka_version,
    )
    from kchaos.harness.run import run_scenario

    result = run_scenario(
        sc,
        out=out,
        quiet=quiet,
        command=sys.argv,
        keep_cluster=keep_cluster,
        prometheus=prometheus,
    )
    return result.exit_code


@click.command("suite")
@click.argument("suite", metavar="DIR|NAME")
@seed_option()
@kafka_version_option()
@overrides_option(every_scenario=True)
@out_option("runs/suite-NAME-TIME; with --broker-config runs/sre-NAME-TIME")
@click.option(
    "--broker-config",
    "broker_configs",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="SRE validation: run every scenario with this server.properties (repeatable: one "
    "column of the go/no-go matrix per file).",
)
@click.option(
    "--profile",
    metavar="NAME",
    help="SRE validation: the producers' delivery settings, `safe` (default: acks=all, "
    "idempotent), `acks1`, or `transactional` (the plain producers become transactional "
    "ones, read read_committed).",
)
@prometheus_option()
@shard_options()
def suite_cmd(
    suite: str,
    seed: int | None,
    kafka_version: str | None,
    overrides: tuple[str, ...],
    broker_configs: tuple[Path, ...],
    profile: str | None,
    out: Path | None,
    prometheus: bool,
    shard: ShardSpec | None,
    durations: Path | None,
    dry_run: bool,
) -> int:
    """Run several scenarios and write one combined report.

    DIR is a directory of scenario files; NAME `nightly` (or `library`, `all`) is the
    whole incident library. Without --broker-config each run is judged by its scenario's
    `expect`. With --broker-config FILE (repeatable), SRE validation: every scenario runs
    under every file's broker and topic-level settings, producers use the --profile, and
    the report is a go/no-go matrix of scenarios by configs (a cell is red when
    acknowledged writes were lost or reads were invalid; docs/sre.md). Exit code: 0 when
    every run ended as expected (every cell go), otherwise the worst exit code of
    `kchaos run`.
    """
    from kchaos.harness.errors import ConfigError

    files = library.suite_members(suite)
    if broker_configs:
        from kchaos.harness.run.sre import run_validation

        if shard is not None or dry_run:
            raise ConfigError("SRE validation (--broker-config) is not sharded", field="shard")

        return run_validation(
            Path(suite).name,
            files,
            list(broker_configs),
            profile_name=profile,
            out=out,
            overrides=overrides,
            kafka_version=kafka_version,
            seed=seed,
            command=sys.argv,
            prometheus=prometheus,
        )
    if profile is not None:
        raise ConfigError("needs --broker-config (SRE validation)", field="profile")
    from kchaos.harness.run.shard import default_durations
    from kchaos.harness.run.suite import run_suite

    return run_suite(
        Path(suite).name,
        files,
        out=out,
        overrides=overrides,
        kafka_version=kafka_version,
        seed=seed,
        command=sys.argv,
        prometheus=prometheus,
        shard=shard,
        durations=durations or default_durations(),
        dry_run=dry_run,
    )


@click.command("scenarios")
@click.option("--verbose", "-v", is_flag=True, help="Print each full description.")
@click.option(
    "--tag",
    metavar="TAG",
    help="Only the scenarios with this tag (known-bug: the Kafka tickets reproduced).",
)
def scenarios_cmd(verbose: bool, tag: str | None) -> int:
    """List the incident library, one line each (a ticket's scenario: its ticket and
    the releases it affects)."""
    from kchaos.reports.console import make_console

    console = make_console(highlight=False, soft_wrap=True)
    names = library.library_names() if tag is None else library.names_with_tag(tag)
    width = max(len(n) for n in names)
    loaded = library.load_all(names)
    families = {
        sc.name: ",".join(
            sorted(
                {s.fault for s in sc.nemesis.steps}
                | set(sc.nemesis.random.faults if sc.nemesis.random else ())
            )
        )
        or "-"
        for sc in loaded
    }
    faults_width = max(len(f) for f in families.values())
    for sc in loaded:
        # a ticket's scenario expects one thing on affected releases and another on fixed
        # ones: neither "negative control" nor "must be valid" tells it
        expect = (
            "known bug"
            if sc.ticket is not None
            else "negative control"
            if sc.expect.anomalies
            else ("report only" if sc.expect.valid is None else "must be valid")
        )
        line = (
            f"{sc.name:<{width}}  {sc.workload.duration:>4.0f}s  {expect:<16}  "
            f"{families[sc.name]:<{faults_width}}  {sc.summary}"
        )
        console.print(line if verbose else line[: max(console.width, 100)])
        if sc.ticket is not None:
            t = sc.ticket
            since = f"from {t.affected_from} " if t.affected_from else ""
            console.print(
                f"{'':<{width}}  {t.id}: affects {since}until {', '.join(t.fixed_in)} "
                f"({t.fix_note()}); {t.title}"
            )
        if verbose:
            console.print(f"    {sc.description}\n")
    return 0


@click.command("validate")
@click.argument("scenarios", nargs=-1, required=True, metavar="SCENARIO...")
@overrides_option()
@broker_config_option()
def validate_cmd(
    scenarios: tuple[str, ...], overrides: tuple[str, ...], broker_config: Path | None
) -> int:
    """Check scenario files (schema, references, fault names and params) without running.

    Exits 0 when all are valid; the first error is printed as FILE:LINE: FIELD: what is
    wrong, with exit code 3.
    """
    for ref in scenarios:
        sc = library.load(ref, overrides=overrides, broker_config=broker_config)
        steps = len(sc.nemesis.steps) or ("random" if sc.nemesis.random else 0)
        click.echo(
            f"{sc.source}: valid scenario {sc.name!r} ({sc.cluster.brokers} brokers, "
            f"{len(sc.topics)} topic(s), {sc.workload.duration:g} s, faults: {steps})"
        )
    return 0


@click.command("known-bugs")
@click.option(
    "--release",
    required=True,
    metavar="X.Y.Z",
    help="The Kafka release to ask about, e.g. 3.7.1.",
)
def known_bugs_cmd(release: str) -> int:
    """The library's known Kafka bugs that affect a release, without Docker: each with
    its measured catch rates on the affected and fixed releases and the command that
    checks it live."""
    from kchaos.harness.scenario import known_bugs

    view = known_bugs.for_release(release)
    for line in known_bugs.describe(view):
        click.echo(line)
    return 0
