"""The offline Kafka image ``kchaos/kafka:<version>`` (compose/kafka/Dockerfile)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from kchaos.harness.images.dockercli import DockerCli
from kchaos.harness.images.jars import (
    JarSet,
    choose_classes,
    class_names,
    write_wrappers,
)
from kchaos.harness.images.steps import Reporter
from kchaos.harness.images.versions import INPUTS_LABEL, JMX_EXPORTER_VERSION, KafkaVersion

CONTEXT_FILES = ("Dockerfile", "pom.xml", "bin", "config")


def kafka_context_inputs(compose_kafka: Path) -> list[Path]:
    return [compose_kafka / name for name in CONTEXT_FILES]


def kafka_params(version: KafkaVersion, base_id: str) -> dict[str, str]:
    return {
        "image": "kafka",
        "kafka": str(version),
        "log4j": str(version.log4j),
        "jmx_exporter": JMX_EXPORTER_VERSION,
        "base": base_id,
        "layout": "2",
    }


def jar_params(version: KafkaVersion) -> dict[str, str]:
    return {
        "kafka": str(version),
        "log4j": str(version.log4j),
        "jmx_exporter": JMX_EXPORTER_VERSION,
    }


def build_kafka_image(
    docker: DockerCli,
    reporter: Reporter,
    compose_kafka: Path,
    jars: JarSet,
    version: KafkaVersion,
    tag: str,
    inputs: str,
    cache: Path,
) -> None:
    """Assemble the build context (jars, agent, scripts, config) and build the image."""
    tools_classes = class_names(jars.tools_libs.glob("*.jar")) if jars.tools_libs else None
    chosen = choose_classes(class_names(jars.libs.glob("*.jar")), tools_classes)
    work = cache / "contexts"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"kafka-{version}-", dir=work) as tmp:
        ctx = Path(tmp)
        shutil.copy2(compose_kafka / "Dockerfile", ctx / "Dockerfile")
        shutil.copytree(compose_kafka / "bin", ctx / "bin")
        shutil.copytree(compose_kafka / "config", ctx / "config")
        write_wrappers(ctx / "bin", chosen)
        _link_tree(jars.libs, ctx / "libs")
        # The Dockerfile copies tools-libs/ only when it has jars; keep the directory.
        (ctx / "tools-libs").mkdir()
        if jars.tools_libs is not None:
            _link_tree(jars.tools_libs, ctx / "tools-libs")
        (ctx / "agent").mkdir()
        shutil.copy2(jars.agent, ctx / "agent" / jars.agent.name)
        with reporter.step(f"docker build {tag}") as result:
            docker.build(
                ctx,
                tag,
                {
                    "KAFKA_VERSION": str(version),
                    "KCHAOS_LOG4J": str(version.log4j),
                    "KAFKA_TOOLS_VERSION": jars.tools_version,
                },
                {INPUTS_LABEL: inputs},
                cache / "logs" / f"kafka-{version}-build.log",
            )
            result.text = f"{len(chosen)} tool scripts"


def _link_tree(src: Path, dst: Path) -> None:
    """Hard-link (or copy across filesystems) every jar of ``src`` into ``dst``."""
    dst.mkdir(parents=True, exist_ok=True)
    for jar in sorted(src.glob("*.jar")):
        try:
            (dst / jar.name).hardlink_to(jar)
        except OSError:
            shutil.copy2(jar, dst / jar.name)
