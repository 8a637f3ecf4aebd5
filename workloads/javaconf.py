"""The config names Kafka's Java clients know, to reject a scenario's unknown keys early.

`client: java` hands the scenario's producer and consumer ``configs`` to Kafka's own
VerifiableProducer / VerifiableConsumer in a properties file. A key the Java client does
not know would only earn a warning in the container's log, so the scenario loader checks
every key against the client's own list: ``ProducerConfig.configNames()`` and
``ConsumerConfig.configNames()`` of the kafka-clients jar the image's tools run with.

The lists are generated once per image, by running ``java/ClientConfigNames.java`` inside
it (the image's JDK runs a source file directly), and shipped in
``java/client_configs.json`` keyed by Kafka release; regenerate with
``python -m kchaos.workloads.javaconf kchaos/kafka:4.4.0 ...``. A release without a list
is checked against the nearest older one (the lists only grow within a major version).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

Kind = Literal["producer", "consumer"]
CONFIGS_FILE = "java/client_configs.json"
_SOURCE = "ClientConfigNames.java"


@functools.cache
def _table() -> dict[str, dict[str, Any]]:
    text = resources.files("kchaos.workloads").joinpath(CONFIGS_FILE).read_text()
    table: dict[str, dict[str, Any]] = json.loads(text)
    return table


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def names_for(kafka_version: str, kind: Kind) -> tuple[str, frozenset[str]]:
    """(kafka-clients version, config names of ``kind``) for the image of ``kafka_version``."""
    table = _table()
    known = sorted(table, key=_key)
    older = [v for v in known if _key(v) <= _key(kafka_version)]
    version = older[-1] if older else known[0]
    entry = table[version]
    return str(entry["clients"]), frozenset(entry[kind])


def unknown_keys(kafka_version: str, kind: Kind, keys: Iterable[str]) -> list[str]:
    """The keys of ``keys`` that the Java client of ``kafka_version`` does not know."""
    _, names = names_for(kafka_version, kind)
    return [k for k in keys if k not in names]


def generate(image: str) -> dict[str, Any]:
    """Run the name lister inside ``image``; its JSON answer."""
    src = Path(__file__).with_name("java")
    argv = ["docker", "run", "--rm", "--label", "io.kchaos=1", "--label", "io.kchaos.role=tool",
            "-v", f"{src}:/src:ro", "--entrypoint", "java", image, "-Xmx128m",
            "-cp", "/opt/kafka/tools-libs/*:/opt/kafka/libs/*", f"/src/{_SOURCE}"]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=300).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("{"))
    answer: dict[str, Any] = json.loads(line)
    return answer


def write_table(images: Mapping[str, str], path: Path) -> None:
    """Regenerate the shipped table: Kafka release -> the lists of its image."""
    table = json.loads(path.read_text()) if path.exists() else {}
    for version, image in images.items():
        table[version] = generate(image)
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":  # python -m kchaos.workloads.javaconf kchaos/kafka:4.4.0 ...
    tags = {arg.rsplit(":", 1)[1]: arg for arg in sys.argv[1:]}
    write_table(tags, Path(__file__).with_name("java") / "client_configs.json")
