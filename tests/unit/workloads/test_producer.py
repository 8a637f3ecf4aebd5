from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from workload_fakes import FakeProducer

from kchaos.harness.rundir.history_writer import ListSink
from kchaos.workloads.clients import SendCallback, SendResult
from kchaos.workloads.metrics import HarnessMetrics
from kchaos.workloads.producer import CLOSED_IN_FLIGHT, ProducerWorker
from kchaos.workloads.spec import ProducerConfig

# Producers as the tests want them: unpaced, unkeyed, and never held back by the cap on
# unacknowledged sends (the tests complete sends by hand).
FREE = ProducerConfig(rate=0, keys=0, max_in_flight=10000)


def start_worker(
    spec: ProducerConfig, n_sends: int, metrics: HarnessMetrics | None = None
) -> tuple[ProducerWorker, FakeProducer, ListSink]:
    sink = ListSink()
    made: list[FakeProducer] = []

    def factory(on_done: SendCallback) -> FakeProducer:
        made.append(FakeProducer(on_done))
        return made[0]

    worker = ProducerWorker(3, ["t"], spec, sink, factory, metrics=metrics)
    worker.start()
    deadline = time.monotonic() + 5
    while worker.counts["invoke"] < n_sends and time.monotonic() < deadline:
        time.sleep(0.001)
    worker.request_stop()
    return worker, made[0], sink


def by_value(sink: ListSink) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for event in sink.events:
        out.setdefault(event["value"], []).append(event)
    return out


def test_every_send_has_one_invoke_and_one_completion() -> None:
    metrics = HarnessMetrics()
    worker, client, sink = start_worker(replace(FREE, rate=2000.0, keys=2), 20, metrics)
    time.sleep(0.05)
    sent = list(client.sent)
    assert len(sent) >= 20
    client.complete(sent[0][3], SendResult(partition=1, offset=42))
    client.complete(sent[1][3], SendResult(error="MSG_SIZE_TOO_LARGE"))
    client.complete(sent[2][3], SendResult(error="_MSG_TIMED_OUT"))
    client.complete(sent[3][3], SendResult(error="NOT_ENOUGH_REPLICAS"))
    client.complete(sent[0][3], SendResult(partition=1, offset=42))  # duplicate callback
    worker.stop(close_timeout=0.0)
    events = by_value(sink)
    assert len(events) == len(sent)
    for value, lines in events.items():
        assert [e["type"] for e in lines][0] == "invoke", value
        assert len(lines) == 2, lines
    assert events[sent[0][3]][1] | {} == {
        **events[sent[0][3]][1],
        "type": "ok",
        "partition": 1,
        "offset": 42,
    }
    assert events[sent[1][3]][1]["type"] == "fail"
    assert events[sent[2][3]][1]["type"] == "info"
    assert events[sent[3][3]][1]["type"] == "info"  # retries enabled: may have been written
    rest = [events[s[3]][1] for s in sent[4:]]
    assert all(e["type"] == "info" and e["error"] == CLOSED_IN_FLIGHT for e in rest)
    assert client.closed
    assert {e["key"] for lines in events.values() for e in lines if "key" in e} == {"k0", "k1"}
    assert metrics.value("kchaos_sends_total", {"outcome": "ok"}) == 1
    assert metrics.value("kchaos_sends_total", {"outcome": "fail"}) == 1
    assert metrics.value("kchaos_sends_total", {"outcome": "info"}) == len(sent) - 2
    assert worker.counts["ok"] + worker.counts["fail"] + worker.counts["info"] == len(sent)


def test_values_are_unique_and_invokes_precede_completions() -> None:
    worker, client, sink = start_worker(FREE, 500)
    for _, _, _, value in list(client.sent):
        client.complete(value, SendResult(partition=0, offset=1))
    worker.stop(close_timeout=0.0)
    invokes = [e["value"] for e in sink.events if e["type"] == "invoke"]
    assert len(invokes) == len(set(invokes)) >= 500
    position = {}
    for event in sink.events:
        if event["type"] == "invoke":
            position[event["value"]] = event["index"]
        else:
            assert position[event["value"]] < event["index"]


def test_single_attempt_producer_records_not_enough_replicas_as_fail() -> None:
    spec = replace(FREE, configs={"enable.idempotence": "false", "retries": "0"})
    worker, client, sink = start_worker(spec, 1)
    client.complete(client.sent[0][3], SendResult(error="NOT_ENOUGH_REPLICAS"))
    worker.stop(close_timeout=0.0)
    first = [e for e in sink.events if e["value"] == client.sent[0][3]]
    assert first[-1]["type"] == "fail"


def test_queue_full_is_retried_and_other_refusals_fail(eventually: Callable[..., None]) -> None:
    sink = ListSink()
    holder: list[FakeProducer] = []

    def factory(on_done: SendCallback) -> FakeProducer:
        fake = FakeProducer(on_done)
        fake.refusals = ["QUEUE_FULL", "QUEUE_FULL", "MSG_SIZE_TOO_LARGE"]
        holder.append(fake)
        return fake

    worker = ProducerWorker(1, ["t"], replace(FREE, rate=1000.0), sink, factory)
    worker.start()
    eventually(lambda: bool(holder) and len(holder[0].sent) >= 1, "1-1 accepted by the client")
    worker.stop(close_timeout=0.0)
    first = [e for e in sink.events if e["value"] == "1-0"]
    second = [e for e in sink.events if e["value"] == "1-1"]
    assert [e["type"] for e in first] == ["invoke", "fail"]
    assert first[1]["error"] == "MSG_SIZE_TOO_LARGE"
    assert [e["type"] for e in second] == ["invoke", "info"]  # enqueued, never acked


def test_a_fatal_client_error_ends_the_producer_not_the_run() -> None:
    # librdkafka's idempotent producer goes fatal when a new leader lacks sequences it had
    # acknowledged (an unclean election lost them): that producer stops sending, its
    # in-flight sends end as info, and the worker reports no error of its own.
    sink = ListSink()
    made: list[FakeProducer] = []

    def factory(on_done: SendCallback) -> FakeProducer:
        made.append(FakeProducer(on_done))
        return made[0]

    worker = ProducerWorker(3, ["t"], replace(FREE, rate=2000.0), sink, factory)
    worker.start()
    deadline = time.monotonic() + 5
    while worker.counts["invoke"] < 20 and time.monotonic() < deadline:
        time.sleep(0.001)
    made[0].fatal = "OUT_OF_ORDER_SEQUENCE_NUMBER"
    worker.join(5)
    invoked = worker.counts["invoke"]
    time.sleep(0.05)
    assert worker.counts["invoke"] == invoked  # it sends no more, without being stopped
    worker.stop(close_timeout=1.0)
    assert worker.error is None and worker.fatal == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    ends = [e for e in sink.events if e["type"] != "invoke"]
    assert len(ends) == invoked >= 20 and {e["type"] for e in ends} == {"info"}
    assert made[0].closed
