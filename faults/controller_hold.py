"""``hold-controller-requests``: a broker's requests to the controller are held back, while
its heartbeats and its metadata fetches keep flowing.

Why: KIP-903's race needs a leader whose AlterPartition (an ISR expansion) reaches the
controller late, after the follower it adds has rebooted and registered again. A toxic on
the controller's proxy would slow every broker's controller traffic, the follower's
registration included; a cut of the leader's whole controller link would stop its
heartbeats too, so the controller would fence it after ``broker.session.timeout.ms``.

How: a KRaft broker talks to the controller over several TCP connections of its own
(one per channel manager: heartbeats, AlterPartition, forwarded admin requests, and the
raft client's metadata fetches). Heartbeats (every ``broker.heartbeat.interval.ms``, 2 s
by default) and metadata fetches (long polls) send all the time; AlterPartition and
forwarding send only when there is something to send. So the fault samples the target's
established connections to the controllers' proxy ports twice, ``sample_s`` apart (more
than one heartbeat interval), keeps those that sent in between and drops every other
packet the target sends to those ports: the idle connections' next requests, and any new
connection. When no known connection sent in a window it samples another, up to
``windows`` of them, each compared with the sample before. Why, measured 2026-11-27 on
4.4.0 (combined nodes): right after a 3-9 s cut of the target's link to the active
controller, one 3 s window found nothing in 5 of 9 starts. The target's clients had given
up on their connections whose requests were dropped (those stay established and silent,
some in TCP's retransmission backoff) and opened new ones after the heal, which carried
the heartbeats but had no count in the first sample to compare with; the next window
knows them. CI failed on this once (a test that cut a link, healed it, then held).

TCP retransmits what was dropped, so a held request arrives when the fault
stops (if the client has not timed it out first: keep the hold shorter than
``controller.socket.timeout.ms``, 30 s by default, or expect a retry on a new
connection, which carries the same pending request).

Limit, measured 2026-11-25 on Kafka 4.4.0 (combined nodes): when the target is the
active controller itself, its AlterPartition was committed 0.23 s after it decided to
shrink, though the rules dropped packets to the controller ports; the hold holds a
leader that is not the active controller (KIP-903's case, and
``tests/integration/test_fault_effects.py``, which reads the controller's record). How
the active controller's own request got through was not found.

Effect: before the chain is removed its DROP/REJECT counters are read; the stop line's
``held_packets`` (per target) is how many packets the hold kept from the controller: a
request on an idle connection, or a new connection's SYNs. The connections that were idle
at the start (``held_connections``) say only what could be held; a run in which a
target's every known connection was busy still holds the channel it opens later (the
AlterPartition channel connects on its first request), which only the counters show.

The rules live in the fault's own iptables chain in the target's network namespace (see
:mod:`kchaos.faults.iptables`), so heal-everything removes them like any partition's. Both
``ss`` and ``iptables`` are the host's, run in that namespace: the image needs neither.
"""

from __future__ import annotations

import re
import time
from typing import ClassVar

from kchaos.faults import iptables
from kchaos.faults.base import Fault, register
from kchaos.faults.params import Param
from kchaos.harness.cluster.api import PROXY_PORT_BASE, NodeHandle
from kchaos.harness.errors import FaultError

# one socket line: [State] Recv-Q Send-Q Local:Port Peer:Port (no State with a state filter)
_LOCAL = re.compile(r"^(?:[A-Z-]+\s+)?\d+\s+\d+\s+\S+:(\d+)\s+\S+:(\d+)")
_COUNTER = re.compile(r"\b(bytes_sent|data_segs_out|segs_out):(\d+)")


def controller_ports(nodes: list[NodeHandle]) -> list[int]:
    """The Toxiproxy ports through which brokers reach the controller nodes."""
    ports = []
    for node in nodes:
        handle = node.proxies.get("controller") if node.proxies else None
        ports.append(
            handle.listen_port
            if handle is not None
            else PROXY_PORT_BASE["controller"] + node.node_id
        )
    return ports


def parse_ss(text: str, ports: set[int]) -> dict[int, int]:
    """``ss -tnie`` output -> local port -> a send counter, for connections to ``ports``.

    ss prints each socket on one line and its TCP details (``bytes_sent:``,
    ``data_segs_out:``, ``segs_out:``) on the next; the first counter present is taken,
    in that order of preference.
    """
    out: dict[int, int] = {}
    current: int | None = None
    for line in text.splitlines():
        m = _LOCAL.match(line)
        if m is not None:
            local, remote = int(m.group(1)), int(m.group(2))
            current = local if remote in ports else None
            if current is not None:
                out[current] = 0
            continue
        if current is not None:
            counters = dict(_COUNTER.findall(line))
            for key in ("bytes_sent", "data_segs_out", "segs_out"):
                if key in counters:
                    out[current] = int(counters[key])
                    break
            current = None
    return out


def busy_ports(first: dict[int, int], second: dict[int, int]) -> set[int]:
    """Local ports of the connections that sent between the two samples."""
    return {port for port, sent in second.items() if sent > first.get(port, sent)}


