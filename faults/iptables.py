"""iptables rules for partitions, built as plain data first, then applied from the host.

The rules are installed by the *host's* iptables inside each node's network namespace
(:meth:`NodeProcesses.net_exec`, ``nsenter -t PID -n``), so the broker image needs no
iptables and no NET_ADMIN of its own: the project's image and one without any tools get the
same partitions. The host needs iptables and nsenter (``compose/setup.sh`` installs them).

Topology matters here: nodes never talk to each other directly. Node A reaches node B's
replication and controller listeners through Toxiproxy, at ``toxiproxy_ip:19100+B`` and
``toxiproxy_ip:19200+B``; Toxiproxy then opens its own connection to B. So "A cannot reach
B" is one rule in A's container: drop OUTPUT to those two proxy ports. It stops every
connection A opens to B (new and established: the rule matches packets, not connection
state); connections B opens to A (through A's proxies) are untouched, requests and
responses alike. A one-way cut is therefore one-way *by who initiates*: the cut side can
still answer what the other side asks. A symmetric cut is the rule in both containers.

Rules live in the node's network namespace, in kchaos's own chains: ``KCHAOS`` (jumped to
from OUTPUT) and one chain per fault, ``KCHAOS-<fault id>``, jumped to from ``KCHAOS``.
Stopping a fault removes its chain; heal-everything removes every chain whose name starts
with KCHAOS.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from kchaos.harness.cluster import chains
from kchaos.harness.cluster.api import PROXY_PORT_BASE, NodeAccess, NodeHandle, NodeProcesses
from kchaos.harness.cluster.chains import NEEDS_IPTABLES
from kchaos.harness.errors import FaultError, HealError

MAIN_CHAIN = "KCHAOS"
PEER_LINKS = ("replication", "controller")

Pair = tuple[int, int]  # (from node id, to node id): from cannot reach to


def fault_chain(fault_id: str) -> str:
    """The per-fault chain name (iptables allows at most 28 characters)."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", fault_id)
    return f"{MAIN_CHAIN}-{safe}"[:28]


def peer_ports(node: NodeHandle) -> list[int]:
    """Toxiproxy ports through which peers reach this node (replication, controller)."""
    ports = []
    for link in PEER_LINKS:
        handle = node.proxies.get(link) if node.proxies else None  # type: ignore[call-overload]
        if handle is not None:
            ports.append(handle.listen_port)
        elif not node.proxies:
            ports.append(PROXY_PORT_BASE[link] + node.node_id)  # type: ignore[index]
    return ports


# --- which (from, to) pairs a partition blocks ---------------------------------------


def cut_both_ways(side_a: Iterable[int], side_b: Iterable[int]) -> set[Pair]:
    a, b = set(side_a), set(side_b)
    return {(x, y) for x in a for y in b if x != y} | {(y, x) for x in a for y in b if x != y}


def cut_one_way(sources: Iterable[int], dests: Iterable[int]) -> set[Pair]:
    dst = set(dests)
    return {(s, d) for s in set(sources) for d in dst if s != d}


def bridge(middle: int, half_a: Iterable[int], half_b: Iterable[int]) -> set[Pair]:
    """The halves cannot reach each other; both still reach (and are reached by) middle."""
    return cut_both_ways(set(half_a) - {middle}, set(half_b) - {middle})


# --- rule text -----------------------------------------------------------------------


def rules_by_node(
    pairs: Iterable[Pair],
    nodes: Mapping[int, NodeHandle],
    toxiproxy_ip: str,
    action: str = "drop",
) -> dict[int, list[list[str]]]:
    """For each source node, the iptables rule arguments (without chain) it needs."""
    target = ["-j", "DROP"] if action == "drop" else ["-j", "REJECT", "--reject-with", "tcp-reset"]
    out: dict[int, list[list[str]]] = {}
    for src, dst in sorted(set(pairs)):
        if dst not in nodes or src not in nodes:
            raise FaultError(f"partition names unknown node {src if src not in nodes else dst}")
        for port in peer_ports(nodes[dst]):
            rule = ["-p", "tcp", "-d", toxiproxy_ip, "--dport", str(port), *target]
            out.setdefault(src, []).append(rule)
    return out


