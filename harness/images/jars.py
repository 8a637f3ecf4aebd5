"""Kafka jars from Maven Central (compose/kafka/pom.xml), the JMX exporter agent, and
the tool wrapper scripts that point at the right main class for the release."""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kchaos.harness.errors import ImageBuildError
from kchaos.harness.images.steps import Reporter, Runner, check
from kchaos.harness.images.versions import JMX_EXPORTER_VERSION, KafkaVersion, jar_version

JMX_AGENT = f"io.prometheus.jmx:jmx_prometheus_javaagent:{JMX_EXPORTER_VERSION}"
AGENT_NAME = "jmx_prometheus_javaagent.jar"
TOOLS_PACKAGE = "org.apache.kafka.tools."  # kafka-run-class.sh runs these from tools-libs/


@dataclass(frozen=True)
class Wrapper:
    script: str
    candidates: tuple[str, ...]  # main classes, newest layout first
    required: bool = False


# The scripts the image offers. Classes moved from core (kafka.admin / kafka.tools, Scala)
# to the tools module (org.apache.kafka.tools, Java) over the 3.x releases; the first
# candidate found in the jars wins.
WRAPPERS: tuple[Wrapper, ...] = (
    Wrapper(
        "kafka-storage.sh", ("kafka.tools.StorageTool", "org.apache.kafka.tools.StorageTool"), True
    ),
    Wrapper(
        "kafka-topics.sh", ("org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"), True
    ),
    Wrapper("kafka-producer-perf-test.sh", ("org.apache.kafka.tools.ProducerPerformance",), True),
    Wrapper(
        "kafka-metadata-quorum.sh",
        ("org.apache.kafka.tools.MetadataQuorumCommand", "kafka.admin.MetadataQuorumCommand"),
        True,
    ),
    Wrapper(
        "kafka-console-consumer.sh",
        ("org.apache.kafka.tools.consumer.ConsoleConsumer", "kafka.tools.ConsoleConsumer"),
        True,
    ),
    Wrapper(
        "kafka-console-producer.sh",
        ("org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer"),
    ),
    Wrapper(
        "kafka-consumer-perf-test.sh",
        ("org.apache.kafka.tools.ConsumerPerformance", "kafka.tools.ConsumerPerformance"),
    ),
    Wrapper(
        "kafka-consumer-groups.sh",
        (
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "kafka.admin.ConsumerGroupCommand",
        ),
    ),
    Wrapper(
        "kafka-configs.sh", ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")
    ),
    Wrapper(
        "kafka-get-offsets.sh",
        ("org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell"),
    ),
    Wrapper(
        "kafka-dump-log.sh",
        ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"),
    ),
    Wrapper(
        "kafka-log-dirs.sh", ("org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand")
    ),
    Wrapper(
        "kafka-reassign-partitions.sh",
        (
            "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
            "kafka.admin.ReassignPartitionsCommand",
        ),
    ),
    Wrapper(
        "kafka-leader-election.sh",
        ("org.apache.kafka.tools.LeaderElectionCommand", "kafka.admin.LeaderElectionCommand"),
    ),
    Wrapper(
        "kafka-features.sh", ("org.apache.kafka.tools.FeatureCommand", "kafka.admin.FeatureCommand")
    ),
    Wrapper(
        "kafka-broker-api-versions.sh",
        ("org.apache.kafka.tools.BrokerApiVersionsCommand", "kafka.admin.BrokerApiVersionsCommand"),
    ),
    Wrapper(
        "kafka-delete-records.sh",
        ("org.apache.kafka.tools.DeleteRecordsCommand", "kafka.admin.DeleteRecordsCommand"),
    ),
    Wrapper("kafka-verifiable-producer.sh", ("org.apache.kafka.tools.VerifiableProducer",)),
    Wrapper("kafka-verifiable-consumer.sh", ("org.apache.kafka.tools.VerifiableConsumer",)),
)


@dataclass(frozen=True)
class JarSet:
    """What Maven produced for one Kafka release (all under ``root``)."""

    root: Path
    libs: Path  # the broker's classpath (and the tools' when tools_libs is None)
    tools_libs: Path | None  # separate tools classpath when kafka-tools is another release
    agent: Path
    tools_version: str


def mvn_argv(
    pom: Path,
    repo: Path,
    version: KafkaVersion,
    profiles: Sequence[str],
    out: Path,
    tools_version: str | None = None,
) -> list[str]:
    argv = [*_maven(pom, repo), f"-Dkafka.version={version}", "-P", ",".join(profiles)]
    if tools_version is not None:
        argv.append(f"-Dkafka.tools.version={tools_version}")
    argv += ["dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={out}"]
    return argv


def agent_argv(pom: Path, repo: Path, out: Path) -> list[str]:
    return [
        *_maven(pom, repo),
        "dependency:copy",
        f"-Dartifact={JMX_AGENT}",
        f"-DoutputDirectory={out}",
    ]


