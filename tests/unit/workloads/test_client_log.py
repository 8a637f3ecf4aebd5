"""librdkafka's debug log lands in the run directory's file, not on the console."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Producer

from kchaos.workloads import client_log, confluent_client
from kchaos.workloads.confluent_txn import txn_producer_config
from kchaos.workloads.spec import ProducerConfig


def test_debug_config_routes_librdkafka_log_through_the_kchaos_logger():
    spec = ProducerConfig(configs={"debug": "eos,protocol,msg"})
    conf = confluent_client.producer_config("127.0.0.1:1", spec, "p1")
    assert conf["logger"] is client_log.LIBRDKAFKA_LOG
    assert conf["debug"] == "eos,protocol,msg"
    assert "logger" not in confluent_client.producer_config("127.0.0.1:1", ProducerConfig(), "p1")
    consumer = confluent_client.consumer_config("127.0.0.1:1", None, None, "c1", {"debug": "fetch"})
    assert consumer["logger"] is client_log.LIBRDKAFKA_LOG
    txn = txn_producer_config("127.0.0.1:1", "t-1", 10000, "t1", {"debug": "eos"})
    assert txn["logger"] is client_log.LIBRDKAFKA_LOG and txn["debug"] == "eos"
    assert "logger" not in txn_producer_config("127.0.0.1:1", "t-1", 10000, "t1", {})


def test_a_real_librdkafka_debug_log_is_written_to_the_file(tmp_path: Path, capfd):
    path = tmp_path / "logs" / "librdkafka.log"
    path.parent.mkdir()
    handler = client_log.log_to_file(path)
    try:
        spec = ProducerConfig(configs={"debug": "broker"})
        # nothing listens on port 1: librdkafka logs its connection attempts
        producer = Producer(confluent_client.producer_config("127.0.0.1:1", spec, "p-log"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (path.exists() and path.stat().st_size):
            producer.poll(0.2)
        del producer
    finally:
        client_log.stop_logging(handler)
    text = path.read_text()
    assert "127.0.0.1:1" in text and "p-log" in text
    assert "127.0.0.1:1" not in capfd.readouterr().err  # not on the console
    assert handler not in client_log.LIBRDKAFKA_LOG.handlers


def test_no_file_without_a_debug_line(tmp_path: Path):
    path = tmp_path / "librdkafka.log"
    client_log.stop_logging(client_log.log_to_file(path))
    assert not path.exists()
