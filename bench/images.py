"""Benchmark: broker start with the image's class-data archive vs without, side by side.

``start_ratio()`` starts single-node brokers of one image alternately with ``KCHAOS_CDS=1``
(the default) and ``KCHAOS_CDS=0``, each timed from ``docker run`` to Kafka's "Kafka
Server started" log line, and reports the medians and their ratio. Containers carry
kchaos labels (role "tool") and are removed whatever happens.

Run by hand: ``python -m kchaos.bench.images [IMAGE]`` (default: the ensured Kafka image).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from kchaos.harness.cluster.retry import Poll
from kchaos.harness.labels import labels_for, new_run_id

BENCH_ENV = {
    "KAFKA_HEAP_OPTS": "-Xmx320m -Xms320m",
    "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData",
}


@dataclass(frozen=True)
class StartRatio:
    with_archive: tuple[float, ...]
    without_archive: tuple[float, ...]

    @property
    def ratio(self) -> float:
        """Median start time with the archive over the median without (lower is better)."""
        return statistics.median(self.with_archive) / statistics.median(self.without_archive)


def _started(container: Any, timeout: float) -> bool:
    """Kafka's "Kafka Server started" line is in the log, looked for every 0.2 s; False
    once the container exited or ``timeout`` s passed."""

    started: list[bool] = []

    def settled() -> str | None:  # None once it started, or exited (it never will then)
        if b"Kafka Server started" in container.logs():
            started.append(True)
            return None
        container.reload()
        return None if container.status == "exited" else "not started yet"

    return Poll("Kafka Server started", settled, timeout=timeout, interval=0.2).wait() and (
        bool(started)
    )


def start_ratio(image: str, rounds: int = 3, timeout: float = 240.0) -> StartRatio:
    import docker

    client = docker.from_env()
    labels = labels_for("images-bench-" + new_run_id(), "tool")
    times: dict[str, list[float]] = {"1": [], "0": []}
    for _ in range(rounds):
        for cds in ("1", "0"):
            start = time.monotonic()
            container = client.containers.run(
                image,
                detach=True,
                network_mode="none",
                labels=labels,
                environment={**BENCH_ENV, "KCHAOS_CDS": cds},
            )
            try:
                if not _started(container, start + timeout - time.monotonic()):
                    tail = container.logs(tail=20).decode(errors="replace")
                    raise RuntimeError(f"benchmark broker did not start:\n{tail}")
                times[cds].append(time.monotonic() - start)
            finally:
                container.remove(force=True)
    return StartRatio(tuple(times["1"]), tuple(times["0"]))


if __name__ == "__main__":
    import sys

    from kchaos.harness.images import ensure_images

    tag = sys.argv[1] if len(sys.argv) > 1 else ensure_images().kafka
    result = start_ratio(tag)
    print(
        f"{tag}: with archive {[round(t, 1) for t in result.with_archive]} s, "
        f"without {[round(t, 1) for t in result.without_archive]} s, "
        f"ratio {result.ratio:.2f}"
    )
