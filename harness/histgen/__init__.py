"""Synthetic histories (format v1, and 1.2 with transactions) from a simulated Kafka
log, for tests and benchmarks.

``generate(path, events=..., inject=(...))`` simulates producers, consumers, a monitor,
a nemesis and a final drain over an in-memory log per partition, and writes the history
line by line. A clean history (no ``inject``) is valid by construction; it still contains
the near misses a checker must not flag: ``info`` sends that landed, ``fail`` sends,
rebalances that re-read earlier offsets, sends retried across an ISR dip that recovered,
leaders elected from the ELR, and (optionally) a log start offset above zero.

Each name in ``inject`` adds exactly one instance of that anomaly kind (for ``unseen``:
the sends of one undrained partition that no consumer saw), and
``GeneratedHistory.expected`` states the count a correct checker reports per kind.

``generate_txn(path, events=..., inject=(...))`` (:mod:`kchaos.harness.histgen.txn`) writes
a transactional history instead: producers of transactions, a copier, read_committed and
read_uncommitted readers and a read_committed drain, with the kinds of
:data:`TXN_INJECTABLE` on request. ``generate_run(..., transactional=True)`` writes one
into a run directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from kchaos.harness.histgen.model import INJECTABLE, INVALIDATING, GeneratedHistory, Injection
from kchaos.harness.histgen.sim import Sim, drain
from kchaos.harness.histgen.txn import TXN_INJECTABLE, generate_txn
from kchaos.harness.rundir.rundir import RunDir

__all__ = [
    "INJECTABLE",
    "TXN_INJECTABLE",
    "GeneratedHistory",
    "Injection",
    "generate",
    "generate_run",
    "generate_txn",
]


def generate(
    path: str | Path,
    *,
    events: int = 10_000,
    topic: str = "t",
    partitions: int = 3,
    producers: int = 2,
    consumers: int = 2,
    seed: int = 0,
    inject: Sequence[str] = (),
    faults: bool = True,
    log_start_offset: int = 0,
    replicas: int = 3,
    min_insync: int = 2,
    elr: bool = True,
    in_flight: int = 5,
    max_poll: int = 20,
) -> GeneratedHistory:
    """Write a history of about ``events`` lines (plus the drain) to ``path``.

    ``inject`` names anomaly kinds from :data:`INJECTABLE`, each at most once.
    ``log_start_offset`` makes the drain start there (records below it were "deleted").
    Deterministic for a given seed and arguments.
    """
    unknown = [k for k in inject if k not in INJECTABLE]
    if unknown or len(set(inject)) != len(inject):
        raise ValueError(f"inject: unknown or repeated kinds {list(inject)}")
    if "unseen" in inject and partitions < 2 and len(inject) > 1:
        raise ValueError("unseen with other injections needs at least 2 partitions")
    if producers < 1 or consumers < 1 or partitions < 1 or replicas < 2:
        raise ValueError("need at least 1 producer, 1 consumer, 1 partition, 2 replicas")
    path = Path(path)
    from kchaos.harness.histgen.workload import run_workload

    g = Sim(path, seed, topic, partitions, replicas, min_insync, elr)
    try:
        run_workload(g, events, producers, consumers, list(inject), faults, in_flight, max_poll)
        drain(g, log_start_offset, "unseen" in inject)
    finally:
        g.fh.close()
    expected = {inj.kind: 1 for inj in g.injected}
    if "unseen" in inject:
        expected["unseen"] = sum(1 for inj in g.injected if inj.kind == "unseen")
    valid: bool | Literal["unknown"] = True
    if "unseen" in expected:
        valid = "unknown"
    if INVALIDATING & set(expected):
        valid = False
    return GeneratedHistory(
        path=path,
        events=g.index,
        sends=g.sends,
        seed=seed,
        topic=topic,
        partitions=partitions,
        injected=tuple(g.injected),
        expected=expected,
        expected_valid=valid,
        outcomes=dict(g.outcomes),
    )


def generate_run(run_dir: RunDir | str | Path, **kwargs: Any) -> GeneratedHistory:
    """``generate`` (``transactional=True``: ``generate_txn``) into
    ``run_dir/history.jsonl`` and write a matching ``run.json``."""
    rd = RunDir.of(run_dir).create()
    run_json = kwargs.pop("run_json", None)
    if kwargs.pop("transactional", False):
        gen = generate_txn(rd.history, **kwargs)
        names = [(gen.topic, gen.partitions), (f"{gen.topic}-in", 1)]
        names.append((f"{gen.topic}-out", gen.partitions))
    else:
        gen = generate(rd.history, **kwargs)
        names = [(gen.topic, gen.partitions)]
    min_insync = str(kwargs.get("min_insync", 2))
    config: dict[str, Any] = {
        "generated_by": "kchaos.harness.histgen",
        "seed": gen.seed,
        "topics": [
            {"name": name, "partitions": n, "configs": {"min.insync.replicas": min_insync}}
            for name, n in names
        ],
        "producer": {"acks": "all"},
    }
    if run_json:
        config.update(run_json)
    rd.write_run(config)
    return gen
