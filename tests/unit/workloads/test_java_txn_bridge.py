"""The Python side of the Java transactional client (`kchaos.workloads.java_txn`) against a
fake TxnBridge: a TCP server in this process speaking the bridge's protocol (the real one
is Kafka's Java producer in a container: tests/integration/test_java_txn.py). What the
bridge replies must become the same history lines and the same errors the workers act
on as with librdkafka."""

from __future__ import annotations

import base64
import json
import socket
import socketserver
import threading
from collections.abc import Callable
from typing import Any

import pytest

from kchaos.harness.errors import SendRefused, TxnError
from kchaos.harness.rundir.history_writer import ListSink
from kchaos.workloads import java_txn
from kchaos.workloads.clients import SendResult
from kchaos.workloads.java_txn import BridgeClient, producer_config, txn_slot
from kchaos.workloads.spec import TxnSpec
from kchaos.workloads.txn import TxnProducer
from kchaos.workloads.values import value_of

Reply = Callable[[dict[str, Any]], dict[str, Any] | None]


class FakeBridge:
    """Serves one connection: each request is recorded and answered by ``replies[op]``
    (a function of the request giving the reply's fields, or None for no reply at all),
    else ``{"ok": true}``; a send is delivered right after its reply (partition 1,
    offsets from 500) unless ``deliver`` is False."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: dict[str, Reply] = {}
        self.deliver = True
        self.offset = 500
        bridge = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                for raw in self.rfile:
                    req = json.loads(raw)
                    bridge.requests.append(req)
                    answer = bridge.replies.get(req["op"], lambda r: {"ok": True})(req)
                    if answer is None:
                        continue
                    self._write({"id": req["id"], **answer})
                    if req["op"] == "send" and answer.get("ok") and bridge.deliver:
                        self._write({"op": "delivered", "tag": req["tag"], "partition": 1,
                                     "offset": bridge.offset})  # fmt: skip
                        bridge.offset += 1

            def _write(self, line: dict[str, Any]) -> None:
                self.wfile.write(json.dumps(line).encode() + b"\n")
                self.wfile.flush()

        self.server = socketserver.TCPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def ops(self) -> list[str]:
        return [r["op"] for r in self.requests]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def bridge() -> Any:
    fake = FakeBridge()
    yield fake
    fake.close()


def error(name: str, **flags: bool) -> Reply:
    return lambda req: {"ok": False, "error": {"name": name, "detail": f"{name} from Java",
                                               **flags}}  # fmt: skip


def client_for(
    bridge: FakeBridge, done: list[tuple[str, SendResult]] | None = None
) -> BridgeClient:
    seen = done if done is not None else []
    config = producer_config("b:9092", "kchaos-t-3", 10_000, "kchaos-txn3", {"linger.ms": "1"})
    client = BridgeClient(config, lambda value, result: seen.append((value, result)), "fake")
    client.connect("127.0.0.1", bridge.port, 5.0)
    return client


def bridge_factory(bridge: FakeBridge, made: list[BridgeClient]) -> Callable[[Any], BridgeClient]:
    """A worker's client factory: each client connected to ``bridge``, kept in ``made``."""

    def factory(on_done: Any) -> BridgeClient:
        config = producer_config("b:9092", "kchaos-t-3", 1000, "kchaos-txn3", {})
        client = BridgeClient(config, on_done, "fake")
        client.connect("127.0.0.1", bridge.port, 5.0)
        made.append(client)
        return client

    return factory


def test_the_producer_is_opened_with_the_workers_settings_in_javas_names(
    bridge: FakeBridge,
) -> None:
    client_for(bridge).close()
    opened = bridge.requests[0]
    assert opened["op"] == "open"
    config = opened["config"]
    assert config["transactional.id"] == "kchaos-t-3"
    assert config["transaction.timeout.ms"] == "10000" and config["max.block.ms"] == "10000"
    assert config["enable.idempotence"] == "true" and config["acks"] == "all"
    assert config["linger.ms"] == "1"  # the scenario's configs win
    assert bridge.ops()[-1] == "close"


