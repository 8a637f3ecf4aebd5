"""iptables chains a run puts in the *host's* own network namespace, and their cleanup.

Nearly every kchaos rule lives in a container's namespace and goes with it. One fault
cannot do that: ``hold-request`` aimed at a librdkafka worker, whose Kafka connections
leave from the harness's host (``kchaos.faults.request_hold``). Its chain there is named
for the run (:func:`chain_name`: ``KCHAOS-H`` and eight hex digits of the run id's CRC-32,
then the fault id), jumped to from OUTPUT, and matches only packets to the run's own
Toxiproxy address. :func:`remove_run_chains` removes every chain of one run, and nothing
else: ``kchaos cleanup`` calls it for each run it finds, then (without a run id) for
every ``KCHAOS-H`` chain, so a harness killed while the chain held leaves nothing behind
even when its containers went some other way; a chain still there afterwards is a
leftover that fails the cleanup (:func:`left`).
"""

from __future__ import annotations

import re
import subprocess
import zlib
from collections.abc import Callable

from kchaos.harness.cluster import chains
from kchaos.harness.errors import ClusterError

HOST_PREFIX = "KCHAOS-H"
_TIMEOUT_S = 20.0


def run_prefix(run_id: str) -> str:
    return f"{HOST_PREFIX}{zlib.crc32(run_id.encode()):08x}-"


def chain_name(run_id: str, fault_id: str) -> str:
    """The host chain of one fault of one run (iptables allows 28 characters)."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", fault_id)
    return f"{run_prefix(run_id)}{safe}"[:28]


def install_script(chain: str, rules: list[list[str]]) -> str:
    """The chain with its rules, jumped to first from the host's OUTPUT."""
    return chains.install_script(chain, rules, parent="OUTPUT", parent_in_output=False)


def remove_script(chain: str) -> str:
    return chains.remove_script(chain, parent="OUTPUT")


def run(script: str) -> tuple[int, str]:
    """Run a script with the host's sh, in the host's namespace; (exit code, output)."""
    try:
        done = subprocess.run(
            ["sh", "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClusterError(f"host iptables: {exc}") from exc
    return done.returncode, done.stdout.decode("utf-8", "replace")


def run_chains(run_id: str | None, listing: str) -> list[str]:
    """The chains of ``run_id`` in ``iptables -S`` output; of every run with None."""
    prefix = HOST_PREFIX if run_id is None else run_prefix(run_id)
    return sorted(
        {
            m.group(1)
            for m in re.finditer(r"^-N (\S+)$", listing, re.M)
            if m.group(1).startswith(prefix)
        }
    )


def _listing() -> tuple[bool, str]:
    """(listed, text): the host's ``iptables -S``; nothing to list without iptables."""
    code, listing = run("command -v iptables >/dev/null || exit 0; iptables -w -S")
    return code == 0, listing


def remove_run_chains(
    run_id: str | None, echo: Callable[[str], None], dry_run: bool = False
) -> list[str]:
    """Remove every host chain of ``run_id`` (a run's cleanup), or of every run with None
    (``kchaos cleanup`` without a run id: also a chain whose run left nothing else, which
    no other sign leads to); what was removed."""
    listed, listing = _listing()
    if not listed:
        echo(f"host iptables could not be listed: {listing.strip()[-200:]}")
        return []
    done = []
    for chain in run_chains(run_id, listing):
        if not dry_run:
            run(remove_script(chain))
        done.append(f"{'would remove' if dry_run else 'removed'} host iptables chain {chain}")
        echo(done[-1])
    return done


def left(run_id: str | None) -> list[str]:
    """The host chains of ``run_id`` (of every run with None) still there, for cleanup's
    last look."""
    listed, listing = _listing()
    if not listed:
        return []
    return [f"host iptables chain {chain}" for chain in run_chains(run_id, listing)]