def _maven(pom: Path, repo: Path) -> list[str]:
    """The start of every Maven command here: batch mode, quiet, ``pom``, local repository
    ``repo``."""
    return ["mvn", "-B", "-q", "-f", str(pom), f"-Dmaven.repo.local={repo}"]


def fetch_jars(
    runner: Runner, reporter: Reporter, pom: Path, cache: Path, version: KafkaVersion, key: str
) -> JarSet:
    """Resolve the jars of ``version`` into ``cache/jars/<version>-<key>`` (reused if done)."""
    root = cache / "jars" / f"{version}-{key[:12]}"
    repo = cache / "m2"
    logs = cache / "logs"
    done_marker = root / ".complete"
    if done_marker.exists():
        reporter.say(f"Kafka {version} jars cached: {root}")
        return _jar_set(root)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    logging_profile = f"log4j{version.log4j}"
    with reporter.step(f"Maven: Kafka {version} jars from Maven Central") as result:
        # Tools first: their resolved version tells whether one classpath can hold both.
        tools = root / "tools-libs"
        check(
            runner(mvn_argv(pom, repo, version, ["tools", logging_profile], tools), timeout=1800),
            f"Maven (kafka-tools for Kafka {version})",
            logs / f"mvn-tools-{version}.log",
        )
        tools_version = _artifact_version(tools, "kafka-tools")
        libs = root / "libs"
        if tools_version == str(version):
            shutil.rmtree(tools)
            profiles = ["broker", "tools", logging_profile]
        else:
            reporter.say(
                f"kafka-tools {version} is not on Maven Central: tools run from "
                f"kafka-tools {tools_version} on a classpath of their own"
            )
            profiles = ["broker", logging_profile]
        check(
            runner(mvn_argv(pom, repo, version, profiles, libs), timeout=1800),
            f"Maven (Kafka {version} broker jars)",
            logs / f"mvn-broker-{version}.log",
        )
        check(
            runner(agent_argv(pom, repo, root / "agent-dl"), timeout=600),
            "Maven (JMX exporter agent)",
            logs / "mvn-agent.log",
        )
        agents = list((root / "agent-dl").glob("jmx_prometheus_javaagent-*.jar"))
        if len(agents) != 1:
            raise ImageBuildError(f"Maven left no JMX exporter agent jar in {root / 'agent-dl'}")
        (root / "agent").mkdir()
        agents[0].rename(root / "agent" / AGENT_NAME)
        shutil.rmtree(root / "agent-dl")
        (root / "tools.version").write_text(tools_version + "\n")
        done_marker.write_text("ok\n")
        count = len(list(libs.glob("*.jar")))
        result.text = f"{count} broker jars, kafka-tools {tools_version}"
    return _jar_set(root)


def _jar_set(root: Path) -> JarSet:
    tools = root / "tools-libs"
    return JarSet(
        root=root,
        libs=root / "libs",
        tools_libs=tools if tools.is_dir() else None,
        agent=root / "agent" / AGENT_NAME,
        tools_version=(root / "tools.version").read_text().strip(),
    )


def _artifact_version(directory: Path, artifact: str) -> str:
    for jar in directory.glob(f"{artifact}-*.jar"):
        found = jar_version(jar.name, artifact)
        if found:
            return found
    raise ImageBuildError(f"Maven copied no {artifact} jar into {directory}")


def class_names(jars: Iterable[Path]) -> set[str]:
    """Every class (dotted name) inside the given jars."""
    names: set[str] = set()
    for jar in jars:
        try:
            with zipfile.ZipFile(jar) as archive:
                for entry in archive.namelist():
                    if entry.endswith(".class"):
                        names.add(entry[: -len(".class")].replace("/", "."))
        except zipfile.BadZipFile as exc:
            raise ImageBuildError(f"{jar} is not a jar ({exc}); delete it and build again") from exc
    return names


def choose_classes(broker: set[str], tools: set[str] | None) -> dict[str, str]:
    """Script name -> main class. With a separate tools classpath, a class of the tools
    package must come from it and any other class from the broker's jars (that is how
    kafka-run-class.sh picks the classpath). A required script without a class fails."""
    chosen: dict[str, str] = {}
    missing: list[str] = []
    for wrapper in WRAPPERS:
        for name in wrapper.candidates:
            if tools is None:
                ok = name in broker
            else:
                ok = name in tools if name.startswith(TOOLS_PACKAGE) else name in broker
            if ok:
                chosen[wrapper.script] = name
                break
        else:
            if wrapper.required:
                missing.append(f"{wrapper.script} ({' or '.join(wrapper.candidates)})")
    if missing:
        raise ImageBuildError("the Kafka jars lack the main class of: " + ", ".join(missing))
    return chosen


def write_wrappers(bin_dir: Path, chosen: dict[str, str]) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    for script, main_class in sorted(chosen.items()):
        path = bin_dir / script
        path.write_text(
            "#!/usr/bin/env bash\n"
            f"# kchaos: {script} runs {main_class} (generated by the image builder)\n"
            f'exec "$(dirname "$0")/kafka-run-class.sh" {main_class} "$@"\n'
        )
        path.chmod(0o755)
