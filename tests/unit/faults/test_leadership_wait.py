"""reassign waits (with the cluster's Until) until Kafka has moved every partition."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from kchaos.faults import leadership
from kchaos.harness.errors import FaultError


class TP(NamedTuple):
    topic: str
    partition: int


class FakeAdmin:
    def __init__(self, pending: list[list[str]]) -> None:
        self.pending = pending
        self.asked = 0

    def list_partition_reassignments(self) -> dict[object, object]:
        topics = self.pending[min(self.asked, len(self.pending) - 1)]
        self.asked += 1
        return {TP(t, i): None for i, t in enumerate(topics)}


def _reassign() -> leadership.Reassign:
    return leadership.Reassign.__new__(leadership.Reassign)  # _wait_done uses no state


def test_waits_until_the_topic_has_no_move_left() -> None:
    admin = FakeAdmin([["t", "t"], ["t", "other"], ["other"]])
    _reassign()._wait_done(admin, "t")
    assert admin.asked == 3


def test_a_move_that_never_ends_is_a_fault_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(leadership, "TIMEOUT_S", 0.3)
    with pytest.raises(FaultError, match="reassign: still in progress after 0 s"):
        _reassign()._wait_done(FakeAdmin([["t"]]), "t")
