"""Maven command lines, the split tools classpath, and main-class discovery."""

from __future__ import annotations

from pathlib import Path

import pytest
from images_fakes import BROKER_4X, TOOLS_4X, FakeTools, make_jar

from kchaos.harness.errors import ImageBuildError
from kchaos.harness.images.jars import (
    agent_argv,
    choose_classes,
    class_names,
    fetch_jars,
    mvn_argv,
    write_wrappers,
)
from kchaos.harness.images.steps import Reporter
from kchaos.harness.images.versions import parse_kafka_version

V44 = parse_kafka_version("4.4.0")
V33 = parse_kafka_version("3.3.2")


def test_mvn_command_pins_version_profiles_and_local_repo(tmp_path: Path) -> None:
    argv = mvn_argv(
        tmp_path / "pom.xml", tmp_path / "m2", V33, ["broker", "tools", "log4j1"], tmp_path / "out"
    )
    assert argv[0] == "mvn" and "-B" in argv
    assert f"-Dmaven.repo.local={tmp_path / 'm2'}" in argv
    assert "-Dkafka.version=3.3.2" in argv
    assert argv[argv.index("-P") + 1] == "broker,tools,log4j1"
    assert "dependency:copy-dependencies" in argv
    assert f"-DoutputDirectory={tmp_path / 'out'}" in argv
    assert not any(a.startswith("-Dkafka.tools.version") for a in argv)
    pinned = mvn_argv(tmp_path / "p", tmp_path / "m", V44, ["tools"], tmp_path / "o", "4.3.1")
    assert "-Dkafka.tools.version=4.3.1" in pinned
    agent = agent_argv(tmp_path / "p", tmp_path / "m", tmp_path / "a")
    assert "-Dartifact=io.prometheus.jmx:jmx_prometheus_javaagent:1.0.1" in agent


def test_same_release_tools_share_the_broker_classpath(
    tmp_path: Path,
    fake_tools: FakeTools,
) -> None:
    jars = fetch_jars(fake_tools, Reporter(), tmp_path / "pom.xml", tmp_path, V33, "k" * 64)
    assert jars.tools_libs is None
    assert jars.tools_version == "3.3.2"
    assert {p.name for p in jars.libs.glob("kafka*")} >= {
        "kafka_2.13-3.3.2.jar",
        "kafka-tools-3.3.2.jar",
    }
    assert jars.agent.name == "jmx_prometheus_javaagent.jar" and jars.agent.exists()
    profiles = [c[c.index("-P") + 1] for c in fake_tools.calls if "-P" in c]
    assert profiles == ["tools,log4j1", "broker,tools,log4j1"]


def test_missing_tools_release_gets_its_own_classpath(
    tmp_path: Path,
    fake_tools: FakeTools,
) -> None:
    fake_tools.tools_version_on_central = "4.3.1"
    reporter = Reporter()
    jars = fetch_jars(fake_tools, reporter, tmp_path / "pom.xml", tmp_path, V44, "k" * 64)
    assert jars.tools_libs is not None
    assert jars.tools_version == "4.3.1"
    assert not list(jars.libs.glob("kafka-tools-*"))
    assert (jars.tools_libs / "kafka-tools-4.3.1.jar").exists()
    assert any("not on Maven Central" in line for line in reporter.lines)
    # a second call reuses the cache: no Maven at all
    before = len(fake_tools.calls)
    again = fetch_jars(fake_tools, Reporter(), tmp_path / "pom.xml", tmp_path, V44, "k" * 64)
    assert again == jars and len(fake_tools.calls) == before


def test_maven_failure_carries_its_output_tail(tmp_path: Path, fake_tools: FakeTools) -> None:
    lines = "\n".join(f"line {i}" for i in range(100))
    fake_tools.fail["dependency:copy-dependencies"] = (1, lines + "\n[ERROR] Could not find art")
    with pytest.raises(ImageBuildError) as info:
        fetch_jars(fake_tools, Reporter(), tmp_path / "pom.xml", tmp_path, V44, "k" * 64)
    message = str(info.value)
    assert "Could not find art" in message and "line 99" in message
    assert "line 10\n" not in message  # only the tail
    assert not (tmp_path / "jars" / f"4.4.0-{'k' * 12}" / ".complete").exists()


def test_class_discovery_and_choice_per_layout(tmp_path: Path) -> None:
    make_jar(tmp_path / "core.jar", BROKER_4X)
    make_jar(tmp_path / "tools.jar", TOOLS_4X)
    broker = class_names([tmp_path / "core.jar"])
    tools = class_names([tmp_path / "tools.jar"])
    assert "kafka.tools.StorageTool" in broker
    one = choose_classes(broker | tools, None)
    assert one["kafka-topics.sh"] == "org.apache.kafka.tools.TopicCommand"
    assert one["kafka-storage.sh"] == "kafka.tools.StorageTool"
    split = choose_classes(broker, tools)
    assert split == one
    # Kafka 3.3: topics and quorum tools still in core (Scala)
    old = {
        "kafka.Kafka",
        "kafka.tools.StorageTool",
        "kafka.admin.TopicCommand",
        "kafka.admin.MetadataQuorumCommand",
        "kafka.tools.ConsoleConsumer",
        "org.apache.kafka.tools.ProducerPerformance",
    }
    chosen = choose_classes(old, None)
    assert chosen["kafka-topics.sh"] == "kafka.admin.TopicCommand"
    assert chosen["kafka-console-consumer.sh"] == "kafka.tools.ConsoleConsumer"
    assert "kafka-features.sh" not in chosen  # optional, absent


def test_required_class_missing_or_on_the_wrong_classpath_fails() -> None:
    with pytest.raises(ImageBuildError, match="kafka-producer-perf-test.sh"):
        choose_classes({"kafka.Kafka", "kafka.tools.StorageTool"}, None)
    # a tools-package class that only the broker jars have would run from tools-libs
    everything = set(BROKER_4X) | set(TOOLS_4X)
    with pytest.raises(ImageBuildError, match="kafka-topics.sh"):
        choose_classes(everything, {"org.apache.kafka.tools.ProducerPerformance"})


def test_bad_jar_is_a_build_error(tmp_path: Path) -> None:
    (tmp_path / "bad.jar").write_text("not a zip")
    with pytest.raises(ImageBuildError, match="not a jar"):
        class_names([tmp_path / "bad.jar"])


def test_wrappers_exec_the_chosen_class(tmp_path: Path) -> None:
    write_wrappers(tmp_path, {"kafka-topics.sh": "org.apache.kafka.tools.TopicCommand"})
    script = tmp_path / "kafka-topics.sh"
    assert script.stat().st_mode & 0o111
    assert 'kafka-run-class.sh" org.apache.kafka.tools.TopicCommand "$@"' in script.read_text()
