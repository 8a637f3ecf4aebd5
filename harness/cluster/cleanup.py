"""``kchaos cleanup``: heal and remove whatever runs left behind, and nothing else.

Three things mark what kchaos made: Docker objects labelled ``io.kchaos=1`` (with the
run id in ``io.kchaos.run``), mounts, loop devices and files under
``<state root>/runs/RUN_ID/``, and host iptables chains named ``KCHAOS-H...``. For each
run found by the first two, in this order:

1. thaw every filesystem mounted under the run's directory (a writer blocked on a frozen
   filesystem cannot be killed, so this must come before anything else);
2. SIGCONT every process of the run's containers, and unpause paused containers; SIGCONT
   the client processes a fault stopped (recorded by ``kchaos.harness.cluster.clientpids``);
3. the healer the caller hands in (``kchaos cleanup`` passes
   ``kchaos.faults.heal_everything``) on the attached cluster; this package does not import
   the faults, which sit above it;
4. remove the containers, then the network, and stop the run's Prometheus server (a
   host process, found by its pid file under the run's directory);
5. unmount, detach the loop devices backed by files under the run's directory;
6. delete the run's directory (only once nothing is mounted below it);
7. remove the run's chains in the host's own iptables (``hold-request`` on a librdkafka
   worker, :mod:`kchaos.harness.cluster.hostnet`). Without a run id, every ``KCHAOS-H``
   chain goes afterwards too: one whose run left nothing else has no other sign.

Every step tolerates a missing piece (a crash can stop a run anywhere), and a step that
fails is reported and passed over, never a traceback. Once every run is done, cleanup looks
again: whatever labelled object, mount, loop device or run directory is still there is
listed (kind, name, id) on stderr and the command exits :data:`EXIT_LEFTOVERS`, so a leak
fails CI.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import docker
import docker.errors

from kchaos.harness.cluster import clientpids, filesystem, hostnet, prometheus
from kchaos.harness.cluster.api import ClusterHandle
from kchaos.harness.cluster.containers import container_pids, docker_client
from kchaos.harness.cluster.retry import Poll
from kchaos.harness.cluster.topology import run_dir
from kchaos.harness.errors import ClusterError, ConfigError
from kchaos.harness.labels import LABEL_APP, LABEL_RUN, state_root

Echo = Callable[[str], None]
# Heals the faults left on an attached cluster and says what it did, one item per action
# (``kchaos.faults.heal.heal_everything``); the caller hands it in.
Healer = Callable[[ClusterHandle], Iterable[object]]
# `kchaos cleanup` exits with this when something labelled survived it.
EXIT_LEFTOVERS = 1
# Before calling something a leftover, look again for up to this long: the kernel frees a
# loop device whose filesystem was unmounted lazily only once its last user has gone.
SETTLE_S = 5.0
_pause = time.sleep  # between two looks (a seam for the unit tests)
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _quiet(_: str) -> None:
    pass


def check_run_id(run_id: str) -> str:
    if not _RUN_ID.fullmatch(run_id) or run_id in {".", ".."}:
        raise ConfigError(f"not a run id: {run_id!r}", field="--run")
    return run_id


def _run_of(path: str) -> str | None:
    runs = str(state_root() / "runs") + "/"
    if not path.startswith(runs):
        return None
    rest = path[len(runs) :].split("/", 1)[0]
    return rest if _RUN_ID.fullmatch(rest) else None


def find_runs(client: docker.DockerClient | None) -> list[str]:
    """Every run id with something left: labelled Docker objects, state dirs, mounts, loops."""
    runs: set[str] = set()
    if client is not None:
        flt = {"label": f"{LABEL_APP}=1"}
        for c in client.containers.list(all=True, filters=flt):
            runs.add(c.labels.get(LABEL_RUN, ""))
        for n in client.networks.list(filters=flt):
            runs.add((n.attrs.get("Labels") or {}).get(LABEL_RUN, ""))
    base = state_root() / "runs"
    if base.is_dir():
        runs.update(p.name for p in base.iterdir() if p.is_dir())
    for mount in filesystem.mounts_under(base):
        runs.add(_run_of(str(mount)) or "")
    for dev in filesystem.loop_devices_under(base):
        runs.add(_run_of(dev.back_file) or "")
    return sorted(r for r in runs if r and _RUN_ID.fullmatch(r))


def thaw_run(run_id: str, echo: Echo = _quiet, dry_run: bool = False) -> list[str]:
    done = []
    for mount in filesystem.mounts_under(run_dir(run_id)):
        if dry_run:
            done.append(f"would thaw {mount} if frozen")
        else:
            try:
                if filesystem.thaw(mount):
                    done.append(f"thawed {mount}")
            except ClusterError as exc:
                done.append(f"thaw {mount} failed: {exc}")
    for line in done:
        echo(line)
    return done


def _labelled(run_id: str) -> dict[str, list[str]]:
    return {"label": [f"{LABEL_APP}=1", f"{LABEL_RUN}={run_id}"]}


def release_processes(
    client: docker.DockerClient, run_id: str, echo: Echo = _quiet, dry_run: bool = False
) -> list[str]:
    """SIGCONT every process of the run's containers, then unpause the paused ones."""
    done = []
    for c in client.containers.list(all=True, filters=_labelled(run_id)):
        if c.status not in ("running", "paused"):
            continue
        if dry_run:
            done.append(f"would SIGCONT the processes of {c.name}")
        else:
            sent = 0
            for pid in container_pids(c):
                try:
                    os.kill(pid, signal.SIGCONT)
                    sent += 1
                except ProcessLookupError:
                    continue
            done.append(f"sent SIGCONT to {sent} process(es) of {c.name}")
        if c.status == "paused":
            if dry_run:
                done.append(f"would unpause {c.name}")
            else:
                try:
                    c.unpause()
                    done.append(f"unpaused {c.name}")
                except docker.errors.APIError as exc:
                    done.append(f"unpause {c.name} failed: {exc}")
    for line in done:
        echo(line)
    return done


