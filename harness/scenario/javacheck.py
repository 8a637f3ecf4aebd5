"""Load-time checks of a scenario with ``workload.client: java``.

The Java tools (Kafka's VerifiableProducer / VerifiableConsumer) take their settings from
a properties file; a key the Java client does not know would only be logged as unused in
a container, so every key of ``producers.configs`` and ``consumers.configs`` is checked
here against the client's own config names (:mod:`kchaos.workloads.javaconf`), with the
file and line of the key. The tools also need a paced producer and a group consumer.
With ``workload.transactions``, the transactional producers are Kafka's Java producer
(:mod:`kchaos.workloads.java_txn`, the copier's consumer in its producer's process):
``transactions.configs`` are checked the same way and the readers must subscribe.
"""

from __future__ import annotations

from kchaos.harness.images.versions import DEFAULT_KAFKA_VERSION
from kchaos.harness.rundir.scenario_model import Scenario
from kchaos.harness.scenario.yamlsrc import Source
from kchaos.workloads.javaconf import names_for


def check_java_client(src: Source, sc: Scenario) -> None:
    w = sc.workload
    if w.client != "java":
        return
    version = sc.cluster.kafka_version or DEFAULT_KAFKA_VERSION
    sections = (("producers", "producer", w.producers.configs),
                ("consumers", "consumer", w.consumers.configs))  # fmt: skip
    for section, kind, configs in sections:
        clients, names = names_for(version, kind)  # type: ignore[arg-type]
        for key in configs:
            if key not in names:
                raise src.error(
                    ("workload", section, "configs", key),
                    f"unknown {kind} config {key!r} for the Java client "
                    f"(kafka-clients {clients}, the tools' client of Kafka {version})",
                )
    if w.producers.count and w.producers.rate <= 0:
        raise src.error(
            ("workload", "producers", "rate"),
            "client java needs a rate above 0 (VerifiableProducer is paced by it, and the "
            "history's send times come from that pace)",
        )
    if w.consumers.count and w.consumers.mode != "subscribe":
        raise src.error(
            ("workload", "consumers", "mode"), "client java reads in subscribe mode only"
        )
    t = w.transactions
    if t is not None:
        clients, names = names_for(version, "producer")
        for key in t.configs:
            if key not in names:
                raise src.error(
                    ("workload", "transactions", "configs", key),
                    f"unknown producer config {key!r} for the Java client "
                    f"(kafka-clients {clients}, the transactional producers' client)",
                )
        # the transactional producers (and the copier's consumer) are Kafka's Java clients
        # (kchaos.workloads.java_txn); the readers are VerifiableConsumers, which only
        # subscribe
        if t.readers.assign:
            raise src.error(
                ("workload", "transactions", "readers", "assign"),
                "client java reads in subscribe mode only: readers.assign must be 0",
            )
