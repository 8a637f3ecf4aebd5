"""`client: java`: real VerifiableProducer / VerifiableConsumer output -> history lines.

The two data files are stdout captured from a real run (smoke scenario, Kafka 4.4.0
image, whose tools run kafka-clients 4.3.1; 2026-11-23), cut to a few hundred lines:
successes, TimeoutException errors, the shutdown's tool_data; assignments, polls with
their record_data lines, commits, the revocation at shutdown.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kchaos.harness.checker.parse import read_history
from kchaos.harness.rundir.history_writer import HistoryWriter, ListSink
from kchaos.workloads.java_client import (
    consumer_argv,
    consumer_properties,
    producer_argv,
    producer_properties,
    properties_text,
)
from kchaos.workloads.java_events import (
    CLOSED_IN_FLIGHT,
    NEVER_SENT,
    ConsumerEvents,
    ProducerEvents,
    java_error_name,
)
from kchaos.workloads.metrics import HarnessMetrics
from kchaos.workloads.spec import ConsumerConfig, ProducerConfig

DATA = Path(__file__).parent / "data"


def tool_lines(name: str) -> list[dict]:
    out = []
    for raw in (DATA / name).read_text().splitlines():
        if raw.startswith("{"):
            out.append(json.loads(raw))
    return out


def sends(events: list[dict]) -> dict[str, list[dict]]:
    by_value: dict[str, list[dict]] = {}
    for e in events:
        if e["f"] == "send":
            by_value.setdefault(e["value"], []).append(e)
    return by_value


def test_java_sends_are_counted_in_the_harness_metrics() -> None:
    lines = tool_lines("verifiable-producer-4.3.1.out")
    metrics = HarnessMetrics()
    events = ProducerEvents(ListSink(), 1, "smoke", single_attempt=False, metrics=metrics)
    for data in lines:
        events.line(data)
    events.finish()

    def sent(outcome: str) -> float:
        got = metrics.registry.get_sample_value("kchaos_sends_total", {"outcome": outcome})
        return got or 0.0

    assert events.counts["ok"] > 0 and events.counts["info"] > 0
    for outcome in ("ok", "fail", "info"):
        assert sent(outcome) == events.counts[outcome], outcome


def test_real_producer_output_becomes_invokes_and_completions() -> None:
    lines = tool_lines("verifiable-producer-4.3.1.out")
    sink = ListSink()
    events = ProducerEvents(sink, 1, "smoke", single_attempt=False, keys=16)
    for data in lines:
        events.line(data)
    events.finish()
    assert events.started.is_set()
    tool = [d for d in lines if d["name"] == "tool_data"][0]
    assert events.sent == tool["sent"] == 2684
    by_value = sends(sink.events)
    # every value the tool sent has exactly one invoke, first, then one completion
    assert len(by_value) == 2684
    for value, evs in by_value.items():
        assert [e["type"] for e in evs][0] == "invoke", value
        assert len(evs) == 2, value
    successes = [d for d in lines if d["name"] == "producer_send_success"]
    for d in successes:
        ok = by_value[d["value"]][1]
        assert ok["type"] == "ok"
        assert (ok["partition"], ok["offset"]) == (d["partition"], d["offset"])
    errors = [d for d in lines if d["name"] == "producer_send_error"]
    assert errors
    for d in errors:  # "Expiring N record(s)": may have been written, so unknown
        done = by_value[d["value"]][1]
        assert (done["type"], done["error"]) == ("info", "TIMED_OUT")
    # the rest were sent (below tool_data's count) but their events were cut out: unknown
    rest = [evs[1] for evs in by_value.values() if evs[1].get("error") == CLOSED_IN_FLIGHT]
    assert len(rest) == 2684 - len(successes) - len(errors)
    assert events.counts["ok"] == len(successes)
    assert by_value["1.7"][0]["key"] == "7"


def test_values_announced_but_never_sent_fail_only_with_the_tools_count() -> None:
    sink = ListSink()
    events = ProducerEvents(sink, 4, "t", single_attempt=False)
    events.line({"name": "startup_complete"})
    events.announce(5)  # the pacer ran ahead of a blocked tool
    events.line({"name": "producer_send_success", "topic": "t", "partition": 0, "offset": 0,
                 "value": "4.0"})  # fmt: skip
    events.line({"name": "tool_data", "sent": 3})
    events.finish()
    outcome = {
        e["value"]: (e["type"], e.get("error")) for e in sink.events if e["type"] != "invoke"
    }
    assert outcome == {
        "4.0": ("ok", None),
        "4.1": ("info", CLOSED_IN_FLIGHT),
        "4.2": ("info", CLOSED_IN_FLIGHT),
        "4.3": ("fail", NEVER_SENT),
        "4.4": ("fail", NEVER_SENT),
    }
    # killed before tool_data: nothing is known
    sink = ListSink()
    events = ProducerEvents(sink, 4, "t", single_attempt=False)
    events.announce(2)
    events.finish()
    assert {e["type"] for e in sink.events if e["type"] != "invoke"} == {"info"}


def test_completion_ahead_of_the_pacer_records_the_missing_invokes_first() -> None:
    sink = ListSink()
    events = ProducerEvents(sink, 2, "t", single_attempt=True)
    events.line({"name": "producer_send_error", "value": "2.2", "topic": "t",
                 "exception": "class org.apache.kafka.common.errors.NotEnoughReplicasException",
                 "message": "fewer in-sync replicas than required"})  # fmt: skip
    kinds = [(e["type"], e["value"]) for e in sink.events]
    assert kinds == [("invoke", "2.0"), ("invoke", "2.1"), ("invoke", "2.2"), ("fail", "2.2")]
    assert sink.events[-1]["error"] == "NOT_ENOUGH_REPLICAS"  # retries=0: certainly not written
    events.line({"name": "producer_send_success", "value": "9.1", "partition": 0, "offset": 1})
    assert events.unparsed == 1  # not this producer's value: ignored, counted


@pytest.mark.parametrize(
    ("exception", "name", "retried", "single"),
    [
        ("class org.apache.kafka.common.errors.TimeoutException", "TIMED_OUT", "info", "info"),
        ("class org.apache.kafka.common.errors.NotEnoughReplicasException",
         "NOT_ENOUGH_REPLICAS", "info", "fail"),
        ("class org.apache.kafka.common.errors.NotEnoughReplicasAfterAppendException",
         "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "info", "info"),
        ("class org.apache.kafka.common.errors.NotLeaderOrFollowerException",
         "NOT_LEADER_OR_FOLLOWER", "info", "info"),
        ("class org.apache.kafka.common.errors.RecordTooLargeException",
         "MSG_SIZE_TOO_LARGE", "fail", "fail"),
        ("class org.apache.kafka.common.errors.NetworkException", "NETWORK_EXCEPTION", "info",
         "info"),
        ("class java.lang.IllegalStateException", "ILLEGAL_STATE", "info", "info"),
        (None, "UNKNOWN", "info", "info"),
    ],
)  # fmt: skip
def test_java_exceptions_get_canonical_names(
    exception: str | None, name: str, retried: str, single: str
) -> None:
    from kchaos.workloads.classify import classify

    assert java_error_name(exception) == name
    assert classify(name, single_attempt=False) == retried
    assert classify(name, single_attempt=True) == single


def test_real_consumer_output_becomes_polls_assignments_and_commits() -> None:
    lines = tool_lines("verifiable-consumer-4.3.1.out")
    sink = ListSink()
    events = ConsumerEvents(sink, 3)
    for data in lines:
        events.line(data)
    events.finish()
    evs = sink.events
    assigns = [e["partitions"] for e in evs if e["f"] == "assign"]
    assert assigns == [[["smoke", 0], ["smoke", 1], ["smoke", 2]], []]  # then revoked
    consumed = [d for d in lines if d["name"] == "records_consumed"]
    polls = [e for e in evs if e["f"] == "poll" and e["type"] == "ok"]
    assert len(polls) == len(consumed) == events.polls
    for poll, summary in zip(polls, consumed, strict=True):
        assert len(poll["records"]) == summary["count"]
        for part in summary["partitions"]:
            offsets = [r["offset"] for r in poll["records"] if r["partition"] == part["partition"]]
            assert offsets[0] == part["minOffset"] and offsets[-1] == part["maxOffset"]
    first = polls[0]["records"][:2]
    assert first == [{"topic": "smoke", "partition": 0, "offset": 0, "value": "1.1"},
                     {"topic": "smoke", "partition": 0, "offset": 1, "value": "1.5"}]  # fmt: skip
    # one poll in flight: invoke, ok, invoke, ok, ...
    seq = [e["type"] for e in evs if e["f"] == "poll"]
    assert seq == ["invoke", "ok"] * len(polls)
    commits = [e for e in evs if e["f"] == "commit" and e["type"] == "ok"]
    assert commits[0]["offsets"] == [["smoke", 0, 50]]


def test_failed_commit_is_info_and_a_cut_poll_is_completed() -> None:
    sink = ListSink()
    events = ConsumerEvents(sink, 5)
    events.line({"name": "offsets_committed", "success": False, "error": "rebalance",
                 "offsets": [{"topic": "t", "partition": 0, "offset": 3}]})  # fmt: skip
    events.line({"name": "record_data", "value": "1.0", "topic": "t", "partition": 0, "offset": 0})
    events.finish()
    kinds = [(e["f"], e["type"]) for e in sink.events]
    assert kinds == [("commit", "invoke"), ("commit", "info"), ("poll", "invoke"), ("poll", "ok")]


def test_a_translated_history_passes_the_checkers_parser(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as writer:
        producer = ProducerEvents(writer, 1, "smoke", single_attempt=False, keys=16)
        for data in tool_lines("verifiable-producer-4.3.1.out"):
            producer.line(data)
        producer.finish()
        consumer = ConsumerEvents(writer, 3)
        for data in tool_lines("verifiable-consumer-4.3.1.out"):
            consumer.line(data)
    facts = read_history(path)
    assert facts is not None


def test_producer_settings_and_command_line() -> None:
    # acks 1 turns idempotence off (no enable.idempotence among the configs)
    spec = ProducerConfig(acks="1", rate=200.0, keys=4, configs={"max.block.ms": "5000"})
    props = producer_properties(spec, "kchaos-p1")
    assert props["acks"] == "1" and props["enable.idempotence"] == "false"
    assert props["retries"] == "2147483647"  # never the tool's own 0 unless asked for
    assert props["max.block.ms"] == "5000"
    argv = producer_argv("10.0.0.2:19001", "t", 7, spec)
    assert argv[argv.index("--throughput") + 1] == "200"
    assert argv[argv.index("--acks") + 1] == "1"
    assert argv[argv.index("--value-prefix") + 1] == "7"
    assert argv[argv.index("--repeating-keys") + 1] == "4"
    assert "--acks" in producer_argv("b:1", "t", 1, ProducerConfig(acks="all", rate=1.0))
    text = properties_text({"a b": "x=y\nz", "c": "d\\e"})
    assert text == "a\\ b=x=y\\nz\nc=d\\\\e\n"


def test_consumer_settings_and_command_line() -> None:
    spec = ConsumerConfig(group="g", rack="r1", configs={"group.protocol": "consumer"})
    props = consumer_properties(spec, "kchaos-c3")
    assert props["client.rack"] == "r1" and "group.protocol" not in props
    argv = consumer_argv("b:1", "t", spec)
    assert "--verbose" in argv and argv[argv.index("--group-id") + 1] == "g"
    assert argv[argv.index("--group-protocol") + 1] == "consumer"
