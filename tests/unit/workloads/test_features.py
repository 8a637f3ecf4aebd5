"""run.json's ``features`` (history format 1.3): the finalized levels as read, or the
reason they could not be read; the admin client is a fake here (the docker test of
txn-smoke reads a real cluster's)."""

from __future__ import annotations

from typing import Any

from kchaos.workloads.features import finalized_levels, read_features


class FakeAdmin:
    def __init__(self, answer: Any = None, fail: Exception | None = None, **_: Any) -> None:
        self.answer, self.fail, self.closed = answer, fail, False

    def describe_features(self) -> Any:
        if self.fail is not None:
            raise self.fail
        return self.answer

    def close(self) -> None:
        self.closed = True


DESCRIBED = {
    "metadata.version": {"supported": (1, 27), "finalized": (27, 27), "finalized_epoch": 5},
    "transaction.version": {"supported": (0, 2), "finalized": (2, 2), "finalized_epoch": 5},
    "group.version": {"supported": (0, 1)},  # supported, not finalized: not in force
}


def test_finalized_levels_keep_only_finalized_features_at_their_level() -> None:
    assert finalized_levels(DESCRIBED) == {"metadata.version": 27, "transaction.version": 2}


def test_read_features_closes_its_admin_and_returns_the_levels() -> None:
    made: list[FakeAdmin] = []

    def factory(**kw: Any) -> FakeAdmin:
        made.append(FakeAdmin(DESCRIBED, **kw))
        return made[-1]

    assert read_features("a:1,b:2", factory)["transaction.version"] == 2
    assert made[0].closed


def test_an_unreadable_answer_is_recorded_as_an_error_not_guessed() -> None:
    out = read_features("a:1", lambda **kw: FakeAdmin(fail=TimeoutError("no answer"), **kw))
    assert out == {"error": "TimeoutError: no answer"}