def test_a_worker_over_the_bridge_writes_transaction_version_2_and_the_offsets(
    bridge: FakeBridge,
) -> None:
    bridge.replies["init"] = lambda req: {"ok": True, "producer_id": 7, "producer_epoch": 0,
                                          "transaction_version": 2}  # fmt: skip
    sink, stop = ListSink(), threading.Event()
    spec = TxnSpec(max_sends=2, abort_ratio=0.0, rate=0, timeout=1.0)
    made: list[BridgeClient] = []
    factory = bridge_factory(bridge, made)

    worker = TxnProducer(3, "kchaos-t-3", spec, sink, factory, topics=("a",), stop=stop)
    original = worker.step

    def step() -> bool:
        if worker.counts["invoke"] >= 3:
            stop.set()
            return False
        return original()

    worker.step = step  # type: ignore[method-assign]
    worker.run()
    events = sink.events
    init = [e for e in events if e["f"] == "txn-init" and e["type"] == "ok"]
    assert init == [{**init[0], "producer_id": 7, "producer_epoch": 0, "transaction_version": 2}]
    oks = [e for e in events if e["f"] == "txn" and e["type"] == "ok"]
    assert len(oks) == 3
    assert all(s["partition"] == 1 and s["offset"] >= 500 for e in oks for s in e["sends"])
    # every value went out base64-encoded as the padded record the worker made
    sent = [r for r in bridge.requests if r["op"] == "send"]
    assert [value_of(base64.b64decode(r["data"])) for r in sent] == [
        s["value"] for e in oks for s in e["sends"]
    ]
    assert bridge.ops()[:2] == ["open", "init"] and bridge.ops()[-1] == "close"


def test_the_javas_classification_reaches_the_worker(bridge: FakeBridge) -> None:
    client = client_for(bridge)
    bridge.replies["commit"] = error("REQUEST_TIMED_OUT", retriable=True)
    with pytest.raises(TxnError) as raised:
        client.commit(1.0)
    assert raised.value.retriable and not raised.value.fenced and raised.value.timed_out
    bridge.replies["commit"] = error("PRODUCER_FENCED", fatal=True, fenced=True)
    with pytest.raises(TxnError) as raised:
        client.commit(1.0)
    assert raised.value.fenced and raised.value.fatal
    # KIP-588: an old epoch is abortable in Kafka's Java client, not a fencing (the name
    # alone would say fenced, as it does for librdkafka)
    bridge.replies["commit"] = error("INVALID_PRODUCER_EPOCH", abortable=True, fenced=False)
    with pytest.raises(TxnError) as raised:
        client.commit(1.0)
    assert raised.value.abortable and not raised.value.fenced
    client.close()


def test_a_refused_send_is_send_refused_and_not_waited_for(bridge: FakeBridge) -> None:
    client = client_for(bridge)
    bridge.replies["send"] = error("UNKNOWN_TOPIC_OR_PARTITION", retriable=True)
    with pytest.raises(SendRefused):
        client.send("t", None, b"1-0-0 ", "1-0-0")
    assert client.flush(0.1) == 0
    client.close()


def test_flush_counts_the_sends_without_a_delivery_report(bridge: FakeBridge) -> None:
    done: list[tuple[str, SendResult]] = []
    client = client_for(bridge, done)
    bridge.deliver = False
    client.send("t", b"k1", b"1-0-0 ", "1-0-0")
    client.send("t", None, b"1-0-1 ", "1-0-1")
    assert client.flush(0.2) == 2 and done == []
    bridge.deliver = True
    client.send("t", None, b"1-0-2 ", "1-0-2")
    assert client.flush(1.0) == 2 and done == [("1-0-2", SendResult(1, 500, None))]
    key = next(r for r in bridge.requests if r["op"] == "send")["key"]
    assert base64.b64decode(key) == b"k1"
    client.close()


def test_no_reply_in_time_leaves_the_client_unusable(
    bridge: FakeBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(java_txn, "GRACE_S", 0.2)
    client = client_for(bridge)
    bridge.replies["begin"] = lambda req: None
    with pytest.raises(TxnError) as raised:
        client.begin()
    assert raised.value.fatal and raised.value.name == "JAVA_CLIENT_GONE"
    client.close()


def test_a_bridge_that_went_away_is_fatal() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]

    def accept_then_drop() -> None:
        conn, _ = listener.accept()
        conn.recv(65536)  # the open request, never answered
        conn.close()

    threading.Thread(target=accept_then_drop, daemon=True).start()
    client = BridgeClient({"max.block.ms": "1000"}, lambda v, r: None, "gone")
    with pytest.raises(TxnError) as raised:
        client.connect("127.0.0.1", port, 5.0)
    assert raised.value.fatal and "connection ended" in str(raised.value)
    listener.close()


def test_each_transactional_process_has_an_address_of_its_own() -> None:
    assert txn_slot(1) != txn_slot(2)
    with pytest.raises(Exception, match="no client address left"):
        txn_slot(100)


