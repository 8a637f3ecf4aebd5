"""Labels and on-host locations that mark what kchaos created.

`kchaos cleanup` finds leftovers only through these: Docker objects carrying
``LABEL_APP``, and loop devices, mounts and image files under ``state_root()``.
Nothing without them is ever touched.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

LABEL_APP = "io.kchaos"  # value "1" on everything kchaos creates
LABEL_RUN = "io.kchaos.run"  # the run id
LABEL_ROLE = "io.kchaos.role"  # "broker", "controller", "toxiproxy", "tool", "client"
LABEL_NODE = "io.kchaos.node"  # node id, for brokers and controllers


def state_root() -> Path:
    """Where per-run loop images and mount points live (default /var/lib/kchaos)."""
    return Path(os.environ.get("KCHAOS_STATE_DIR", "/var/lib/kchaos"))


def new_run_id() -> str:
    """A sortable, unique run id such as ``20261121-010203-a1b2``."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(2)


def labels_for(run_id: str, role: str, node: int | None = None) -> dict[str, str]:
    labels = {LABEL_APP: "1", LABEL_RUN: run_id, LABEL_ROLE: role}
    if node is not None:
        labels[LABEL_NODE] = str(node)
    return labels