def hold_rules(toxiproxy_ip: str, ports: list[int], keep: set[int], action: str) -> list[list[str]]:
    """Accept what the kept connections send to the controller ports; drop the rest."""
    target = ["-j", "DROP"] if action == "drop" else ["-j", "REJECT", "--reject-with", "tcp-reset"]
    rules: list[list[str]] = []
    for port in ports:
        for sport in sorted(keep):
            rules.append(
                [
                    "-p",
                    "tcp",
                    "-d",
                    toxiproxy_ip,
                    "--dport",
                    str(port),
                    "--sport",
                    str(sport),
                    "-j",
                    "RETURN",
                ]
            )
        rules.append(["-p", "tcp", "-d", toxiproxy_ip, "--dport", str(port), *target])
    return rules


@register
class HoldControllerRequests(Fault):
    """The targets' controller requests (AlterPartition, forwarded admin requests, new
    connections) are held; heartbeats and metadata fetches flow."""

    name = "hold-controller-requests"
    family = "partition"
    summary = "hold a broker's requests to the controller, heartbeats and metadata flow"
    default_target = "random"
    params_spec: ClassVar[tuple[Param, ...]] = (
        Param(
            "sample_s",
            "float",
            3.0,
            "seconds between the two samples that find the busy connections (more than one"
            " heartbeat interval)",
            minimum=0.5,
            maximum=30.0,
        ),
        Param(
            "windows",
            "int",
            4,
            "most sampling windows to wait for a known connection that sends (right after"
            " a heal the broker's clients send on new connections the first sample lacks)",
            minimum=1,
            maximum=10,
        ),
        Param(
            "action",
            "str",
            "drop",
            "drop (TCP retransmits later) or reject (connections reset)",
            choices=("drop", "reject"),
        ),
    )

    def _sample(self, node: NodeHandle, ports: set[int]) -> dict[int, int]:
        code, out = self.cluster.net_exec(node, ["ss", "-tnie", "state", "established"])
        if code != 0:
            raise FaultError(f"{self.name}: ss on {node.name} exited {code}: {out[-300:]}")
        return parse_ss(out, ports)

    def _find_busy(
        self, ports: set[int]
    ) -> tuple[dict[int, set[int]], dict[int, set[int]], dict[int, int]]:
        """Per target: the connections seen, those that sent within one window (the first
        window in which any did), and how many windows that took. FaultError when a target
        sent nothing in ``windows`` windows, with what each sample saw."""
        last = {n.node_id: self._sample(n, ports) for n in self.targets}
        seen = {n.node_id: [last[n.node_id]] for n in self.targets}
        keeps: dict[int, set[int]] = {}
        windows: dict[int, int] = {}
        for window in range(1, int(self.params["windows"]) + 1):
            time.sleep(float(self.params["sample_s"]))
            for node in self.targets:
                if node.node_id in keeps:
                    continue
                now = self._sample(node, ports)
                seen[node.node_id].append(now)
                busy = busy_ports(last[node.node_id], now)
                last[node.node_id] = now
                if busy:
                    keeps[node.node_id], windows[node.node_id] = busy, window
            if len(keeps) == len(self.targets):
                break
        for node in self.targets:
            if node.node_id not in keeps:
                raise FaultError(
                    f"{self.name}: no connection of {node.name} to the controller sent in"
                    f" {self.params['windows']} windows of {self.params['sample_s']} s;"
                    " heartbeats would be held too (bytes sent by local port, sample by"
                    f" sample: {seen[node.node_id]})"
                )
        known = {i: {p for sample in s for p in sample} for i, s in seen.items()}
        return known, keeps, windows

    def _start(self) -> None:
        self._chain = iptables.fault_chain(self.id)
        self._installed: list[int] = []
        controllers = [n for n in self.cluster.nodes if n.is_controller]
        if not controllers:
            raise FaultError(f"{self.name}: the cluster has no controller node")
        ports = controller_ports(controllers)
        for node in self.targets:
            if not node.is_broker:
                raise FaultError(
                    f"{self.name}: {node.name} is not a broker; hold a broker's requests"
                )
        known, keeps, windows = self._find_busy(set(ports))
        rules = {
            node.node_id: hold_rules(
                self.cluster.toxiproxy_ip, ports, keeps[node.node_id], self.params["action"]
            )
            for node in self.targets
        }
        kept = {n.name: sorted(keeps[n.node_id]) for n in self.targets}
        self.detail["kept_local_ports"] = kept
        self.detail["sample_windows"] = {n.name: windows[n.node_id] for n in self.targets}
        self.detail["held_connections"] = {
            n.name: sorted(known[n.node_id] - keeps[n.node_id]) for n in self.targets
        }
        self._installed = sorted(rules)
        iptables.install(self.cluster, self._chain, rules)

    def _stop(self) -> None:
        chain = getattr(self, "_chain", iptables.fault_chain(self.id))
        installed = getattr(self, "_installed", [])
        # the effect, read before the chain goes: what the targets sent to the controller
        # ports that the rules dropped (the stop line's ``held_packets``)
        counts = {n: iptables.dropped(self.cluster, chain, n) for n in installed}
        if installed:
            self.detail["held_packets"] = {
                self.cluster.node(n).name: c for n, c in counts.items() if c is not None
            }
        iptables.remove(self.cluster, chain, installed)