def test_a_copier_over_the_bridge_reads_copies_and_commits_with_its_consumers_metadata(
    bridge: FakeBridge,
) -> None:
    """The copier's consumer is opened in the producer's bridge; what its poll returns
    is copied, and the offsets go to send_offsets (which uses the bridge's own consumer's
    group metadata); after the producer is replaced the consumer is opened again there."""
    from kchaos.harness.rundir.scenario_model import CopierSpec
    from kchaos.workloads.java_txn import BridgeConsumer, consumer_config
    from kchaos.workloads.txn import TxnCopier
    from kchaos.workloads.values import payload

    bridge.replies["init"] = lambda req: {"ok": True, "producer_id": 7, "producer_epoch": 0,
                                          "transaction_version": 2}  # fmt: skip
    polls = iter([[("in", 0, 40, "1-0-0"), ("in", 2, 9, "1-0-1")], []])

    def poll(req: dict[str, Any]) -> dict[str, Any]:
        records = [
            {"topic": t, "partition": p, "offset": o,
             "data": base64.b64encode(payload(v, 20)).decode()}
            for t, p, o, v in next(polls, [])
        ]  # fmt: skip
        return {"ok": True, "records": records}

    bridge.replies["poll"] = poll
    sink, stop = ListSink(), threading.Event()
    copier = CopierSpec(input="in", output="out", group="g", max_batch=5)
    spec = TxnSpec(max_sends=2, abort_ratio=0.0, rate=0, timeout=1.0, copier=copier)
    made: list[BridgeClient] = []
    factory = bridge_factory(bridge, made)

    consumer = BridgeConsumer(lambda: made[-1] if made else None,
                              consumer_config("b:9092", "g", "kchaos-copier3", 5))  # fmt: skip
    worker = TxnCopier(3, "kchaos-t-3", spec, sink, factory, consumer_factory=lambda: consumer,
                       stop=stop, poll_timeout_s=0.05)  # fmt: skip
    original = worker.step

    def step() -> bool:
        if bridge.ops().count("poll") >= 2:
            stop.set()
            return False
        return original()

    worker.step = step  # type: ignore[method-assign]
    worker.run()
    opened = [r for r in bridge.requests if r["op"] == "consume"]
    assert len(opened) == 1 and opened[0]["topic"] == "in"
    assert opened[0]["config"]["group.id"] == "g"
    assert opened[0]["config"]["isolation.level"] == "read_committed"
    assert opened[0]["config"]["max.poll.records"] == "5"
    offsets = [r for r in bridge.requests if r["op"] == "send_offsets"]
    assert [o["positions"] for o in offsets] == [[["in", 0, 41], ["in", 2, 10]]]
    ops = bridge.ops()
    assert ops.index("send_offsets") < ops.index("commit")
    txns = [e for e in sink.events if e["f"] == "txn"]
    assert [e["type"] for e in txns] == ["invoke", "ok"]
    assert [s["copy_of"] for s in txns[0]["sends"]] == ["1-0-0", "1-0-1"]
    assert [c["value"] for c in txns[0]["consumed"]] == ["1-0-0", "1-0-1"]


def test_the_copiers_java_consumer_follows_a_replaced_producer(bridge: FakeBridge) -> None:
    from kchaos.harness.errors import TxnClientUnusable
    from kchaos.workloads.java_txn import BridgeConsumer, consumer_config

    bridge.replies["poll"] = lambda req: {"ok": True, "records": []}
    current: list[BridgeClient] = [client_for(bridge)]
    consumer = BridgeConsumer(lambda: current[-1], consumer_config("b:9092", "g", "c", 5))
    consumer.subscribe(["in"], lambda parts: None)
    assert consumer.poll(0.01, 5) == ([], [])
    assert consumer.poll(0.01, 5) == ([], [])
    assert bridge.ops().count("consume") == 1
    current[0].close()  # the worker replaced its producer (a new container)
    current.append(client_for(bridge))
    consumer.poll(0.01, 5)
    assert bridge.ops().count("consume") == 2  # opened again in the new one
    bridge.replies["poll"] = error("UNKNOWN_TOPIC_OR_PARTITION", retriable=True)
    assert consumer.poll(0.01, 5) == ([], ["UNKNOWN_TOPIC_OR_PARTITION"])
    current[-1].close()
    with pytest.raises(TxnClientUnusable):  # the bridge went: a new client is needed
        consumer.poll(0.01, 5)
