"""The cluster's observer (the admin client that triggers read through): a failed read
drops it, so the next read starts a client that only talks to brokers that answer."""

from __future__ import annotations

from typing import Any

import pytest

from kchaos.harness.cluster.cluster import Cluster
from kchaos.harness.errors import ClusterError


class _Partition:
    isrs = [3, 1, 2]
    leader = 1


class _Topic:
    error = None
    partitions = {0: _Partition()}


class _Metadata:
    topics = {"t": _Topic()}
    brokers = {1: None, 2: None, 3: None}


class FakeAdmin:
    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.calls = 0

    def list_topics(self, **_: Any) -> _Metadata:
        self.calls += 1
        if self.fail:
            raise RuntimeError("KafkaError{code=_TRANSPORT,val=-195,str=timed out}")
        return _Metadata()


def test_a_failed_read_drops_the_observer_and_the_next_read_uses_a_new_one() -> None:
    c = Cluster()
    made: list[FakeAdmin] = []

    def admin(**_: Any) -> FakeAdmin:
        made.append(FakeAdmin(fail=not made))  # the first client is stuck, the next answers
        return made[-1]

    c.admin = admin  # type: ignore[method-assign]
    with pytest.raises(ClusterError, match="timed out"):
        c.partition_isr("t", 0)
    assert c.partition_isr("t", 0) == [1, 2, 3]
    assert c.alive_brokers() == {1, 2, 3}
    # the answering client is kept: two reads, one client
    assert len(made) == 2 and made[1].calls == 2
