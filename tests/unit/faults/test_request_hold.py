"""``hold-request``: its rules on a real kernel, and the fault's lifecycle on fakes.

The rules are checked where they run, in a network namespace of their own (``unshare
-n``, the host's iptables, loopback standing for Toxiproxy): the first connection that
sends an EndTxn request is stopped from that request on, a second connection's EndTxn
passes, and a request of another kind passes. The fault itself is checked with a fake
cluster and client directory: where it installs the chain, what its stop reads and
records, its refusal of a client without a container of its own, and the effect measure
on each kind of stop line.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from faults_fakes import FakeCluster

from kchaos.faults import clients, iptables, make_fault
from kchaos.faults.request_hold import (
    API_KEYS,
    HoldRequest,
    hold_rules,
    parse_caught,
    unsent_sockets,
)
from kchaos.harness.checker import effects
from kchaos.harness.cluster import hostnet
from kchaos.harness.errors import ClientGone, FaultError, HealError

TID = "kchaos-t-1"

# Three connections to a server on loopback, each sending one Kafka-framed request
# (int32 size, int16 api key, int16 version, then bytes); prints which the server got.
_PROBE = textwrap.dedent(
    """
    import socket, struct, sys, time
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(8); srv.settimeout(0.2)
    port = srv.getsockname()[1]
    def request(api):
        body = struct.pack(">hhi", api, 3, 7) + b"txn"
        return struct.pack(">i", len(body)) + body
    sent = []
    for name, api in (("first-endtxn", 26), ("second-endtxn", 26), ("produce", 0)):
        c = socket.create_connection(("127.0.0.1", port)); c.sendall(request(api))
        sent.append((name, c)); time.sleep(0.2)
    got, conns, deadline = set(), [], time.time() + 1.5
    while time.time() < deadline:
        try:
            conn, _ = srv.accept(); conn.settimeout(0.05); conns.append(conn)
        except socket.timeout:
            pass
        for conn in conns:
            try:
                data = conn.recv(100)
            except socket.timeout:
                continue
            if len(data) >= 6:
                got.add((struct.unpack(">h", data[4:6])[0], conn.getpeername()[1]))
    local = {c.getsockname()[1]: name for name, c in sent}
    print(" ".join(sorted(local[p] for _, p in got)))
    """
)


def test_the_rules_stop_the_first_endtxn_connection_only() -> None:
    for tool in ("unshare", "iptables", "ip"):
        assert shutil.which(tool), f"{tool} is needed on this host (compose/setup.sh)"
    chain = iptables.fault_chain("f-9")
    rules = hold_rules("127.0.0.1", API_KEYS["EndTxn"], 0x4B430009, "KCf-9")
    script = "\n".join(
        [
            "ip link set lo up",
            iptables.install_script(chain, rules),
            f"{sys.executable} - <<'PROBE'\n{_PROBE}\nPROBE",
            iptables.counters_script(chain),
        ]
    )
    done = subprocess.run(
        ["unshare", "-n", "sh", "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    received = next(line for line in out.splitlines() if "endtxn" in line or "produce" in line)
    assert received.split() == ["produce", "second-endtxn"], out
    listing = out[out.index("Chain ") :]
    assert parse_caught(listing) == 1
    assert (iptables.parse_dropped(listing) or 0) >= 1  # the request and its retransmissions


def test_the_rules_read_the_api_key_after_the_ip_and_tcp_headers() -> None:
    rules = hold_rules("10.1.2.2", 26, 0x4B430001, "KCf-1")
    assert rules[0] == rules[3] == ["-m", "connmark", "--mark", "0x4b430001", "-j", "DROP"]
    assert "0>>22&0x3C@12>>26&0x3C@4>>16=0x1A" in rules[1]
    assert rules[1][-2:] == ["-j", "RETURN"] and "--rcheck" in rules[1]
    assert rules[2][-4:] == ["-j", "CONNMARK", "--set-mark", "0x4b430001"]
    # the expression survives the shell the script runs in
    script = iptables.install_script("KCHAOS-f-1", rules)
    assert "'0>>22&0x3C@12>>26&0x3C@4>>16=0x1A'" in script


def test_unsent_sockets_keeps_the_peers_sockets_with_bytes_queued() -> None:
    out = textwrap.dedent(
        """\
        FIN-WAIT-1 0      50     10.9.0.224:44270 10.9.0.2:19001
        ESTAB      0      0      10.9.0.224:44300 10.9.0.2:19002
        ESTAB      0      49     10.9.0.224:44310 10.9.0.2:19003
        ESTAB      0      12     10.9.0.224:7300  10.9.0.1:50000
        """
    )
    assert unsent_sockets(out, "10.9.0.2") == {44270: ("FIN-WAIT-1", 50), 44310: ("ESTAB", 49)}


class _Worker:
    def __init__(self, address: str | None) -> None:
        self.process = 1
        self.pid = 4242
        self._address = address

    def open_transactions(self) -> list[str]:
        return []

    def init_result(self) -> dict[str, Any] | None:
        return None

    def address(self) -> str | None:
        return self._address


class _Directory:
    def __init__(self, address: str | None) -> None:
        self.worker = _Worker(address)

    def txn_client(self, transactional_id: str) -> _Worker:
        if transactional_id != TID:
            raise LookupError(f"no worker holds {transactional_id}")
        return self.worker

    def replace_txn_client(self, transactional_id: str) -> _Worker:
        raise AssertionError("hold-request never replaces a worker")


class _ClientNet:
    """``client_net_exec`` of a fake cluster: records scripts, answers ``ss`` with the
    given outputs in turn (the last repeats) and the counters with ``listing``."""

    def __init__(self, ss: list[str], listing: str) -> None:
        self.calls: list[tuple[str, str]] = []
        self.ss = ss
        self.listing = listing

    def __call__(self, address: str, cmd: list[str]) -> tuple[int, str]:
        script = cmd[-1]
        self.calls.append((address, script))
        if script.startswith("ss "):
            return 0, self.ss.pop(0) if len(self.ss) > 1 else self.ss[0]
        if " -L " in script:
            return 0, self.listing
        return 0, ""


_LISTING = textwrap.dedent(
    """\
    Chain KCHAOS-f-1 (1 references)
        pkts      bytes target     prot opt in     out     source               destination
           5      300 DROP       0    --  *      *       0.0.0.0/0  0.0.0.0/0  connmark match 0x4b43
           2      120 RETURN     6    --  *      *       0.0.0.0/0  10.9.0.2  u32
           1       60 CONNMARK   6    --  *      *       0.0.0.0/0  10.9.0.2  u32
           1       60 DROP       0    --  *      *       0.0.0.0/0  0.0.0.0/0  connmark match 0x4b43
    """
)


@pytest.fixture(autouse=True)
def _quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HoldRequest, "poll_s", 0.01)


def _fault(tmp_path: Path, net: _ClientNet, address: str | None) -> tuple[HoldRequest, Any]:
    cluster = FakeCluster(3, tmp_path)
    cluster.client_net_exec = net  # type: ignore[attr-defined]
    fault = make_fault(cluster, "hold-request", f"client:txn:{TID}", id="f-1", deliver_s=2)
    assert isinstance(fault, HoldRequest)
    return fault, clients.provide(cluster.run_id, _Directory(address))


def test_the_fault_holds_in_the_clients_namespace_and_watches_the_release(
    tmp_path: Path,
) -> None:
    peer = "10.9.0.2"
    ss_before = f"FIN-WAIT-1 0 50 10.9.0.224:44270 {peer}:19001\n"
    net = _ClientNet([ss_before, ss_before, ""], _LISTING.replace("10.9.0.2", peer))
    fault, provided = _fault(tmp_path, net, "10.9.0.224")
    fault.cluster.toxiproxy_ip = peer
    with provided:
        fault.start()
        assert all(address == "10.9.0.224" for address, _ in net.calls)
        assert "-j CONNMARK" in net.calls[0][1] and "KCHAOS-" in net.calls[0][1]
        fault.stop()
    assert fault.detail["held_packets"] == 6 and fault.detail["caught"] == 1
    assert fault.detail["held_sockets"] == [{"port": 44270, "state": "FIN-WAIT-1", "send_q": 50}]
    assert fault.detail["delivered_after_s"] >= 0
    assert any("-X KCHAOS-" in script for _, script in net.calls)  # the chain went


class _Replacing(_ClientNet):
    """A client container that is absent for its first ``gone`` calls (the worker is
    between two instances), or for good when ``gone`` is None."""

    def __init__(self, gone: int | None) -> None:
        super().__init__([""], _LISTING)
        self.gone = gone

    def __call__(self, address: str, cmd: list[str]) -> tuple[int, str]:
        if self.gone is None or self.gone > 0:
            if self.gone is not None:
                self.gone -= 1
            raise ClientGone(f"run r: no running client container at {address}")
        return super().__call__(address, cmd)


def test_the_start_waits_for_a_client_between_two_instances(tmp_path: Path) -> None:
    net = _Replacing(gone=3)
    fault, provided = _fault(tmp_path, net, "10.9.0.224")
    with provided:
        fault.start()
        fault.stop()
    assert "-j CONNMARK" in net.calls[0][1]  # installed once the container was there
    assert fault.detail["waited_for_client_s"] > 0


def test_a_client_that_never_comes_back_fails_the_start_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(HoldRequest, "start_wait_s", 0.05)
    net = _Replacing(gone=None)
    fault, provided = _fault(tmp_path, net, "10.9.0.224")
    with provided, pytest.raises(FaultError, match="no running client container") as err:
        fault.start()
    assert not isinstance(err.value, HealError)  # not a heal alarm: nothing was built
    assert not net.calls
    fault.stop()  # nothing installed, nothing to remove
    assert not net.calls


def test_a_librdkafka_client_is_held_in_the_hosts_namespace_under_the_runs_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripts: list[str] = []

    def host(script: str) -> tuple[int, str]:
        scripts.append(script)
        return 0, _LISTING if " -L " in script else ""

    monkeypatch.setattr(hostnet, "run", host)
    net = _ClientNet([""], _LISTING)
    fault, provided = _fault(tmp_path, net, None)
    with provided:
        fault.start()
        fault.stop()
    assert not net.calls  # nothing ran in a container
    chain = hostnet.chain_name(fault.cluster.run_id, "f-1")
    assert chain.startswith(hostnet.run_prefix(fault.cluster.run_id))
    assert f"-I OUTPUT 1 -j {chain}" in scripts[0] and "-d 10.9.0.2" in scripts[0]
    assert any(f"-X {chain}" in script for script in scripts)
    assert fault.detail["namespace"] == "host" and fault.detail["held_packets"] == 6


def test_cleanup_removes_only_the_runs_own_host_chains(monkeypatch: pytest.MonkeyPatch) -> None:
    mine = hostnet.chain_name("20261207-104122-e98b", "f-2")
    other = hostnet.chain_name("20261207-104231-1232", "f-2")
    listing = f"-P OUTPUT ACCEPT\n-N {mine}\n-N {other}\n-N KCHAOS\n-A OUTPUT -j {mine}\n"
    ran: list[str] = []

    def host(script: str) -> tuple[int, str]:
        ran.append(script)
        return 0, listing if "-S" in script else ""

    monkeypatch.setattr(hostnet, "run", host)
    done = hostnet.remove_run_chains("20261207-104122-e98b", lambda line: None)
    assert done == [f"removed host iptables chain {mine}"]
    assert any(f"-X {mine}" in script for script in ran)
    assert not any(other in script for script in ran)


class _Stopped:
    def __init__(self, stop: dict[str, Any]) -> None:
        self.fault = "hold-request"
        self.detail = {"api": "EndTxn"}
        self.stop_detail = stop
        self.targets = [f"client:txn:{TID}"]


@pytest.mark.parametrize(
    ("stop", "state"),
    [
        ({"held_packets": 6, "held_sockets": [{"state": "FIN-WAIT-1"}], "delivered_after_s": 1.4},
         effects.SEEN),
        ({"held_packets": 3, "held_sockets": [{"state": "ESTAB"}], "delivered_after_s": 0.4},
         effects.NOT_SEEN),  # released before the client gave up: not late
        ({"held_packets": 6, "held_sockets": [{"state": "FIN-WAIT-1"}], "undelivered": [44270]},
         effects.NOT_SEEN),
        ({"held_packets": 1, "held_sockets": []}, effects.NOT_SEEN),  # reset by the client
        ({"held_packets": 2}, effects.NOT_MEASURED),  # ss could not be run at the stop
        ({"held_packets": 0}, effects.NOT_SEEN),
        ({}, effects.NOT_MEASURED),
    ],
)  # fmt: skip
def test_the_effect_needs_a_request_held_past_the_clients_retry_and_delivered(
    stop: dict[str, Any], state: str
) -> None:
    got, why = effects.measure_request_hold(_Stopped(stop), None)  # type: ignore[arg-type]
    assert got == state, why
