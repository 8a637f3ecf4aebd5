"""Shell text that adds and removes one kchaos iptables chain: the one builder for the
chains faults put in a container's namespace (:mod:`kchaos.faults.iptables`, hooked under
kchaos's ``KCHAOS`` chain) and the ones ``hold-request`` puts in the host's
(:mod:`kchaos.harness.cluster.hostnet`, hooked first in ``OUTPUT``).

The scripts are plain text for ``sh``: where they run (nsenter into a node, or the host's
own shell) is the caller's business. Every script first says clearly when the host has no
iptables.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

# First line of every script: a clear message when the host lacks iptables.
NEEDS_IPTABLES = (
    "command -v iptables >/dev/null"
    " || { echo 'iptables is not installed on the host (Debian package iptables)'; exit 127; }"
)


def install_script(
    chain: str, rules: Sequence[Sequence[str]], *, parent: str, parent_in_output: bool
) -> str:
    """Create (or empty) ``chain``, append ``rules`` (argument lists, quoted here) and jump
    to it from ``parent``. ``parent_in_output``: ``parent`` is a chain of its own, made if
    missing and jumped to first from OUTPUT, and ``chain`` goes at its end; otherwise
    ``parent`` is a built-in chain and ``chain`` goes first in it."""
    lines = [NEEDS_IPTABLES, "set -e"]
    if parent_in_output:
        lines += [
            f"iptables -w -N {parent} 2>/dev/null || true",
            f"iptables -w -C OUTPUT -j {parent} 2>/dev/null || iptables -w -I OUTPUT 1 -j {parent}",
        ]
    lines.append(f"iptables -w -N {chain} 2>/dev/null || iptables -w -F {chain}")
    lines += [f"iptables -w -A {chain} " + " ".join(shlex.quote(a) for a in rule) for rule in rules]
    place = f"-A {parent}" if parent_in_output else f"-I {parent} 1"
    lines.append(
        f"iptables -w -C {parent} -j {chain} 2>/dev/null || iptables -w {place} -j {chain}"
    )
    return "\n".join(lines)


def remove_script(chain: str, *, parent: str) -> str:
    """Unhook ``chain`` from ``parent`` (every jump), empty it and delete it; a chain
    already gone is no error."""
    return "\n".join(
        [
            NEEDS_IPTABLES,
            f"while iptables -w -D {parent} -j {chain} 2>/dev/null; do :; done",
            f"iptables -w -F {chain} 2>/dev/null || true",
            f"iptables -w -X {chain} 2>/dev/null || true",
        ]
    )
