from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from workload_fakes import FakeConsumer

from kchaos.harness.rundir.history_writer import ListSink
from kchaos.workloads.consumer import ConsumerWorker
from kchaos.workloads.spec import ConsumerConfig
from kchaos.workloads.values import payload

# An assigning reader, and the loop's settings that make the tests quick (no commits).
ASSIGN = ConsumerConfig(mode="assign")
QUICK: dict[str, Any] = {"poll_timeout_s": 0.01, "commit_interval_s": 0}

LOGS = {
    ("t", 0): [(0, payload("1-0", 10)), (1, payload("1-2", 10))],
    ("t", 1): [(5, payload("1-1", 10))],
}


Events = list[dict[str, Any]]


def read_all(events: Events) -> bool:
    """Every record of LOGS came back in an ok poll."""
    got = {
        r["value"] for e in events if e["f"] == "poll" and e["type"] == "ok" for r in e["records"]
    }
    return got >= {"1-0", "1-1", "1-2"}


@pytest.fixture
def run_worker(eventually: Callable[..., None]) -> Callable[..., ListSink]:
    """Run a consumer on ``fake`` until ``until(events)`` holds (default: it read every
    record it could), then stop it: waits for the outcome, never a fixed time."""

    def run(
        spec: ConsumerConfig,
        fake: FakeConsumer,
        until: Callable[[Events], bool] = read_all,
        **tuning: Any,
    ) -> ListSink:
        sink = ListSink()
        worker = ConsumerWorker(9, ["t"], spec, sink, lambda: fake, **tuning)
        worker.start()
        eventually(lambda: until(list(sink.events)) or worker.error is not None, "the reads")
        worker.stop()
        assert worker.error is None
        return sink

    return run


def test_manual_assignment_records_assign_then_polls_in_order(
    run_worker: Callable[..., ListSink],
) -> None:
    fake = FakeConsumer(LOGS, low={("t", 1): 5})
    sink = run_worker(ASSIGN, fake, **QUICK)
    events = sink.events
    assert events[0] == {
        **events[0],
        "type": "ok",
        "f": "assign",
        "partitions": [["t", 0], ["t", 1]],
    }
    polls = [e for e in events if e["f"] == "poll"]
    assert polls[0]["type"] == "invoke" and polls[1]["type"] == "ok"
    assert polls[1]["records"] == [
        {"topic": "t", "partition": 0, "offset": 0, "value": "1-0"},
        {"topic": "t", "partition": 0, "offset": 1, "value": "1-2"},
        {"topic": "t", "partition": 1, "offset": 5, "value": "1-1"},
    ]
    assert all(e["process"] == 9 for e in events)
    assert fake.closed


def test_only_listed_partitions_are_assigned(run_worker: Callable[..., ListSink]) -> None:
    fake = FakeConsumer(LOGS)
    sink = run_worker(
        ASSIGN, fake, until=lambda events: any(e["f"] == "poll" for e in events), partitions=(1,),
        **QUICK,
    )  # fmt: skip
    assert sink.events[0]["partitions"] == [["t", 1]]


def test_subscription_records_every_rebalance_and_commits(
    run_worker: Callable[..., ListSink],
) -> None:
    fake = FakeConsumer(LOGS)
    fake.rebalance_on_poll = [[("t", 0), ("t", 1)], [], [("t", 1)]]  # three rebalances
    spec = ConsumerConfig(mode="subscribe")

    def three_rebalances_and_a_commit(events: Events) -> bool:
        assigns = [e for e in events if e["f"] == "assign"]
        return len(assigns) >= 3 and any(e["f"] == "commit" and e["type"] == "ok" for e in events)

    sink = run_worker(
        spec, fake, until=three_rebalances_and_a_commit, poll_timeout_s=0.01, commit_interval_s=0.05
    )
    assigns = [e["partitions"] for e in sink.events if e["f"] == "assign"]
    assert assigns[:3] == [[["t", 0], ["t", 1]], [], [["t", 1]]]
    commits = [e for e in sink.events if e["f"] == "commit"]
    assert commits and commits[0]["type"] == "invoke" and commits[1]["type"] == "ok"
    assert fake.commits >= 1


def test_a_failing_poll_is_recorded_and_reading_continues(
    run_worker: Callable[..., ListSink],
) -> None:
    fake = FakeConsumer(LOGS)
    fake.poll_failures = 1
    sink = run_worker(ASSIGN, fake, **QUICK)
    polls = [e for e in sink.events if e["f"] == "poll" and e["type"] != "invoke"]
    assert polls[0]["type"] == "fail" and "broker gone" in polls[0]["error"]
    assert any(p["type"] == "ok" and p["records"] for p in polls[1:])


