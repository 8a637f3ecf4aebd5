"""hold-controller-requests: which connections it keeps, the rules, the heal (with fakes)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from fakeclock import only_this_thread
from faults_fakes import FakeCluster, make_nodes

from kchaos.faults import controller_hold, iptables, make_fault
from kchaos.faults.controller_hold import busy_ports, hold_rules, parse_ss
from kchaos.harness.cluster.api import NodeHandle
from kchaos.harness.errors import FaultError

# ss -tnie state established (no State column), as iproute2 6.1 prints it
SS_1 = """Recv-Q Send-Q Local Address:Port  Peer Address:Port Process
0      0       10.9.0.11:40100      10.9.0.2:19201 uid:0 ino:1 sk:1 <->
\t cubic wscale:7,7 rto:204 bytes_sent:5000 bytes_acked:5000 segs_out:80 data_segs_out:40
0      0       10.9.0.11:40200      10.9.0.2:19201 uid:0 ino:2 sk:2 <->
\t cubic wscale:7,7 rto:204 bytes_sent:900 segs_out:12 data_segs_out:3
0      0       10.9.0.11:40300      10.9.0.2:19201 uid:0 ino:3 sk:3 <->
\t cubic wscale:7,7 rto:204 bytes_sent:70000 segs_out:900 data_segs_out:800
0      0       10.9.0.11:40400      10.9.0.2:19102 uid:0 ino:4 sk:4 <->
\t cubic wscale:7,7 rto:204 bytes_sent:99999 segs_out:9 data_segs_out:9
"""
SS_2 = (
    SS_1.replace("bytes_sent:5000", "bytes_sent:5100")
    .replace("bytes_sent:70000", "bytes_sent:71234")
    .replace("bytes_sent:99999", "bytes_sent:123456")
)


def test_parse_ss_keeps_connections_to_the_controller_ports() -> None:
    first = parse_ss(SS_1, {19201})
    assert first == {40100: 5000, 40200: 900, 40300: 70000}  # 40400 is replication
    assert parse_ss("ESTAB 0 0 10.0.0.1:5 10.0.0.2:19201\n\t segs_out:4\n", {19201}) == {5: 4}


def test_busy_ports_are_the_ones_that_sent_between_samples() -> None:
    assert busy_ports(parse_ss(SS_1, {19201}), parse_ss(SS_2, {19201})) == {40100, 40300}


# iptables -w -L CHAIN -v -x -n, as iptables 1.8 (nf_tables) prints it
LISTING = "\n".join(
    [
        "Chain KCHAOS-f-2 (1 references)",
        "    pkts      bytes target     prot opt in     out     source      destination",
        "     310    40211 RETURN     6    -- *  *  0.0.0.0/0  10.9.0.2  tcp spt:40100 dpt:19301",
        "      12      720 DROP       6    --  *      *   0.0.0.0/0  10.9.0.2  tcp dpt:19301",
        "       2      120 REJECT     6    --  *      *   0.0.0.0/0  10.9.0.2  tcp dpt:19302",
        "",
    ]
)


def test_parse_dropped_counts_drop_and_reject_rules_only() -> None:
    assert iptables.parse_dropped(LISTING) == 14
    assert iptables.parse_dropped(LISTING.split("\n      12")[0]) == 0  # RETURN only
    assert iptables.parse_dropped("iptables: No chain/target/match by that name.") is None


def test_rules_accept_kept_connections_then_drop() -> None:
    rules = hold_rules("10.9.0.2", [19201, 19202], {40100}, "drop")
    assert rules[0][-2:] == ["-j", "RETURN"] and "--sport" in rules[0]
    assert rules[1] == ["-p", "tcp", "-d", "10.9.0.2", "--dport", "19201", "-j", "DROP"]
    assert len(rules) == 4


class SsCluster(FakeCluster):
    """A fake whose ``ss`` answers with the two samples in turn."""

    def __init__(self, root: Path, samples: list[str]) -> None:
        super().__init__(2, root)
        self._nodes = make_nodes(2, root, controllers=1)
        self.state[101] = "running"
        self.samples = list(samples)

    def net_exec(self, node: NodeHandle, cmd: Sequence[str]) -> tuple[int, str]:
        if list(cmd[:1]) == ["ss"]:
            self._log("net_exec", node.name, tuple(cmd))
            return 0, self.samples.pop(0)
        if list(cmd[:2]) == ["sh", "-c"] and " -L KCHAOS-" in cmd[2]:
            self._log("net_exec", node.name, tuple(cmd))
            return 0, LISTING
        return super().net_exec(node, cmd)


def _scripts(cluster: FakeCluster) -> list[str]:
    return [c[2][2] for c in cluster.calls if c[0] == "net_exec" and c[2][:2] == ("sh", "-c")]


def test_fault_installs_then_heals_its_chain(tmp_path: Path, sleeps: list[float]) -> None:
    # the dedicated controller 101 is reached at 19200 + 101
    cluster = SsCluster(tmp_path, [SS_1.replace("19201", "19301"), SS_2.replace("19201", "19301")])
    fault = make_fault(cluster, "hold-controller-requests", "broker-1", sample_s=0.5)
    with fault:
        install = _scripts(cluster)[-1]
        assert "--sport 40100 -j RETURN" in install and "--sport 40300 -j RETURN" in install
        assert "--dport 19301 -j DROP" in install and "40200" not in install
        assert fault.detail["held_connections"] == {"broker-1": [40200]}
        assert "held_packets" not in fault.detail
    assert "-X KCHAOS-" in _scripts(cluster)[-1]
    # the counters are read before the chain is removed, into the stop line's detail
    assert " -L KCHAOS-" in _scripts(cluster)[-2]
    assert fault.detail["held_packets"] == {"broker-1": 14}


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The fault's pauses between samples, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(controller_hold.time, "sleep", only_this_thread(slept.append))
    return slept


def test_fault_refuses_when_nothing_sent(tmp_path: Path, sleeps: list[float]) -> None:
    cluster = SsCluster(tmp_path, [SS_1.replace("19201", "19301")] * 4)
    fault = make_fault(cluster, "hold-controller-requests", "broker-1", sample_s=0.5, windows=3)
    with pytest.raises(FaultError, match="heartbeats would be held too") as err:
        fault.start()
    assert "in 3 windows of 0.5 s" in str(err.value)
    assert str(err.value).count("40100: 5000") == 4  # every sample is in the message
    assert sleeps == [0.5, 0.5, 0.5] and cluster.samples == []
    assert not any("-j DROP" in s for s in _scripts(cluster))


def test_a_silent_window_is_followed_by_another(tmp_path: Path, sleeps: list[float]) -> None:
    # right after a heal the broker's clients may open new connections that carry the
    # requests while the old ones stay established and silent (measured on 4.4.0): the
    # first window then sees nothing sent on a known port, and the next compares with it
    silent, busy = SS_1.replace("19201", "19301"), SS_2.replace("19201", "19301")
    cluster = SsCluster(tmp_path, [silent, silent, busy])
    fault = make_fault(cluster, "hold-controller-requests", "broker-1", sample_s=0.5)
    with fault:
        assert fault.detail["kept_local_ports"] == {"broker-1": [40100, 40300]}
        assert fault.detail["sample_windows"] == {"broker-1": 2}
        assert sleeps == [0.5, 0.5] and cluster.samples == []
