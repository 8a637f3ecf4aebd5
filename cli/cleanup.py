"""``kchaos cleanup``: heal and remove whatever runs left behind.

The work is :func:`kchaos.harness.cluster.cleanup.clean_up`; this command hands it the
healer of the faults package (the cluster layer sits below the faults and does not import
them).
"""

from __future__ import annotations

import click


def _warn(line: str) -> None:
    click.echo(line, err=True)


@click.command("cleanup")
@click.option("--run", "run_id", default=None, help="Only this run id (default: every run).")
@click.option("--dry-run", is_flag=True, help="Print what would be done, change nothing.")
def cleanup_cmd(run_id: str | None, dry_run: bool) -> int:
    """Heal and remove every labelled container, network, proxy, mount and loop device.

    Exits 1 when something labelled is still there afterwards, and lists it on stderr.
    """
    from kchaos.faults.heal import heal_everything
    from kchaos.harness.cluster.cleanup import clean_up

    return clean_up(run_id, healer=heal_everything, dry_run=dry_run, echo=click.echo, warn=_warn)
