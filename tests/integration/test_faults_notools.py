"""Faults need nothing inside the broker image: partitions, a held controller link and
pauses on ``kchaos/kafka:<version>-notools`` (iptables, iproute2 and procps purged).

One cluster of its own on that image. Each fault's effect is observed from inside the
brokers (a TCP connect from one node to another's replication proxy) and from Kafka (the
ISR shrinks, then grows back), and its removal is checked the same way, once by the
fault's own stop and once by the stateless heal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from faults_helpers import blocked_pairs, new_topic, partition, produce, wait_for

from kchaos.faults import heal_everything, make_fault
from kchaos.faults.targets import active_controller
from kchaos.harness.cluster import Cluster
from kchaos.harness.images.notools import ensure_notools_image

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


def test_partitions_and_pauses_on_an_image_without_tools(
    kafka_images: Any, cluster_factory: Callable[..., Cluster]
) -> None:
    image = ensure_notools_image(kafka_images.kafka_version)
    c = cluster_factory(image=image)
    for node in c.nodes:
        code, out = c.exec(node, ["sh", "-c", "command -v iptables || command -v ss || true"])
        assert out.strip() == "", f"{node.name} still has {out.strip()}"

    bs = c.bootstrap_servers
    topic = new_topic(bs, "notools", min_isr=1)
    leader, isr = partition(bs, topic)
    assert blocked_pairs(c) == set()
    # a follower that is not the active controller, so no controller election gets in the way
    controller = active_controller(c)
    victim = next(i for i in sorted(isr - {leader}) if i != controller)
    others = {n.node_id for n in c.nodes} - {victim}

    # isolate, both ways: the victim reaches no one, no one reaches it, it leaves the ISR
    with make_fault(c, "isolate", str(victim)) as f:
        assert blocked_pairs(c) == {(victim, o) for o in others} | {(o, victim) for o in others}
        assert produce(bs, topic, 20, acks="1") == [None] * 20
        wait_for(lambda: partition(bs, topic) == (leader, isr - {victim}), 40, "ISR shrunk")
        assert f.detail["blocked"]
    assert blocked_pairs(c) == set()
    wait_for(lambda: partition(bs, topic)[1] == isr, 60, "ISR full after the heal")

    # one-way cut, removed by the stateless heal (as `kchaos cleanup` does after a crash)
    cut = make_fault(c, "cut", str(victim), to=str(leader))
    cut.start()
    assert blocked_pairs(c) == {(victim, leader)}
    done = heal_everything(c)
    assert f"iptables on {c.node(victim).name}: removed KCHAOS" in "\n".join(done), done
    assert blocked_pairs(c) == set()
    cut.stop()  # the chain is already gone: no error

    # holding the victim's controller requests samples its sockets with the host's ss
    # sampled longer than a broker heartbeat (2 s): 1.5 s could see none (2026-11-24)
    with make_fault(c, "hold-controller-requests", str(victim), sample_s=3) as hold:
        assert hold.detail["kept_local_ports"][c.node(victim).name]

    # pauses act from the host: SIGSTOP by pid (state read from the host's /proc), freezer
    node = c.node(victim)
    with make_fault(c, "pause", str(victim), mode="sigstop"):
        assert c.jvm_state(node) == "T"
    assert c.jvm_state(node) in ("R", "S")
    with make_fault(c, "pause", str(victim), mode="freezer"):
        assert c.container(node).status == "paused" and c.jvm_state(node) is None
    assert c.jvm_state(node) in ("R", "S")
    c.wait_ready(60)
