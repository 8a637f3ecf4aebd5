"""The anomaly vocabulary of history format 1.2, defined once.

Every kind a checker may report, grouped by what it does to a run's verdict. The
checker, the Spark job, the scenario schema, the history generator and the reports all
take their names from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Kinds that make a run invalid (unless a scenario lists them under ``allowed``).
INVALIDATING: tuple[str, ...] = (
    "lost-write",
    "uncommitted-read",
    "aborted-read",
    "duplicate",
    "inconsistent-offset",
    "nonmonotonic-poll",
    "poll-skip",
    "acked-below-min-isr",
    "unclean-election",
    # in-sync replicas that disagree below the high watermark (replicas.jsonl only)
    "replica-divergence",
    # history format 1.2: transactions and exactly-once (TXN_KINDS below)
    "torn-transaction",
    "zombie-commit",
    "hanging-transaction",
    "eos-duplicate",
    "eos-lost",
)
#: The kinds history format 1.2 adds for transactions and exactly-once processing
#: (``lost-write`` and ``aborted-read`` are extended to transactions, not added).
TXN_KINDS: tuple[str, ...] = (
    "torn-transaction",
    "zombie-commit",
    "hanging-transaction",
    "eos-duplicate",
    "eos-lost",
)
#: The kinds of version 1 that format 1.2 extends to transactions: a committed value
#: missing from the drain, an aborted value returned to a read_committed reader.
TXN_EXTENDED: tuple[str, ...] = ("lost-write", "aborted-read")
#: Kinds that leave a run's verdict unknown at best: the run cannot show it is valid.
UNKNOWN_MAKING: tuple[str, ...] = ("unseen",)
#: Kinds reported and never invalid: offline windows, elections of the last known
#: leader after every replica was lost (KIP-966), brokers the controller fenced
#: although no fault touched them (KAFKA-15489's symptom; a loaded machine can miss a
#: heartbeat too), a broker start that skipped log recovery although the stop before it
#: was unclean and no start since had finished loading its logs (KAFKA-15375's symptom),
#: and leader-epoch checkpoints a page-cache-losing crash left without an entry while
#: the log beside them kept data (KAFKA-16541), and a broker that stayed registered and
#: unfenced for longer than its session timeout while nothing it led acknowledged a
#: send (KAFKA-15046's zombie: a dead broker would have been fenced by then). The two
#: broker-registration kinds are judged from controller.jsonl only, the skipped
#: recovery from the brokers' own logs, the lost checkpoints from the crash faults'
#: start lines, the stalled broker from the sends with controller.jsonl.
REPORTED_ONLY: tuple[str, ...] = (
    "offline",
    "last-known-leader-election",
    "live-broker-fenced",
    "recovery-skipped",
    "epoch-checkpoint-lost",
    "broker-stalled",
)
#: Every kind, in the order reports list them.
KINDS: tuple[str, ...] = INVALIDATING + UNKNOWN_MAKING + REPORTED_ONLY
#: The data kinds of format v1 (sends, reads, the drain).
V1_DATA_KINDS: tuple[str, ...] = (
    "lost-write",
    "uncommitted-read",
    "aborted-read",
    "duplicate",
    "inconsistent-offset",
    "unseen",
)
#: Kinds about the data (sends, transactions, reads, the drain): what the Spark job
#: computes too, with the checker's counts.
DATA_KINDS: tuple[str, ...] = (*V1_DATA_KINDS, *TXN_KINDS)
#: Kinds that never make a run invalid.
NOT_INVALID: frozenset[str] = frozenset(UNKNOWN_MAKING + REPORTED_ONLY)


def anomaly_text(counts: Mapping[str, Any], causes: Mapping[str, Any] | None = None) -> str:
    """``duplicate 10 (producer-epoch-bump 10), offline 3``: the non-zero counts of a
    summary's ``anomalies``, each with its ``causes`` where the checker found them."""
    parts = []
    for kind, n in sorted(counts.items()):
        if not n:
            continue
        by_cause = (causes or {}).get(kind) or {}
        why = ", ".join(f"{c} {m}" for c, m in sorted(by_cause.items()))
        parts.append(f"{kind} {n} ({why})" if why else f"{kind} {n}")
    return ", ".join(parts)
