"""Random transactional histories (format 1.2) over a simulated log, for property tests.

The simulation keeps, per partition, the log as Kafka would hold it: each transaction's
records (committed or aborted) followed by one control marker per partition it wrote
to. Readers see what their isolation allows (read_committed: committed records only;
read_uncommitted: every record), the drain reads read_committed. A clean history is
valid by construction, and holds the near misses: aborted and unknown transactions,
read_uncommitted readers of aborted values, producers re-initialising their own id, an
aborted copy retried, unknown copies that did or did not land.

``inject`` adds exactly one instance of each kind named (see :data:`INJECTABLE`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from txn_hist import TH

INJECTABLE = (
    "lost-write",
    "aborted-read",
    "torn-transaction",
    "zombie-commit",
    "hanging-transaction",
    "eos-duplicate",
    "eos-lost",
)


@dataclass
class Rec:
    value: str | None  # None: a control marker
    committed: bool
    hidden: bool = False  # an injected loss: neither the drain nor a reader has it
    rc_visible: bool = False  # an injected aborted read: a read_committed reader got it


@dataclass
class Gen:
    rng: random.Random
    partitions: int
    inject: tuple[str, ...]
    h: TH = field(default_factory=TH)
    logs: dict[tuple[str, int], list[Rec]] = field(default_factory=dict)
    n: int = 0

    def log(self, topic: str, part: int) -> list[Rec]:
        return self.logs.setdefault((topic, part), [])

    def txn(
        self,
        process: int,
        tid: str,
        outcome: str,
        values: list[tuple[str, int, str]],
        *,
        landed: bool = False,
        copies: dict[str, str] | None = None,
        consumed: list[tuple[str, int, int, str]] | None = None,
        group: str | None = None,
        positions: list[tuple[str, int, int]] | None = None,
        hide: int = -1,
        rc_visible: bool = False,
    ) -> None:
        """One transaction; ``landed``: an info one that committed. ``hide``: the index of
        a value to lose after it was written."""
        self.n += 1
        name = f"{process}-{self.n}"
        self.h.begin(
            process,
            name,
            tid,
            *[(t, v) for t, _, v in values],
            consumed=consumed,
            group=group,
            positions=positions,
            copies=copies,
        )
        committed = outcome == "ok" or (outcome == "info" and landed)
        acks = []
        touched = set()
        for i, (topic, part, value) in enumerate(values):
            log = self.log(topic, part)
            acks.append((topic, part, len(log) if self.rng.random() < 0.7 else None, value))
            log.append(Rec(value, committed, hidden=i == hide, rc_visible=rc_visible))
            touched.add((topic, part))
        for topic, part in sorted(touched):
            self.log(topic, part).append(Rec(None, committed))
        if outcome == "ok":
            self.h.end(process, name, "ok", *acks)
        else:
            self.h.end(process, name, outcome)


def generate(seed: int, txns: int, partitions: int, inputs: int, inject: tuple[str, ...]) -> TH:
    rng = random.Random(seed)
    g = Gen(rng, partitions, inject)
    h = g.h
    producers = [1, 2, 3]
    for p in producers:
        h.init(p, f"tid-{p}")
    # the copier's input: plain sends to in/0
    for i in range(inputs):
        h.add(process=0, type="invoke", f="send", topic="in", key="k", value=f"in-{i}")
        h.add(process=0, type="ok", f="send", topic="in", partition=0, offset=i, value=f"in-{i}")
        g.log("in", 0).append(Rec(f"in-{i}", True))
    h.init(9, "copier")

    for _ in range(txns):
        p = rng.choice(producers)
        if rng.random() < 0.1:
            h.init(p, f"tid-{p}")  # the producer re-initialises its own id: no fencing
        outcome = rng.choice(["ok", "ok", "fail", "info"])
        values = [
            ("t", rng.randrange(partitions), f"v{p}-{g.n}-{k}") for k in range(rng.randint(1, 3))
        ]
        g.txn(p, f"tid-{p}", outcome, values, landed=rng.random() < 0.5)

    if "lost-write" in inject:
        g.txn(1, "tid-1", "ok", [("t", 0, "lost")], hide=0)
    if "torn-transaction" in inject:
        g.txn(2, "tid-2", "info", [("t", 0, "torn-0"), ("t", 1 % partitions, "torn-1")],
              landed=True, hide=1)  # fmt: skip
    if "aborted-read" in inject:
        g.txn(3, "tid-3", "fail", [("t", 0, "aborted")], rc_visible=True)
    if "zombie-commit" in inject:
        h.init(99, "tid-1")  # a new producer of tid-1 fences process 1 ...
        g.txn(1, "tid-1", "ok", [("t", 0, "zombie")])  # ... which commits anyway

    _copier(g, inputs)
    _readers(g)
    if "hanging-transaction" in inject or rng.random() < 0.2:
        h.wait(61)  # longer than the transaction timeout (a near miss without injection)
    _drain(g)
    return h


def _copier(g: Gen, inputs: int) -> None:
    rng, pos, last = g.rng, 0, 0
    lost = "eos-lost" in g.inject
    while pos < inputs:
        size = rng.randint(1, 3)
        if lost and pos + size >= inputs - 1:
            size = inputs - pos  # the last chunk: at least two inputs, one of them skipped
        chunk = list(range(pos, min(inputs, pos + size)))
        skip = chunk[-1] if lost and chunk[-1] == inputs - 1 and len(chunk) >= 2 else None
        outcome = "ok" if skip is not None else rng.choice(["ok", "ok", "fail", "info"])
        landed = rng.random() < 0.5
        g.txn(
            9,
            "copier",
            outcome,
            [("out", 0, f"c{g.n + 1}-{i}") for i in chunk if i != skip],
            copies={f"c{g.n + 1}-{i}": f"in-{i}" for i in chunk},
            consumed=[("in", 0, i, f"in-{i}") for i in chunk],
            group="g",
            positions=[("in", 0, chunk[-1] + 1)],
            landed=landed,
        )
        if outcome == "ok" or (outcome == "info" and landed):
            pos = chunk[-1] + 1
            last = pos
    if "eos-duplicate" in g.inject and inputs:
        g.txn(9, "copier", "ok", [("out", 0, "dup-0")], copies={"dup-0": "in-0"},
              consumed=[("in", 0, 0, "in-0")], group="g", positions=[("in", 0, last)])  # fmt: skip


def _readers(g: Gen) -> None:
    h, rng = g.h, g.rng
    tps = sorted(g.logs)
    for process, iso in ((5, "read_committed"), (6, "read_uncommitted")):
        h.assign_iso(process, iso, *tps)
        for tp in tps:
            seen = [
                (tp[0], tp[1], off, r.value)
                for off, r in enumerate(g.logs[tp])
                if r.value is not None
                and not r.hidden
                and (iso == "read_uncommitted" or r.committed or r.rc_visible)
            ]
            while seen:
                k = rng.randint(1, 4)
                h.poll_at(process, *seen[:k])  # type: ignore[arg-type]
                seen = seen[k:]


def _drain(g: Gen) -> None:
    hanging = "hanging-transaction" in g.inject
    for tp in sorted(g.logs):
        log = g.logs[tp]
        recs = [
            (off, r.value)
            for off, r in enumerate(log)
            if r.value is not None and r.committed and not r.hidden
        ]
        stable: Any = None
        if hanging and log:  # the first partition written to: its stable offset stuck
            stable, hanging = len(log) - 1, False
        g.h.drain_tp(tp[0], tp[1], recs, len(log), stable=stable)
    for part in range(g.partitions):  # partitions never written to are drained too
        if ("t", part) not in g.logs:
            g.h.drain_tp("t", part, [], 0)
