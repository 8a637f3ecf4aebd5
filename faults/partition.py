"""Network partitions with iptables in the nodes' network namespaces, and client cuts.

What a cut means in this topology is explained in :mod:`kchaos.faults.iptables`: a rule in
node A's network namespace (applied from the host, so the image needs no iptables) drops
what A sends to node B's replication and controller proxy ports, so A can no longer open
(or use) connections to B; B's connections to A still work unless the cut is both ways.
Clients (the harness on the host) reach brokers through the client proxies, which
partitions leave alone; ``client-cut`` and ``isolate`` with ``clients: true`` cut them with
Toxiproxy instead.

Families:

``isolate``  the targets (default: one random broker) cut from every other node, both ways
``split``    the targets (default: a random minority) cut from the rest, both ways
``cut``      one-way: the targets cannot reach the nodes of ``to`` (default: every other)
``bridge``   the others split in two halves that cannot reach each other; the target (the
             bridge) still talks to both halves
``client-cut``  the clients cannot reach the targets (Toxiproxy client proxies)
"""

from __future__ import annotations

from functools import partial
from typing import ClassVar

from kchaos.faults import iptables
from kchaos.faults.base import Fault, register
from kchaos.faults.heal import HealContext, register_heal
from kchaos.faults.network import TOXIC_PREFIX, proxy_names
from kchaos.faults.params import Param
from kchaos.faults.targets import resolve
from kchaos.harness.errors import HealError

ACTION = Param(
    "action",
    "str",
    "drop",
    "drop packets (peers time out) or reject with a TCP reset (peers fail fast)",
    choices=("drop", "reject"),
)
CLIENTS = Param("clients", "bool", False, "also cut the clients from the targets")


class IptablesPartition(Fault):
    """Base: compute (from, to) pairs in ``_pairs``; install them as one chain per node."""

    family = "partition"
    params_spec: ClassVar[tuple[Param, ...]] = (ACTION,)

    def _pairs(self) -> set[iptables.Pair]:
        raise NotImplementedError

    def _start(self) -> None:
        self._chain = iptables.fault_chain(self.id)
        self._installed: list[int] = []
        self._client_cut: ClientCut | None = None
        nodes = {n.node_id: n for n in self.cluster.nodes}
        pairs = self._pairs()
        name = {i: n.name for i, n in nodes.items()}
        self.detail["blocked"] = sorted([name[a], name[b]] for a, b in pairs)
        rules = iptables.rules_by_node(
            pairs, nodes, self.cluster.toxiproxy_ip, action=self.params["action"]
        )
        # Record what we touch before touching it, so a failure half-way is undone.
        self._installed = sorted(rules)
        iptables.install(self.cluster, self._chain, rules)
        if self.params.get("clients"):
            self._client_cut = ClientCut(
                self.cluster, self.targets, {"mode": "drop"}, fault_id=self.id + "c"
            )
            self._client_cut.start()

    def _stop(self) -> None:
        errors = []
        if getattr(self, "_client_cut", None) is not None:
            try:
                self._client_cut.stop()  # type: ignore[union-attr]
            except HealError as exc:
                errors.append(str(exc))
        try:
            iptables.remove(self.cluster, self._chain, getattr(self, "_installed", []))
        except HealError as exc:
            errors.append(str(exc))
        if errors:
            raise HealError("; ".join(errors))

    def _others(self) -> list[int]:
        mine = {n.node_id for n in self.targets}
        return [n.node_id for n in self.cluster.nodes if n.node_id not in mine]


@register
class Isolate(IptablesPartition):
    """The target nodes lose every peer link, both ways; clients too with clients=true."""

    name = "isolate"
    summary = "target nodes cut from all other nodes"
    default_target = "random"
    params_spec = (ACTION, CLIENTS)

    def _pairs(self) -> set[iptables.Pair]:
        return iptables.cut_both_ways([n.node_id for n in self.targets], self._others())


