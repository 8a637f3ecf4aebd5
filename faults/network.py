"""Network faults through Toxiproxy: latency, bandwidth, timeout, reset-peer, slow-close.

Every listener of node i sits behind its own proxy on the Toxiproxy container
(``node-i-client``, ``node-i-replication``, ``node-i-controller``). A toxic on one of them
hits one kind of traffic *to* node i, from every peer (or client) that talks to it:

* ``link`` picks the proxies: client, replication, controller, or all three.
* ``direction``: ``upstream`` acts on bytes flowing towards node i (requests, produce
  data, follower fetch requests sent to node i as leader), ``downstream`` on bytes coming
  back from node i (responses: fetch responses carrying replicated data, produce acks),
  ``both`` adds one toxic per direction.
* ``toxicity``: the fraction of connections the toxic applies to (1.0 = all).

A latency toxic on the leader's replication proxy, downstream, delays the fetch responses
its followers wait for, so they fall behind and leave the ISR after replica.lag.time.max.ms.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from kchaos.faults.base import Fault, register
from kchaos.faults.heal import HealContext, register_heal
from kchaos.faults.params import Param
from kchaos.harness.cluster.api import LINK_CLASSES, NodeHandle
from kchaos.harness.errors import FaultError

# Every toxic kchaos adds is named kchaos-<fault id>-..., so a heal tells its own toxics
# apart (POST /reset in heal_everything removes every toxic of the run's own server).
TOXIC_PREFIX = "kchaos-"

COMMON: tuple[Param, ...] = (
    Param(
        "link",
        "str",
        "all",
        "which proxies of each target node",
        choices=(*LINK_CLASSES, "all"),
    ),
    Param(
        "direction",
        "str",
        "both",
        "upstream (towards the node), downstream (from it) or both",
        choices=("upstream", "downstream", "both"),
    ),
    Param("toxicity", "float", 1.0, "fraction of connections affected", minimum=0, maximum=1),
)


def proxy_names(node: NodeHandle, link: str) -> list[str]:
    """The Toxiproxy proxy names of a node for a link class (or all of its proxies)."""
    names = []
    for lc in LINK_CLASSES:
        if link not in ("all", lc):
            continue
        handle = node.proxies.get(lc) if node.proxies else None
        if handle is not None:
            names.append(handle.name)
        elif not node.proxies and (lc != "client" or node.is_broker):
            names.append(f"node-{node.node_id}-{lc}")
    return names


def streams(direction: str) -> tuple[str, ...]:
    return ("upstream", "downstream") if direction == "both" else (direction,)


class ToxicFault(Fault):
    """Adds one toxic per (proxy, direction) on start; removes exactly those on stop."""

    family = "network"
    toxic_type: ClassVar[str]
    # toxic attribute name -> param name
    attributes: ClassVar[dict[str, str]]

    def _toxic_attributes(self) -> dict[str, Any]:
        return {attr: self.params[p] for attr, p in self.attributes.items()}

    def _start(self) -> None:
        self._api = self.cluster.toxiproxy
        self._added: list[tuple[str, str]] = []
        plan = [
            (proxy, stream)
            for node in self.targets
            for proxy in proxy_names(node, self.params["link"])
            for stream in streams(self.params["direction"])
        ]
        if not plan:
            raise FaultError(f"{self.name}: no {self.params['link']} proxy on the targets")
        lock = threading.Lock()

        def add(item: tuple[str, str]) -> None:
            proxy, stream = item
            toxic = f"{TOXIC_PREFIX}{self.id}-{self.name}-{stream}"
            with lock:  # recorded first: a failed call may still have added it
                self._added.append((proxy, toxic))
            self._api.add_toxic(
                proxy,
                toxic,
                self.toxic_type,
                stream,
                self._toxic_attributes(),
                toxicity=self.params["toxicity"],
            )

        # One HTTP call per toxic; in parallel so that "all links of all nodes" (18
        # toxics) takes effect nearly at once.
        _each(add, plan)
        self.detail["proxies"] = sorted({p for p, _ in plan})

    def _stop(self) -> None:
        api = self.cluster.toxiproxy
        _each(lambda item: api.remove_toxic(*item), getattr(self, "_added", []))
        self._added = []


def _each(fn: Callable[[Any], object], items: Sequence[Any]) -> None:
    """fn on every item, up to 8 at a time; the first error is raised after all ran."""
    if not items:
        return
    with ThreadPoolExecutor(max_workers=min(8, len(items))) as pool:
        futures = [pool.submit(fn, item) for item in items]
    for fut in futures:
        exc = fut.exception()
        if exc is not None:
            raise exc


@register
class Latency(ToxicFault):
    """Delay every chunk of data by latency_ms +/- jitter_ms."""

    name = "latency"
    summary = "added latency with jitter"
    toxic_type = "latency"
    attributes = {"latency": "latency_ms", "jitter": "jitter_ms"}
    params_spec = (
        *COMMON,
        Param("latency_ms", "int", 100, "added delay in milliseconds", minimum=0),
        Param("jitter_ms", "int", 0, "random extra delay, +/- milliseconds", minimum=0),
    )


@register
class Bandwidth(ToxicFault):
    """Limit throughput to rate_kbps kilobytes per second."""

    name = "bandwidth"
    summary = "bandwidth limit"
    toxic_type = "bandwidth"
    attributes = {"rate": "rate_kbps"}
    params_spec = (
        *COMMON,
        Param("rate_kbps", "int", 64, "rate limit in KB/s", minimum=0),
    )


@register
class Timeout(ToxicFault):
    """Black hole: data is dropped; with timeout_ms > 0 the connection closes after it."""

    name = "timeout"
    summary = "black hole (data dropped, connection held or closed after timeout_ms)"
    toxic_type = "timeout"
    attributes = {"timeout": "timeout_ms"}
    params_spec = (
        *COMMON,
        Param("timeout_ms", "int", 0, "0 = hold connections open forever", minimum=0),
    )


@register
class ResetPeer(ToxicFault):
    """Reset a connection (TCP RST) timeout_ms after the first data it carries through the
    toxic (0 = at once); that data is swallowed, idle connections are left alone."""

    name = "reset-peer"
    summary = "connections reset with RST"
    toxic_type = "reset_peer"
    attributes = {"timeout": "timeout_ms"}
    params_spec = (
        *COMMON,
        Param("timeout_ms", "int", 0, "delay before the reset, ms", minimum=0),
    )


@register
class SlowClose(ToxicFault):
    """Delay the closing of connections by delay_ms."""

    name = "slow-close"
    summary = "connection close delayed"
    toxic_type = "slow_close"
    attributes = {"delay": "delay_ms"}
    params_spec = (
        *COMMON,
        Param("delay_ms", "int", 1000, "delay before the close, ms", minimum=0),
    )


@register_heal(30, "network", "reset Toxiproxy: no toxics, every proxy enabled")
def _reset_toxiproxy(ctx: HealContext) -> None:
    api = ctx.cluster.toxiproxy
    ok, found = ctx.attempt("toxiproxy", api.leftovers)
    if ok and found:
        ok, _ = ctx.attempt("toxiproxy reset", api.reset)
        if ok:
            ctx.done.extend(f"toxiproxy: removed {item}" for item in found)
