"""What the history pass keeps of transactions (history format 1.2 and 1.3).

A transaction's values live in the per-value arrays of :class:`~.facts.Facts` like sent
values (invoke and completion indexes, topic, status, and partition and offset where the
``ok`` line reported them); this module holds what belongs to the transaction as a whole:
its id, its producer, its values, what it consumed and the positions it committed, when
its commit was called (1.3's ``txn-end``), and the ``txn-init`` calls that fence
producers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kchaos.harness.rundir.history import (  # noqa: F401 - the isolations, re-exported
    FAIL,
    INFO,
    ISOLATIONS,
    OK,
    READ_COMMITTED,
    READ_UNCOMMITTED,
)

#: A transaction whose invoke has no completion in the history (judged like ``info``).
OPEN = "open"
OUTCOMES: tuple[str, ...] = (OK, FAIL, INFO, OPEN)


@dataclass(frozen=True, slots=True)
class Consumed:
    """An input record a copying transaction consumed."""

    topic: str
    partition: int
    offset: int
    value: str


@dataclass(frozen=True, slots=True)
class Txn:
    """One transaction's invoke: its values (ids into Facts' value arrays, in order)."""

    txn: str
    transactional_id: str
    process: int | str
    invoke_index: int
    invoke_time: int
    vids: tuple[int, ...]
    consumed: tuple[Consumed, ...] = ()
    group: str | None = None
    positions: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class TxnEnd:
    """A transaction's completion: ``ok``, ``fail`` or ``info``."""

    outcome: str
    index: int
    time: int


@dataclass(frozen=True, slots=True)
class TxnInit:
    """An ``ok`` completion of ``init_transactions()``."""

    transactional_id: str
    process: int | str
    index: int
    time: int
    producer_id: int | None = None
    producer_epoch: int | None = None


@dataclass
class TxnLog:
    """Transactions of one history, gathered by the history pass."""

    txns: list[Txn] = field(default_factory=list)
    ends: dict[int, TxnEnd] = field(default_factory=dict)  # position in txns -> completion
    pending: dict[str, int] = field(default_factory=dict)  # txn id -> position, while open
    txn_of: dict[int, int] = field(default_factory=dict)  # value id -> position in txns
    copy_of: dict[int, str] = field(default_factory=dict)  # value id -> input value
    consumed: set[str] = field(default_factory=set)  # every input value any txn consumed
    # txn value ids a read_committed reader (a poll, or a copier's consumed record) got
    rc_read: set[int] = field(default_factory=set)
    inits: list[TxnInit] = field(default_factory=list)
    init_ids: dict[int | str, str] = field(default_factory=dict)  # process -> its last id
    last_time: int = -1  # time of the last txn or txn-init line
    # 1.3: position in txns -> index of its first ``txn-end`` with action commit
    commit_called: dict[int, int] = field(default_factory=dict)
    # process -> the isolation its latest assign line states (a copier's consumed
    # records are read at it; read_committed for a process that has none)
    isolation_of: dict[int | str, str] = field(default_factory=dict)
    drain_isolation: set[str] = field(default_factory=set)  # what drain-end lines state

    def __bool__(self) -> bool:
        return bool(self.txns or self.inits)

    def outcome(self, pos: int) -> str:
        end = self.ends.get(pos)
        return OPEN if end is None else end.outcome

    def outcomes(self) -> list[str]:
        """Every transaction's outcome, by position (one pass: the checkers' loops over
        all values index this instead of calling :meth:`outcome` per value)."""
        out = [OPEN] * len(self.txns)
        for pos, end in self.ends.items():
            out[pos] = end.outcome
        return out

    def commit_index(self, pos: int) -> int:
        """Where the transaction's commit was called: its first ``txn-end`` with action
        commit, or its invoke where it has none (format 1.3)."""
        return self.commit_called.get(pos, self.txns[pos].invoke_index)

    def reads_committed(self, proc: int | str) -> bool:
        """Whether ``proc``'s consumed records were read ``read_committed``: as its
        latest assign line says, read_committed where none does (format 1.3)."""
        return self.isolation_of.get(proc, READ_COMMITTED) == READ_COMMITTED

    def value_outcome(self, vid: int) -> str | None:
        """The outcome of the transaction ``vid`` belongs to (None: not a txn value)."""
        pos = self.txn_of.get(vid)
        return None if pos is None else self.outcome(pos)

    def describe(self, vid: int) -> dict[str, Any]:
        """The fields an example gets for a transaction's value (none for a plain send)."""
        pos = self.txn_of.get(vid)
        if pos is None:
            return {}
        t = self.txns[pos]
        return {"txn": t.txn, "transactional_id": t.transactional_id, "outcome": self.outcome(pos)}

    @property
    def drain_read_committed(self) -> bool:
        """The drain read ``read_committed``: in a run with transactions it does, unless
        its drain-end lines say ``read_uncommitted`` (and none says read_committed)."""
        return READ_COMMITTED in self.drain_isolation or not self.drain_isolation
