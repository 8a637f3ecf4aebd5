from __future__ import annotations

from pathlib import Path

from faults_fakes import make_nodes

from kchaos.faults import iptables


def test_pairs() -> None:
    assert iptables.cut_one_way([1], [1, 2, 3]) == {(1, 2), (1, 3)}
    assert iptables.cut_both_ways([1], [2, 3]) == {(1, 2), (1, 3), (2, 1), (3, 1)}
    # a bridge: halves {1,2} and {4,5} cut, 3 untouched
    pairs = iptables.bridge(3, [1, 2], [4, 5])
    assert all(3 not in p for p in pairs)
    assert (1, 4) in pairs and (5, 2) in pairs and (1, 2) not in pairs
    assert len(pairs) == 8


def test_rules_target_the_destination_proxy_ports(tmp_path: Path) -> None:
    nodes = {n.node_id: n for n in make_nodes(3, tmp_path)}
    rules = iptables.rules_by_node({(1, 2), (3, 2)}, nodes, "10.9.0.2")
    assert sorted(rules) == [1, 3]  # rules live in the containers of the cut side
    assert rules[1] == [
        ["-p", "tcp", "-d", "10.9.0.2", "--dport", "19102", "-j", "DROP"],
        ["-p", "tcp", "-d", "10.9.0.2", "--dport", "19202", "-j", "DROP"],
    ]
    rej = iptables.rules_by_node({(2, 1)}, nodes, "10.9.0.2", action="reject")
    assert rej[2][0][-4:] == ["-j", "REJECT", "--reject-with", "tcp-reset"]


def test_client_port_never_blocked(tmp_path: Path) -> None:
    nodes = {n.node_id: n for n in make_nodes(3, tmp_path)}
    rules = iptables.rules_by_node(iptables.cut_both_ways([1], [2, 3]), nodes, "10.9.0.2")
    ports = {r[5] for rs in rules.values() for r in rs}
    assert ports == {"19101", "19201", "19102", "19202", "19103", "19203"}


def test_scripts_use_own_chains() -> None:
    chain = iptables.fault_chain("f-12")
    assert chain == "KCHAOS-f-12"
    assert len(iptables.fault_chain("x" * 80)) == 28
    script = iptables.install_script(chain, [["-p", "tcp", "-j", "DROP"]])
    assert "iptables -w -A KCHAOS-f-12 -p tcp -j DROP" in script
    assert "-I OUTPUT 1 -j KCHAOS" in script
    assert "-A KCHAOS -j KCHAOS-f-12" in script
    removal = iptables.remove_script(chain)
    assert "-D KCHAOS -j KCHAOS-f-12" in removal and "-X KCHAOS-f-12" in removal
    heal = iptables.heal_script()
    assert "-D OUTPUT -j KCHAOS" in heal and "KCHAOS*)" in heal


def test_every_script_says_when_the_host_lacks_iptables() -> None:
    # The scripts run the host's iptables in the node's namespace: a missing one is named.
    for script in (
        iptables.install_script("KCHAOS-f-1", [["-j", "DROP"]]),
        iptables.remove_script("KCHAOS-f-1"),
        iptables.heal_script(),
    ):
        assert script.splitlines()[0] == iptables.NEEDS_IPTABLES