def test_seek_moves_the_position_and_writes_an_assign_line(
    eventually: Callable[..., None],
) -> None:
    fake = FakeConsumer(LOGS)
    sink = ListSink()
    worker = ConsumerWorker(
        4, ["t"], ASSIGN, sink, lambda: fake, **QUICK,
    )  # fmt: skip
    worker.start()
    eventually(lambda: read_all(list(sink.events)), "every record read once")
    worker.seek("t", 0, 1)

    def read_again() -> bool:
        events = list(sink.events)
        assigns = [e["index"] for e in events if e["f"] == "assign"]
        return len(assigns) == 2 and any(
            e["index"] > assigns[1] and e.get("records") for e in events
        )

    eventually(read_again, "a read after the seek")
    worker.stop()
    assigns = [e for e in sink.events if e["f"] == "assign"]
    assert len(assigns) == 2 and assigns[1]["partitions"] == [["t", 0], ["t", 1]]
    after = [e for e in sink.events if e["index"] > assigns[1]["index"] and e.get("records")]
    assert after[0]["records"][0]["offset"] == 1


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_assign_lines_state_the_readers_isolation(
    isolation: str, run_worker: Callable[..., ListSink]
) -> None:
    spec = ConsumerConfig(mode="assign", isolation=isolation)  # type: ignore[arg-type]
    sink = run_worker(spec, FakeConsumer(LOGS), **QUICK)
    assigns = [e for e in sink.events if e["f"] == "assign"]
    assert assigns and all(e["isolation"] == isolation for e in assigns)


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_make_consumer_passes_the_isolation_level(
    monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    """read_uncommitted too: librdkafka's default is read_committed, so a confluent reader
    left to it would read (and answer ListOffsets) read_committed."""
    from kchaos.workloads import clients, confluent_client, kafkapython_client

    seen: dict[str, object] = {}
    monkeypatch.setattr(confluent_client, "ConfluentConsumer",
                        lambda *args: seen.update(extra=args[-1]))  # fmt: skip
    clients.make_consumer("confluent-kafka", "h:1", group_id="g", isolation=isolation)
    assert seen["extra"] == {"isolation.level": isolation}
    monkeypatch.setattr(kafkapython_client, "KafkaPythonConsumer",
                        lambda *args: seen.update(extra=args[-1]))  # fmt: skip
    clients.make_consumer("kafka-python", "h:1", group_id="g", isolation=isolation)
    assert seen["extra"] == {"isolation_level": isolation}
    # a config the scenario set itself wins
    clients.make_consumer("kafka-python", "h:1", group_id="g", isolation=isolation,
                          extra={"isolation_level": "read_committed"})  # fmt: skip
    assert seen["extra"] == {"isolation_level": "read_committed"}


def test_a_topic_not_yet_known_to_the_broker_asked_is_asked_for_again(
    run_worker: Callable[..., ListSink], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the CI failure of 2026-11-25: the broker a reader asked did not know the new topic
    # yet, and the reader died with UNKNOWN_TOPIC_OR_PART.
    monkeypatch.setattr("kchaos.workloads.consumer._PARTITIONS_RETRY_S", 0.01)
    fake = FakeConsumer(LOGS)
    fake.partitions_failures = 3
    sink = run_worker(ASSIGN, fake, **QUICK)
    assert fake.partitions_failures == 0
    assert sink.events[0]["partitions"] == [["t", 0], ["t", 1]]


def test_a_topic_unknown_past_the_wait_is_the_readers_error(
    monkeypatch: pytest.MonkeyPatch, eventually: Callable[..., None]
) -> None:
    monkeypatch.setattr("kchaos.workloads.consumer._PARTITIONS_RETRY_S", 0.01)
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0  # every look at the clock is a second later
        return now[0]

    fake = FakeConsumer(LOGS)
    fake.partitions_failures = 1000
    worker = ConsumerWorker(
        9, ["t"], ASSIGN, ListSink(), lambda: fake, clock=clock, poll_timeout_s=0.01,
    )  # fmt: skip
    worker.start()
    eventually(lambda: worker.error is not None, "the reader's error")
    worker.stop()
    assert "Unknown topic" in str(worker.error)
    # the deadline is read at 1 s (so 31 s); each failure reads the clock once more
    assert 1000 - fake.partitions_failures == 30
