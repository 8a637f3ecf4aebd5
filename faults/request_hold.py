"""``hold-request``: one connection of a client is stopped at its next request of one kind
(``EndTxn`` by default), and everything it sends after is held until the fault ends.

Why: KAFKA-17754 needs an ``EndTxn`` that reaches the coordinator late, after the client
retried it on a new connection and began its next transaction. A Toxiproxy toxic cannot
do that: a proxy keeps send order across its connections and copies its toxics to every
new one, so the retry can never overtake the held original (docs/tickets.md). Holding the
one connection in the client's own network namespace can.

How: the target is a transactional worker (``client:txn:ID``). When its Kafka client runs
in a container of its own (``workload.client: java``) the chain goes in that container's
namespace, which carries only that producer's connections (:mod:`kchaos.faults.iptables`,
the host's iptables through nsenter). A librdkafka worker runs in the harness's host: the
chain then goes in the host's own namespace, named for the run
(:mod:`kchaos.harness.cluster.hostnet`, which ``kchaos cleanup`` also clears), and its
rules match only packets to the run's Toxiproxy address, where only this run's clients
send; an EndTxn there comes from a transactional producer of the run, so give such a run
one. Four rules on the client's packets to Toxiproxy:

1. a packet of a connection already marked is dropped;
2. a packet whose TCP payload starts a request of the API key (``u32``: the int16 after
   the request's size) passes once one connection has been caught (``recent --rcheck``);
3. otherwise such a packet names the catch (``recent --set``) and marks its connection
   (``CONNMARK``);
4. and the marked packet is dropped.

So exactly one connection is stopped, at the first request of that kind it sends after
the start, with all it sends later (its own retransmissions included); the client times
the request out, closes that connection and retries on a new one, which rule 2 lets
through. When the fault stops the chain goes and the kernel's next retransmission of
the closed connection (the socket lingers as an orphan until its data is acknowledged)
delivers the held request: Toxiproxy passes it on before it passes on the close.

Effect: the stop line's ``held_packets`` (packets the drop rules matched, the first and
its retransmissions) and ``caught`` (connections marked, 0 or 1), read from the rules'
counters before the chain goes; and the release: ``held_sockets`` (the client's sockets
to Toxiproxy with bytes not yet acknowledged just before the chain goes, ``ss``: local
port, TCP state, Send-Q) and ``delivered_after_s``, how long after the chain went until
none of them had a byte unacknowledged (Toxiproxy took the held request), or
``undelivered`` when some still had after ``deliver_s``.
"""

from __future__ import annotations

import re
import time
import zlib
from typing import ClassVar

from kchaos.faults import clients, iptables
from kchaos.faults.base import Fault, register
from kchaos.faults.params import Param
from kchaos.harness.cluster import hostnet
from kchaos.harness.errors import ClientGone, ClusterError, FaultError, HealError

#: Request kinds the fault can catch, by their Kafka API key (the protocol's ApiKeys).
API_KEYS: dict[str, int] = {
    "Produce": 0,
    "InitProducerId": 22,
    "AddPartitionsToTxn": 24,
    "AddOffsetsToTxn": 25,
    "EndTxn": 26,
    "TxnOffsetCommit": 28,
}


def request_match(api_key: int) -> list[str]:
    """iptables arguments matching a TCP segment whose payload begins a Kafka request of
    ``api_key``: skip the IP header (its IHL) and the TCP header (its data offset), then
    the request's int32 size; the int16 there is the API key."""
    return ["-m", "u32", "--u32", f"0>>22&0x3C@12>>26&0x3C@4>>16=0x{api_key:X}"]


def hold_rules(toxiproxy_ip: str, api_key: int, mark: int, name: str) -> list[list[str]]:
    """The four rules of the module docstring, in order."""
    to_proxy = ["-p", "tcp", "-d", toxiproxy_ip]
    request = request_match(api_key)
    marked = ["-m", "connmark", "--mark", f"0x{mark:x}", "-j", "DROP"]
    return [
        marked,
        [*to_proxy, *request, "-m", "recent", "--name", name, "--rcheck", "-j", "RETURN"],
        [*to_proxy, *request, "-m", "recent", "--name", name, "--set",
         "-j", "CONNMARK", "--set-mark", f"0x{mark:x}"],
        marked,
    ]  # fmt: skip


def parse_caught(text: str) -> int | None:
    """Packets the CONNMARK rule matched (connections caught) in ``iptables -L -v -x -n``
    output; None when the text is no listing."""
    if not any(line.startswith("Chain ") for line in text.splitlines()):
        return None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[0].isdigit() and fields[2] == "CONNMARK":
            return int(fields[0])
    return 0


# ``ss -tnH`` line: State Recv-Q Send-Q Local:Port Peer:Port
_SOCKET = re.compile(r"^(\S+)\s+\d+\s+(\d+)\s+\S+:(\d+)\s+(\S+):\d+")


def unsent_sockets(ss_output: str, peer: str) -> dict[int, tuple[str, int]]:
    """``ss -tnH`` output -> local port -> (state, Send-Q) of the sockets to ``peer``
    that hold bytes not yet acknowledged."""
    found = {}
    for line in ss_output.splitlines():
        m = _SOCKET.match(line.strip())
        if m and m.group(4) == peer and int(m.group(2)) > 0:
            found[int(m.group(3))] = (m.group(1), int(m.group(2)))
    return found


