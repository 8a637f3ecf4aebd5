"""Where kchaos finds its shipped assets, its build caches and its run outputs.

Assets are package data (found with :mod:`importlib.resources`), so an installed copy
(``pip install .``) works from any directory, as the source tree does. They must be on the
filesystem (a regular install, not a zip), because Docker reads the build contexts.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

#: image build contexts, compose file and set-up script (the ``compose/`` folder)
COMPOSE_DIR = Path(str(resources.files("kchaos.compose")))


def packaged_schema(name: str) -> dict[str, Any]:
    """A JSON Schema kchaos ships, ``harness/schema/NAME`` in the package data."""
    text = resources.files("kchaos.harness").joinpath("schema", name).read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def cache_dir() -> Path:
    """Build caches (base rootfs, Maven repo, Go build cache), outside the clone.

    It lives outside the source tree so that a fresh clone (CI) reuses what an earlier
    set-up on the same machine downloaded and built.
    """
    return Path(os.environ.get("KCHAOS_CACHE_DIR", "/var/cache/kchaos"))


def runs_dir() -> Path:
    """Default parent of run directories: ``runs/`` under the current directory.

    Never inside the package; ``KCHAOS_RUNS_DIR`` moves it.
    """
    return Path(os.environ.get("KCHAOS_RUNS_DIR", Path.cwd() / "runs"))
