"""Command-line options that several kchaos commands take, each declared once.

``kchaos run``, ``suite``, ``matrix``, ``soak``, ``shrink``, ``replay`` and ``validate``
use these, so an option has one name, type and wording wherever it appears; a command
passes only what really differs (the directory ``--out`` defaults to, whether ``--set``
applies to one scenario or to every one, a default release). Each function returns a
click decorator. Options one command alone has stay with that command.

Part of kchaos.cli (docs/architecture.md): click and the standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click
from click.decorators import FC

from kchaos.harness.rundir.names import DURATIONS_JSON


def out_option(default: str) -> Callable[[FC], FC]:
    """``--out DIRECTORY``; ``default`` names where the command writes without it."""
    return click.option(
        "--out",
        type=click.Path(file_okay=False, path_type=Path),
        help=f"Output directory (default: {default}).",
    )


def overrides_option(*, every_scenario: bool = False) -> Callable[[FC], FC]:
    """``--set KEY=VALUE`` (repeatable), into the parameter ``overrides``."""
    what = "a field of every scenario" if every_scenario else "a field"
    return click.option(
        "--set",
        "overrides",
        multiple=True,
        metavar="KEY=VALUE",
        help=f"Override {what} by dotted path, e.g. workload.duration=30 or "
        "cluster.server_properties.log.flush.interval.messages=1 (repeatable).",
    )


def kafka_version_option(
    default: str | None = None, *, otherwise: str = "the file's"
) -> Callable[[FC], FC]:
    """``--kafka-version VERSION``, one release. With ``default`` the help shows it;
    without, ``otherwise`` says which release the command uses (the scenario file's...)."""
    if default is not None:
        return click.option(
            "--kafka-version",
            metavar="VERSION",
            default=default,
            show_default=True,
            help="Kafka release.",
        )
    return click.option(
        "--kafka-version",
        metavar="VERSION",
        help=f"Kafka release, e.g. 3.9.1 (default: {otherwise}).",
    )


def seed_option() -> Callable[[FC], FC]:
    """``--seed``: the seed of the scenario's fault schedule."""
    return click.option(
        "--seed", type=int, help="Seed of the fault schedule (default: the file's)."
    )


def broker_config_option() -> Callable[[FC], FC]:
    """``--broker-config FILE``: one server.properties merged over the scenario's."""
    return click.option(
        "--broker-config",
        type=click.Path(dir_okay=False, path_type=Path),
        help="A server.properties file merged over the scenario's server properties.",
    )


def quiet_option() -> Callable[[FC], FC]:
    """``--quiet``: a run prints only its final summary."""
    return click.option("--quiet", is_flag=True, help="Only the final summary.")


def prometheus_option() -> Callable[[FC], FC]:
    """``--prometheus``: a Prometheus server for each run (kchaos.harness.run.prometheus)."""
    return click.option(
        "--prometheus",
        is_flag=True,
        help="Start a Prometheus server (Debian's prometheus) for each run, scraping the "
        "brokers and the harness; the run's report plots what it scraped (saved in the "
        "run directory).",
    )


def _shard(ctx: click.Context, param: click.Parameter, value: str | None) -> object:
    if value is None:
        return None
    from kchaos.harness.run.shard import parse_shard

    try:
        return parse_shard(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def shard_options() -> Callable[[FC], FC]:
    """``--shard K/N``, ``--durations FILE`` and ``--dry-run``: one machine's share of a
    batch (kchaos.harness.run.shard), into ``shard``, ``durations`` and ``dry_run``."""

    def decorate(f: FC) -> FC:
        f = click.option(
            "--dry-run",
            is_flag=True,
            help="Print the (shard's) cells with their expected seconds and every "
            "shard's expected time; run nothing.",
        )(f)
        f = click.option(
            "--durations",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Measured run times that balance the shards; an unsharded run updates "
            f"it, `kchaos merge` adds its shards' (default: runs/{DURATIONS_JSON}).",
        )(f)
        return click.option(
            "--shard",
            metavar="K/N",
            callback=_shard,
            help="Run only shard K of N (1 <= K <= N): the plan's cells split N ways by "
            "expected duration, the same on every machine; `kchaos merge` joins them.",
        )(f)

    return decorate
