"""Benchmark helper: how long `bash compose/setup.sh` takes when everything is present."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

from kchaos.harness import paths


@dataclass(frozen=True)
class SetupTiming:
    runs: tuple[float, ...]  # seconds per run

    @property
    def best(self) -> float:
        return min(self.runs)


def setup_timing(runs: int = 3) -> SetupTiming:
    """Time ``bash compose/setup.sh`` ``runs`` times (a first run may build; report best)."""
    script = paths.COMPOSE_DIR / "setup.sh"
    took: list[float] = []
    for _ in range(runs):
        start = time.monotonic()
        subprocess.run(["bash", str(script)], check=True, stdout=subprocess.DEVNULL)
        took.append(time.monotonic() - start)
    return SetupTiming(tuple(took))
