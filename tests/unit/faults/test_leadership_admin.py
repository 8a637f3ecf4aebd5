"""The leadership moves' admin calls against fake admin clients: each partition's outcome
of a preferred election, and a reassignment a partition refused."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import kafka
import pytest
from kafka.errors import NotControllerError

from kchaos.faults import leadership
from kchaos.harness.errors import FaultError


class Future:
    def __init__(self, value: object) -> None:
        self.value = value

    def result(self, timeout: float) -> object:
        return self.value


class Err:
    def __init__(self, name: str) -> None:
        self._name = name

    def name(self) -> str:
        return self._name


class ConfluentAdmin:
    """list_topics and elect_leaders of confluent-kafka's AdminClient: topic ``t`` with
    partitions 0 and 1 on replicas [1, 2, 3]; partition 1 needs no election."""

    def __init__(self) -> None:
        self.elected: list[Any] | None = None

    def list_topics(self, topic: str, timeout: float) -> Any:
        parts = {p: SimpleNamespace(replicas=[1, 2, 3]) for p in (1, 0)}
        meta = SimpleNamespace(partitions=parts, error=None)
        return SimpleNamespace(topics={"t": meta})

    def elect_leaders(self, kind: object, parts: list[Any] | None) -> Future:
        self.elected = parts
        return Future(
            {tp: None if tp.partition == 0 else Err("ELECTION_NOT_NEEDED") for tp in parts or ()}
        )


class KafkaAdmin:
    """kafka-python's KafkaAdminClient: partition 1 of the move is refused."""

    made: list[KafkaAdmin] = []

    def __init__(self, **conf: Any) -> None:
        self.closed = False
        KafkaAdmin.made.append(self)

    def alter_partition_reassignments(
        self, moves: dict[Any, Any], timeout_ms: int
    ) -> dict[Any, Any]:
        return {tp: None if tp.partition == 0 else NotControllerError for tp in moves}

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> ConfluentAdmin:
    fake = ConfluentAdmin()
    monkeypatch.setattr(leadership, "_admin", lambda bootstrap: fake)
    return fake


def test_each_partition_of_the_election_has_its_outcome(admin: ConfluentAdmin) -> None:
    assert leadership.elect_preferred("b:9092", "t") == {
        "t/0": "elected",
        "t/1": "ELECTION_NOT_NEEDED",
    }
    assert [(tp.topic, tp.partition) for tp in admin.elected or ()] == [("t", 0), ("t", 1)]


def test_a_refused_move_is_a_fault_error_naming_the_partition(
    admin: ConfluentAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka, "KafkaAdminClient", KafkaAdmin)
    KafkaAdmin.made.clear()
    cluster = SimpleNamespace(bootstrap_servers="b:9092")
    move = leadership.Reassign(cluster, [], {"topic": "t"})
    with pytest.raises(FaultError) as err:
        move._start()
    assert str(err.value) == "reassign: refused: {'t/1': 'NotControllerError'}"
    assert [a.closed for a in KafkaAdmin.made] == [True]
