"""apply_each and release_each, the two halves of a pause or a disk freeze over its
targets: a node is marked before it is touched, and every marked node is released even
when another's release fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_fakes import make_nodes

from kchaos.faults.cycle import apply_each, release_each
from kchaos.harness.cluster.api import NodeHandle
from kchaos.harness.errors import HealError


def test_a_node_whose_apply_failed_is_marked_for_release(tmp_path: Path) -> None:
    nodes = make_nodes(3, tmp_path)
    applied: set[int] = set()

    def apply(node: NodeHandle) -> None:
        if node.node_id == 2:
            raise RuntimeError("no such container")

    with pytest.raises(RuntimeError):
        apply_each(nodes, applied, apply)
    assert applied == {1, 2}  # 3 was never reached


def test_every_marked_node_is_released_and_the_failures_are_one_error(tmp_path: Path) -> None:
    nodes = make_nodes(3, tmp_path)
    applied = {1, 2, 3}
    released = []

    def release(node: NodeHandle) -> None:
        if node.node_id == 2:
            raise RuntimeError("still frozen")
        released.append(node.node_id)

    with pytest.raises(HealError) as err:
        release_each(nodes, applied, release, "thaw")
    assert str(err.value) == "thaw failed: broker-2: still frozen"
    assert released == [1, 3] and applied == {2}
    release_each(nodes[2:], applied, release, "thaw")  # unmarked nodes are left alone
    assert released == [1, 3]
