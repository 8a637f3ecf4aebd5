"""create_new_topics waits (with the cluster's Until) until every partition is ready."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic

from kchaos.harness.errors import WorkloadError
from kchaos.workloads import topics


class FakeAdmin:
    """Answers create_topics at once; list_topics from a script of (leader, isr) states."""

    def __init__(self, states: list[tuple[int, int]]) -> None:
        self.states = states
        self.asked = 0

    def create_topics(self, new: list[NewTopic], request_timeout: float) -> dict[str, Any]:
        return {t.topic: SimpleNamespace(result=lambda timeout: None) for t in new}

    def list_topics(self, timeout: float) -> Any:
        leader, isr = self.states[min(self.asked, len(self.states) - 1)]
        self.asked += 1
        part = SimpleNamespace(leader=leader, isrs=list(range(isr)))
        meta = SimpleNamespace(error=None, partitions={0: part})
        return SimpleNamespace(topics={"t": meta})


def _with(monkeypatch: pytest.MonkeyPatch, admin: FakeAdmin) -> None:
    monkeypatch.setattr(topics, "AdminClient", lambda conf: admin)


def test_returns_once_every_partition_has_leader_and_isr(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = FakeAdmin([(-1, 0), (1, 2), (1, 3)])
    _with(monkeypatch, admin)
    topics.create_new_topics("b:9092", [NewTopic("t", 1, 3)], full_isr={"t": 3}, timeout=10)
    assert admin.asked == 3


def test_a_topic_never_ready_is_a_workload_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _with(monkeypatch, FakeAdmin([(-1, 0)]))
    with pytest.raises(WorkloadError, match=r"topics without a leader after 1 s: \['t'\]"):
        topics.create_new_topics("b:9092", [NewTopic("t", 1, 3)], timeout=1)
