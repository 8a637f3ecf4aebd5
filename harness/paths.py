"""Locations inside the source tree (kchaos runs from an editable install)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
COMPOSE_DIR = REPO_ROOT / "compose"


def cache_dir() -> Path:
    """Build caches (base rootfs, Maven repo, Go build cache), outside the clone.

    It lives outside the source tree so that a fresh clone (CI) reuses what an earlier
    set-up on the same machine downloaded and built.
    """
    return Path(os.environ.get("KCHAOS_CACHE_DIR", "/var/cache/kchaos"))


def runs_dir() -> Path:
    """Default parent of run directories (``runs/RUN_ID``); git-ignored."""
    return Path(os.environ.get("KCHAOS_RUNS_DIR", REPO_ROOT / "runs"))