@register
class HoldRequest(Fault):
    """Stop one client connection at its next request of a kind; release it at the end."""

    name = "hold-request"
    family = "client"
    summary = "hold one client connection from its next request of a kind (EndTxn) to the stop"
    default_target = "client:txn:ID"
    min_targets = 0
    takes_client = True
    params_spec = (
        Param("api", "str", "EndTxn", "the request kind that stops the connection",
              choices=tuple(API_KEYS)),
        Param("deliver_s", "float", 15.0,
              "after the release, how long to watch the held bytes being acknowledged",
              minimum=0),
    )  # fmt: skip
    poll_s: ClassVar[float] = 0.2
    #: how long the start waits for the client's container when there is none: a
    #: transactional worker replaces its container when it re-initialises (remove, then
    #: create, under a second), and a fault timed for that instant must still start
    start_wait_s: ClassVar[float] = 10.0
    mark_base: ClassVar[int] = 0x4B430000  # "KC" and 16 bits of the fault id

    @property
    def target_names(self) -> list[str]:
        return [f"client:{self.client}"]

    def _address(self) -> str | None:
        if self.client is None:
            raise FaultError(f"{self.name}: needs a target {self.default_target}")
        _kind, tid = clients.parse_client(self.client)
        try:
            worker = clients.directory(self.cluster.run_id).txn_client(tid)
        except LookupError as exc:
            raise FaultError(f"client:{self.client}: {exc}") from exc
        return worker.address()

    def _run(self, script: str, *, heal: bool) -> str:
        err = HealError if heal else FaultError
        try:
            if self._where is None:
                code, out = hostnet.run(script)
            else:
                code, out = self.cluster.client_net_exec(self._where, ["sh", "-c", script])
        except ClusterError as exc:
            raise err(f"iptables for client:{self.client}: {exc}") from exc
        if code != 0:
            raise err(f"iptables for client:{self.client} exited {code}: {out.strip()[-400:]}")
        return out

    def _start(self) -> None:
        self._where = self._address()
        api = self.params["api"]
        key = f"{self.cluster.run_id}/{self.id}" if self._where is None else self.id
        mark = self.mark_base | (zlib.crc32(key.encode()) & 0xFFFF)
        recent = f"KC{zlib.crc32(key.encode()):08x}"
        rules = hold_rules(self.cluster.toxiproxy_ip, API_KEYS[api], mark, recent)
        self.detail.update(api=api, api_key=API_KEYS[api])
        if self._where is None:
            self._chain = hostnet.chain_name(self.cluster.run_id, self.id)
            self._remove = hostnet.remove_script(self._chain)
            script = hostnet.install_script(self._chain, rules)
            self.detail["namespace"] = "host"
        else:
            self._chain = iptables.fault_chain(self.id)
            self._remove = iptables.remove_script(self._chain)
            script = iptables.install_script(self._chain, rules)
            self.detail.update(namespace="client container", address=self._where)
        self._installed = False
        try:
            self._install(script)
        except FaultError as exc:
            if not isinstance(exc.__cause__, ClientGone):  # no container: nothing was built
                self._run(self._remove, heal=True)  # a half-built chain must not stay
            raise
        self._installed = True

    def _install(self, script: str) -> None:
        """Run the install script, waiting up to :attr:`start_wait_s` for the client's
        container while it has none (between two instances of the worker)."""
        started = time.monotonic()
        waited = False
        while True:
            try:
                self._run(script, heal=False)
            except FaultError as exc:
                gone = isinstance(exc.__cause__, ClientGone)
                if not gone or time.monotonic() - started >= self.start_wait_s:
                    raise
                waited = True
                time.sleep(type(self).poll_s)
                continue
            if waited:
                self.detail["waited_for_client_s"] = round(time.monotonic() - started, 2)
            return

    def _stop(self) -> None:
        if not getattr(self, "_installed", False):
            return
        try:
            listing = self._run(iptables.counters_script(self._chain), heal=True)
        except HealError:
            listing = ""  # the container went (the worker was replaced): nothing to read
        held = iptables.parse_dropped(listing)
        if held is not None:
            self.detail["held_packets"] = held
            self.detail["caught"] = parse_caught(listing)
        sockets = self._unsent() if held else None
        try:
            self._run(self._remove, heal=True)
        except HealError as exc:
            if not isinstance(exc.__cause__, ClientGone):
                raise
        self._installed = False
        if sockets is not None:
            # empty: the held connection was gone before the release (the client reset
            # it), so nothing held is left to arrive late
            self.detail["held_sockets"] = [
                {"port": port, "state": state, "send_q": queued}
                for port, (state, queued) in sorted(sockets.items())
            ]
        if sockets:
            self._watch_release(set(sockets))

    def _unsent(self) -> dict[int, tuple[str, int]] | None:
        """The client's sockets to Toxiproxy with bytes unacknowledged; None when ``ss``
        cannot be run there (a measure, never a reason for the stop to fail)."""
        try:
            out = self._run(f"ss -tnH dst {self.cluster.toxiproxy_ip}", heal=True)
        except HealError:
            return None
        return unsent_sockets(out, self.cluster.toxiproxy_ip)

    def _watch_release(self, ports: set[int]) -> None:
        """Wait until no socket of ``ports`` has a byte unacknowledged (gone, or Send-Q
        0): the kernel's retransmission reached Toxiproxy."""
        released = time.monotonic()
        deadline = released + float(self.params["deliver_s"])
        while True:
            left = {p: v for p, v in (self._unsent() or {}).items() if p in ports}
            if not left:
                self.detail["delivered_after_s"] = round(time.monotonic() - released, 2)
                return
            if time.monotonic() >= deadline:
                self.detail["undelivered"] = sorted(left)
                return
            time.sleep(type(self).poll_s)