def install_script(chain: str, rules: Sequence[Sequence[str]]) -> str:
    """Shell script creating the per-fault chain with its rules and hooking it in (under
    ``KCHAOS``, itself jumped to from OUTPUT)."""
    return chains.install_script(chain, rules, parent=MAIN_CHAIN, parent_in_output=True)


def remove_script(chain: str) -> str:
    return chains.remove_script(chain, parent=MAIN_CHAIN)


def counters_script(chain: str) -> str:
    """List the per-fault chain with exact packet counts (read before it is removed)."""
    return "\n".join([NEEDS_IPTABLES, f"iptables -w -L {chain} -v -x -n"])


def parse_dropped(text: str) -> int | None:
    """``iptables -L CHAIN -v -x -n`` -> packets its DROP and REJECT rules matched; None
    when the text is not such a listing (no ``Chain`` header, e.g. the chain was gone)."""
    lines = text.splitlines()
    if not any(line.startswith("Chain ") for line in lines):
        return None
    total = 0
    for line in lines:
        fields = line.split()
        if len(fields) > 2 and fields[0].isdigit() and fields[2] in ("DROP", "REJECT"):
            total += int(fields[0])
    return total


def heal_script() -> str:
    """Remove every KCHAOS* chain; prints the names it removed, one per line."""
    return "\n".join(
        [
            NEEDS_IPTABLES,
            f"while iptables -w -D OUTPUT -j {MAIN_CHAIN} 2>/dev/null; do :; done",
            "chains=$(iptables -w -S | while read -r op name rest; do",
            f'  if [ "$op" = -N ]; then case "$name" in {MAIN_CHAIN}*) echo "$name";; esac; fi',
            "done)",
            'for c in $chains; do iptables -w -F "$c"; done',
            'for c in $chains; do iptables -w -X "$c" 2>/dev/null || true; echo "removed $c"; done',
        ]
    )


# --- running them --------------------------------------------------------------------


def run_script(cluster: NodeProcesses, node: NodeHandle, script: str, *, heal: bool) -> str:
    """Run a script of this module with the host's sh in the node's network namespace."""
    try:
        code, out = cluster.net_exec(node, ["sh", "-c", script])
    except Exception as exc:  # the cluster's own error for a stopped container
        if heal and "is not running" in str(exc):
            # A stopped container's network namespace went with it, and its rules too: a
            # node that a crash fault holds down has nothing left to heal here.
            return ""
        err = HealError if heal else FaultError
        raise err(f"iptables on {node.name}: {exc}") from exc
    if code != 0:
        err = HealError if heal else FaultError
        raise err(f"iptables on {node.name} exited {code}: {out.strip()[-400:]}")
    return out


def install(
    cluster: NodeAccess, chain: str, rules: Mapping[int, Sequence[Sequence[str]]]
) -> list[int]:
    """Install rules node by node; returns the node ids done (for the undo)."""
    done = []
    for node_id in sorted(rules):
        node = cluster.node(node_id)
        done.append(node_id)
        run_script(cluster, node, install_script(chain, rules[node_id]), heal=False)
    return done


def dropped(cluster: NodeAccess, chain: str, node_id: int) -> int | None:
    """Packets the chain's DROP/REJECT rules matched on one node so far; None when that
    cannot be read (the node's container is down, the chain is gone): a measure, never a
    reason for a heal to fail."""
    try:
        out = run_script(cluster, cluster.node(node_id), counters_script(chain), heal=True)
    except HealError:
        return None
    return parse_dropped(out)


def remove(cluster: NodeAccess, chain: str, node_ids: Iterable[int]) -> None:
    errors = []
    for node_id in sorted(set(node_ids)):
        try:
            run_script(cluster, cluster.node(node_id), remove_script(chain), heal=True)
        except HealError as exc:
            errors.append(str(exc))
    if errors:
        raise HealError("; ".join(errors))