def heal_faults(run_id: str, healer: Healer, echo: Echo = _quiet) -> list[str]:
    """``healer(attach(run_id))``; never raises."""
    from kchaos.harness.cluster.cluster import attach

    try:
        cluster = attach(run_id)
    except Exception as exc:  # noqa: BLE001 - nothing to heal without the run's state
        echo(f"heal skipped for {run_id}: {exc}")
        return []
    try:
        done = [str(x) for x in healer(cluster)]
    except Exception as exc:  # noqa: BLE001 - removal follows anyway
        done = [f"{getattr(healer, '__name__', 'heal')} failed: {exc}"]
    for line in done:
        echo(line)
    return done


def remove_run(
    client: docker.DockerClient | None, run_id: str, echo: Echo = _quiet, dry_run: bool = False
) -> list[str]:
    """Remove containers and network, unmount, detach loops, delete the run directory."""
    done: list[str] = []

    def note(line: str) -> None:
        done.append(line)
        echo(line)

    verb = "would remove" if dry_run else "removed"
    if client is not None:
        for c in client.containers.list(all=True, filters=_labelled(run_id)):
            if not dry_run:
                try:
                    c.remove(force=True, v=True)
                except docker.errors.NotFound:
                    continue
                except docker.errors.APIError as exc:
                    note(f"remove container {c.name} failed: {exc}")
                    continue
            note(f"{verb} container {c.name}")
        for n in client.networks.list(filters=_labelled(run_id)):
            if not dry_run:
                try:
                    n.remove()
                except docker.errors.NotFound:
                    continue
                except docker.errors.APIError as exc:
                    note(f"remove network {n.name} failed: {exc}")
                    continue
            note(f"{verb} network {n.name}")
    base = run_dir(run_id)
    if (prometheus.home_of(run_id) / prometheus.PID_FILE).is_file():
        if dry_run:
            note(f"would stop the run's prometheus ({prometheus.home_of(run_id)})")
        else:
            stopped = prometheus.stop_leftover(prometheus.home_of(run_id))
            if stopped:
                note(stopped)
    for mount in filesystem.mounts_under(base):
        if not dry_run:
            with contextlib.suppress(ClusterError):  # not frozen, or not ext4: unmount anyway
                filesystem.thaw(mount)
            try:
                filesystem.unmount(mount, lazy_fallback=True)
            except ClusterError as exc:
                note(f"unmount {mount} failed: {exc}")
                continue
        note(f"{'would unmount' if dry_run else 'unmounted'} {mount}")
    for dev in filesystem.loop_devices_under(base):
        if not dry_run:
            try:
                filesystem.detach(dev.name)
            except ClusterError as exc:
                note(f"detach {dev.name} failed: {exc}")
                continue
        note(f"{'would detach' if dry_run else 'detached'} {dev.name} ({dev.back_file})")
    if base.exists():
        if dry_run:
            note(f"would delete {base}")
        elif filesystem.mounts_under(base):
            note(f"kept {base}: something is still mounted below it")
        else:
            shutil.rmtree(base, ignore_errors=True)
            note(f"deleted {base}")
    return done


