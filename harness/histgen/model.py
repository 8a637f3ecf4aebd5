"""What the generator can inject and what it reports back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kchaos.harness.rundir.anomalies import INVALIDATING as CHECKER_INVALIDATING
from kchaos.harness.rundir.anomalies import KINDS, TXN_KINDS

# Every anomaly kind of format v1 can be injected (the list is the checker's own); the
# last-known-leader election of format 1.1 and a broker fenced while no fault touched it
# exist only in controller.jsonl, a skipped log recovery only in the brokers' logs, a
# lost leader-epoch checkpoint only in a crash fault's start line, and a replica
# divergence only in replicas.jsonl, none of which the generator writes.
# The transactional kinds of format 1.2 come from histgen.txn (TXN_INJECTABLE) instead.
NOT_IN_HISTORY = (
    "last-known-leader-election",
    "live-broker-fenced",
    "recovery-skipped",
    "epoch-checkpoint-lost",
    # judged against controller.jsonl's broker lines, which the generator does not write
    "broker-stalled",
    "replica-divergence",
    *TXN_KINDS,
)
INJECTABLE: tuple[str, ...] = tuple(k for k in KINDS if k not in NOT_IN_HISTORY)

INVALIDATING = frozenset(INJECTABLE) & frozenset(CHECKER_INVALIDATING)


@dataclass(frozen=True)
class Injection:
    """One injected anomaly: where it is and the history index of its key line."""

    kind: str
    topic: str
    partition: int
    value: str | None
    offset: int | None
    index: int


@dataclass(frozen=True)
class GeneratedHistory:
    """What ``generate`` wrote and what a correct checker must conclude."""

    path: Path
    events: int
    sends: int
    seed: int
    topic: str
    partitions: int
    injected: tuple[Injection, ...]
    expected: dict[str, int]
    expected_valid: bool | Literal["unknown"]
    outcomes: dict[str, int] = field(default_factory=dict)