@register
class Split(IptablesPartition):
    """Two sides, the targets and the rest, that cannot reach each other."""

    name = "split"
    summary = "targets (a minority by default) cut from the rest"
    default_target = "minority"
    params_spec = (ACTION, CLIENTS)

    def _pairs(self) -> set[iptables.Pair]:
        rest = [self.cluster.node(i).name for i in self._others()]
        self.detail["sides"] = [self.target_names, rest]
        return iptables.cut_both_ways([n.node_id for n in self.targets], self._others())


@register
class Cut(IptablesPartition):
    """One-way: the targets cannot open or use connections to the nodes of ``to``."""

    name = "cut"
    summary = "one-way cut: targets cannot reach the 'to' nodes"
    default_target = "random"
    params_spec = (
        ACTION,
        Param("to", "target", "all", "the nodes the targets cannot reach (target spec)"),
        Param("both_ways", "bool", False, "cut the reverse direction too"),
    )

    def _pairs(self) -> set[iptables.Pair]:
        dests = [n.node_id for n in resolve(self.cluster, self.params["to"], self.rng)]
        sources = [n.node_id for n in self.targets]
        self.detail["to"] = [self.cluster.node(i).name for i in sorted(set(dests) - set(sources))]
        if self.params["both_ways"]:
            return iptables.cut_both_ways(sources, dests)
        return iptables.cut_one_way(sources, dests)


@register
class Bridge(IptablesPartition):
    """The other nodes, shuffled by the fault's RNG, form two halves that cannot reach each
    other; the target node (the bridge) still reaches and is reached by both."""

    name = "bridge"
    summary = "two halves that both see the bridge node"
    default_target = "random"

    def _pairs(self) -> set[iptables.Pair]:
        middle = self.targets[0].node_id
        others = sorted(n.node_id for n in self.cluster.nodes if n.node_id != middle)
        self.rng.shuffle(others)
        half = len(others) // 2
        a, b = sorted(others[:half]), sorted(others[half:])
        self.detail["halves"] = [
            [self.cluster.node(i).name for i in a],
            [self.cluster.node(i).name for i in b],
        ]
        return iptables.bridge(middle, a, b)


@register
class ClientCut(Fault):
    """Clients cannot reach the target brokers: mode drop (a black-hole toxic both ways on
    the client proxy: sends time out) or refuse (the client proxy disabled: connections are
    refused and open ones closed)."""

    name = "client-cut"
    family = "partition"
    summary = "clients cut from the target brokers (Toxiproxy client proxies)"
    default_target = "random"
    params_spec = (
        Param("mode", "str", "drop", "drop (time out) or refuse", choices=("drop", "refuse")),
    )

    def _start(self) -> None:
        self._api = self.cluster.toxiproxy
        self._done: list[str] = []
        proxies = [p for n in self.targets for p in proxy_names(n, "client")]
        self.detail["proxies"] = proxies
        for proxy in proxies:
            self._done.append(proxy)
            if self.params["mode"] == "refuse":
                self._api.set_enabled(proxy, False)
            else:
                for stream in ("upstream", "downstream"):
                    self._api.add_toxic(
                        proxy, self._toxic(stream), "timeout", stream, {"timeout": 0}
                    )

    def _toxic(self, stream: str) -> str:
        return f"{TOXIC_PREFIX}{self.id}-client-cut-{stream}"

    def _stop(self) -> None:
        api = self.cluster.toxiproxy
        for proxy in getattr(self, "_done", []):
            if self.params["mode"] == "refuse":
                api.set_enabled(proxy, True, heal=True)
            else:
                for stream in ("upstream", "downstream"):
                    api.remove_toxic(proxy, self._toxic(stream))


@register_heal(40, "partition", "remove every KCHAOS iptables chain of the running nodes")
def _remove_every_chain(ctx: HealContext) -> None:
    for node in ctx.running:
        ok, out = ctx.attempt(
            f"iptables {node.name}",
            partial(iptables.run_script, ctx.cluster, node, iptables.heal_script(), heal=True),
        )
        for line in str(out or "").splitlines():
            if line.startswith("removed "):
                ctx.done.append(f"iptables on {node.name}: {line}")
