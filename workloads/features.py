"""The cluster's finalized feature levels (KIP-584), read once after it started.

History format 1.3 puts them in run.json (``"features": {"transaction.version": 2,
"metadata.version": 27, ...}``) so a reader can tell which transaction protocol the cluster
offered; each ``txn-init`` line says what the client really used. Read through
kafka-python's ApiVersions (v3 carries the finalized features), from any broker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: How long the read may take; a slow answer is recorded as an error, never waited out.
REQUEST_TIMEOUT_MS = 10_000


def finalized_levels(described: Mapping[str, Any]) -> dict[str, int]:
    """``{feature: level}`` from kafka-python's ``describe_features()`` answer: a finalized
    feature's max level is the level in force (KIP-584 finalizes a single level)."""
    out: dict[str, int] = {}
    for name, info in described.items():
        finalized = info.get("finalized") if isinstance(info, Mapping) else None
        if finalized is not None:
            out[str(name)] = int(finalized[1])
    return dict(sorted(out.items()))


def read_features(
    bootstrap_servers: str, admin_factory: Callable[..., Any] | None = None
) -> dict[str, Any]:
    """run.json's ``features`` entry: the finalized levels, or ``{"error": ...}`` naming
    why they could not be read (a run goes on without them; nothing is guessed)."""
    if admin_factory is None:
        from kafka import KafkaAdminClient

        admin_factory = KafkaAdminClient
    try:
        admin = admin_factory(
            bootstrap_servers=bootstrap_servers.split(","),
            client_id="kchaos-features",
            request_timeout_ms=REQUEST_TIMEOUT_MS,
        )
    except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
        return {"error": f"{type(exc).__name__}: {exc}"}
    try:
        return finalized_levels(admin.describe_features())
    except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        admin.close()