def cleanup_run(
    run_id: str,
    *,
    client: docker.DockerClient | None = None,
    healer: Healer | None = None,
    dry_run: bool = False,
    echo: Echo = _quiet,
    thaw: bool = True,
) -> list[str]:
    """Everything for one run, in the safe order (see the module text); faults are healed
    only when a ``healer`` is given. ``thaw=False`` when the caller has thawed every run
    already."""
    check_run_id(run_id)
    done = thaw_run(run_id, echo, dry_run) if thaw else []
    done += clientpids.release(run_id, echo, dry_run)
    if client is not None:
        done += release_processes(client, run_id, echo, dry_run)
    if healer is not None and not dry_run:
        done += heal_faults(run_id, healer, echo)
    done += remove_run(client, run_id, echo, dry_run)
    done += hostnet.remove_run_chains(run_id, echo, dry_run)
    return done


def _engine() -> docker.DockerClient | None:
    try:
        return docker_client()
    except Exception:  # noqa: BLE001 - without an engine, host-side leftovers still go
        return None


def clean_up(
    run_id: str | None,
    *,
    healer: Healer | None,
    dry_run: bool = False,
    echo: Echo = _quiet,
    warn: Echo = _quiet,
) -> int:
    """``kchaos cleanup``: every run (or only ``run_id``), then a last look for leftovers.

    ``echo`` hears what is done, ``warn`` the problems. Returns the exit code: 0, or
    :data:`EXIT_LEFTOVERS` when something labelled is still there afterwards (each named
    on ``warn``).
    """
    client = _engine()
    if client is None:
        warn("Docker engine not reachable: only host-side leftovers are handled and checked")
    runs = [check_run_id(run_id)] if run_id else find_runs(client)
    orphans = [] if run_id else hostnet.left(None)  # host chains, whatever their run
    if not runs and not orphans:
        echo("nothing to clean up")
    # Thaw everything first: a frozen filesystem would block the removal of other runs too.
    thawed = {rid: thaw_run(rid, echo, dry_run) for rid in runs}
    for rid in runs:
        echo(f"run {rid}:")
        done = cleanup_run(
            rid, client=client, healer=healer, dry_run=dry_run, echo=echo, thaw=False
        )
        if not done and not thawed[rid]:
            echo("  nothing left")
    if not run_id:
        # a chain whose run left no container nor directory: only its name leads to it
        hostnet.remove_run_chains(None, echo, dry_run)
    if dry_run:
        return 0

    def look() -> list[str]:
        return leftovers(run_id, client) if run_id else everything_left(client)

    left: list[str] = []

    def gone() -> str | None:
        left[:] = look()
        return f"{len(left)} left" if left else None

    if Poll("nothing labelled left", gone, timeout=SETTLE_S, interval=0.5, sleep=_pause).wait():
        return 0
    scope = f"run {run_id}" if run_id else "labelled"
    warn(f"cleanup failed: {len(left)} {scope} object(s) remain:")
    for item in left:
        warn(f"  {item}")
    return EXIT_LEFTOVERS


def _docker_left(client: docker.DockerClient, filters: dict[str, Any]) -> list[str]:
    """Containers and networks matching ``filters``: kind, name, short id and run."""

    def run_of(labels: dict[str, str] | None) -> str:
        return (labels or {}).get(LABEL_RUN) or "no run label"

    found = [
        f"container {c.name} (id {c.id[:12]}, {c.status}, run {run_of(c.labels)})"
        # one removed between the listing and its inspection is gone, not left over
        for c in client.containers.list(all=True, filters=filters, ignore_removed=True)
    ]
    found += [
        f"network {n.name} (id {n.id[:12]}, run {run_of(n.attrs.get('Labels'))})"
        for n in client.networks.list(filters=filters)
    ]
    return found


def _host_left(base: Path) -> list[str]:
    found = [f"mount {m}" for m in filesystem.mounts_under(base)]
    found += [
        f"loop device {d.name} (backed by {d.back_file})"
        for d in filesystem.loop_devices_under(base)
    ]
    return found


def leftovers(run_id: str, client: docker.DockerClient | None) -> list[str]:
    """What of a run still exists (containers, networks, mounts, loops, its directory).

    Without a client, only the host side (mounts, loops, the directory) is looked at.
    """
    found = _docker_left(client, _labelled(run_id)) if client is not None else []
    base = run_dir(run_id)
    found += _host_left(base)
    if Path(base).exists():
        found.append(f"directory {base}")
    return found + hostnet.left(run_id)


def everything_left(client: docker.DockerClient | None) -> list[str]:
    """Everything kchaos marks that still exists, whatever its run (or without one)."""
    found = _docker_left(client, {"label": f"{LABEL_APP}=1"}) if client is not None else []
    base = state_root() / "runs"
    found += _host_left(base)
    if base.is_dir():
        found += [f"directory {p}" for p in sorted(base.iterdir()) if p.is_dir()]
    return found + hostnet.left(None)
