"""``--shard K/N``: one machine's share of a batch's plan, and the record it leaves.

``kchaos matrix``, ``suite`` and ``soak`` make a plan of cells (one run each: a scenario on
a release with a seed) and, with ``--shard K/N``, run only the K-th of N shards. The split
depends on nothing but the plan, N and the durations file: each cell's expected seconds
are its (scenario, release)'s measured wall time in that file, or, without a record, the
workload's duration plus the usual per-run overhead (:func:`progress.run_guess`). Cells
are dealt longest first, each to the shard with the least expected time so far (ties: the
lower shard; equal cells: by label), so every cell lands in exactly one shard and the
same inputs give the same shards on any machine.

The durations file (``runs/durations.json`` by default) maps ``SCENARIO@RELEASE`` to
``{"seconds": S, "runs": R}`` (a running mean over the last few runs). Every finished run
of an unsharded batch updates it; a shard does not (its sibling shards, perhaps run later
on the same machine, must split the plan as it did): ``kchaos merge`` adds what every
shard measured. Shards split with different files have different plan ids, and merge
refuses them.

Every batch directory gets a ``shard.json`` (:class:`BatchLog`), an unsharded one as
shard 1/1: written before the first run with ``complete: false`` and rewritten after
each run, ``complete: true`` once the batch wrote its page. It holds what ``kchaos merge``
(:mod:`kchaos.harness.run.merge`) needs: the plan's id and every cell with its shard, the
cells this shard finished, and what the batch's page writer takes besides the runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kchaos.harness.errors import ConfigError
from kchaos.harness.paths import runs_dir
from kchaos.harness.run.progress import run_guess
from kchaos.harness.rundir.files import read_object, write_json
from kchaos.harness.rundir.rundir import RunDir, durations_file

SHARD_FORMAT = 1
# a cell's record follows its last few runs: a mean over at most this many
DURATION_WINDOW = 5


@dataclass(frozen=True)
class ShardSpec:
    index: int  # K, 1-based
    count: int  # N

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


WHOLE = ShardSpec(1, 1)


def parse_shard(text: str) -> ShardSpec:
    """``"2/4"`` -> ShardSpec(2, 4); ValueError saying what is wrong otherwise."""
    k, sep, n = text.partition("/")
    if not sep or not k.strip().isdigit() or not n.strip().isdigit():
        raise ValueError(f"expected K/N such as 2/4, got {text!r}")
    spec = ShardSpec(int(k), int(n))
    if spec.count < 1 or not 1 <= spec.index <= spec.count:
        raise ValueError(f"K must be between 1 and N (N at least 1), got {text!r}")
    return spec


def default_durations() -> Path:
    return durations_file(runs_dir())


def cell_key(scenario: str, release: str | None) -> str:
    return f"{scenario}@{release}"


def read_durations(path: Path | None) -> dict[str, float]:
    """``SCENARIO@RELEASE`` -> measured seconds; {} without a file. A malformed file is
    bad input (ConfigError naming the file and the field)."""
    if path is None:
        return {}
    data = read_object(path)
    if data is None:
        return {}
    cells = data.get("cells", {})
    if not isinstance(cells, dict):
        raise ConfigError("must be an object", file=str(path), field="cells")
    out: dict[str, float] = {}
    for key, rec in cells.items():
        seconds = rec.get("seconds") if isinstance(rec, dict) else None
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
            raise ConfigError(
                f"expected a positive number, got {seconds!r}",
                file=str(path),
                field=f"cells.{key}.seconds",
            )
        out[str(key)] = float(seconds)
    return out


def record_durations(path: Path, measured: Mapping[str, float]) -> None:
    """Fold ``measured`` (``SCENARIO@RELEASE`` -> seconds) into the durations file."""
    data = read_object(path) if path.exists() else None
    cells = dict((data or {}).get("cells") or {})
    for key, seconds in measured.items():
        old = cells.get(key) if isinstance(cells.get(key), dict) else None
        runs = int(old.get("runs", 0)) if old else 0
        prev = old.get("seconds") if old else None
        if isinstance(prev, int | float) and runs > 0:
            weight = min(runs, DURATION_WINDOW - 1)
            seconds = (prev * weight + seconds) / (weight + 1)
        cells[key] = {"seconds": round(seconds, 1), "runs": runs + 1}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"format": 1, "cells": dict(sorted(cells.items()))})


def expected_seconds(entries: Sequence[Any], durations: Mapping[str, float]) -> list[float]:
    """Each SuiteEntry's expected wall time: its record, else workload + overhead."""
    out = []
    for e in entries:
        sc = e.scenario
        known = durations.get(cell_key(sc.name, sc.cluster.kafka_version))
        out.append(known if known is not None else run_guess(sc.workload.duration))
    return out


def assign(costs: Sequence[float], labels: Sequence[str], count: int) -> list[int]:
    """The shard (1-based) of each cell: longest first, to the least loaded shard."""
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], labels[i]))
    loads = [0.0] * count
    shard = [0] * len(costs)
    for i in order:
        k = min(range(count), key=lambda j: (loads[j], j))
        loads[k] += costs[i]
        shard[i] = k + 1
    return shard


def plan_id(kind: str, labels: Sequence[str], shards: Sequence[int]) -> str:
    """The same plan (kind, cells in order) split the same way gives the same id anywhere;
    shards split with different durations files do not share one."""
    text = "\n".join([kind, *(f"{label} {k}" for label, k in zip(labels, shards, strict=True))])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class ShardPlan:
    """A batch's whole plan split N ways, and this machine's shard of it."""

    kind: str
    entries: list[Any]  # every SuiteEntry of the plan, in plan order
    costs: list[float]
    shards: list[int]  # each entry's shard, 1-based
    spec: ShardSpec

    @property
    def chosen(self) -> list[Any]:
        return [e for e, k in zip(self.entries, self.shards, strict=True) if k == self.spec.index]

    @property
    def id(self) -> str:
        return plan_id(self.kind, [e.label for e in self.entries], self.shards)

    def load(self, k: int) -> float:
        return sum(c for c, s in zip(self.costs, self.shards, strict=True) if s == k)


def split(
    kind: str, entries: Sequence[Any], spec: ShardSpec | None, durations: Path | None
) -> ShardPlan:
    spec = spec or WHOLE
    costs = expected_seconds(entries, read_durations(durations))
    shards = assign(costs, [e.label for e in entries], spec.count)
    return ShardPlan(kind, list(entries), costs, shards, spec)


def print_plan(console: Any, plan: ShardPlan) -> None:
    """``--dry-run``: the shard's cells with their expected seconds, and every shard's load."""
    total = sum(plan.costs)
    console.print(
        f"plan {plan.id}: {len(plan.entries)} cells, about {total / 60:.1f} min; shard {plan.spec}:"
    )
    for e, cost, k in zip(plan.entries, plan.costs, plan.shards, strict=True):
        if k == plan.spec.index:
            console.print(f"  {e.label}  {cost:.0f}s")
    loads = ", ".join(f"{k}: {plan.load(k) / 60:.1f} min" for k in range(1, plan.spec.count + 1))
    console.print(f"shards ({plan.spec.count}) expected: {loads}")


@dataclass
class BatchLog:
    """Writes ``shard.json`` into a batch directory as its runs end; ``context`` is what
    the batch's page writer takes besides the runs (the title, ...)."""

    out_dir: Path
    plan: ShardPlan
    context: dict[str, Any]
    durations: Path | None = None
    done: dict[str, dict[str, Any]] = field(default_factory=dict)

    def begin(self) -> None:
        self._write(complete=False)

    def ran(self, entry: Any, seconds: float, exit_code: int, error: str | None) -> None:
        """One cell ended (``error``: it left no report, and why)."""
        self.done[entry.label] = {
            "seconds": round(seconds, 1),
            "exit_code": exit_code,
            "error": error,
        }
        self._write(complete=False)
        # a shard leaves the file as every shard of its plan read it: kchaos merge adds
        # what the shards measured
        if self.durations is not None and error is None and self.plan.spec.count == 1:
            sc = entry.scenario
            record_durations(self.durations, {cell_key(sc.name, sc.cluster.kafka_version): seconds})

    def end(self, exit_code: int) -> None:
        self._write(complete=True, exit_code=exit_code)

    def _write(self, *, complete: bool, exit_code: int | None = None) -> None:
        p = self.plan
        cells = [
            {
                "label": e.label,
                "scenario": e.scenario.name,
                "kafka_version": e.scenario.cluster.kafka_version,
                "seed": e.scenario.seed,
                "shard": k,
                "expected_s": round(c, 1),
            }
            for e, k, c in zip(p.entries, p.shards, p.costs, strict=True)
        ]
        write_json(
            RunDir(self.out_dir).shard_json,
            {
                "format": SHARD_FORMAT,
                "kind": p.kind,
                "plan": p.id,
                "shard": p.spec.index,
                "of": p.spec.count,
                "complete": complete,
                "exit_code": exit_code,
                "context": self.context,
                "plan_cells": cells,
                "done": self.done,
            },
        )


def largest_share(plan: ShardPlan) -> float:
    """The largest shard's expected time over total/N (1.0: perfectly even)."""
    n = plan.spec.count
    total = sum(plan.costs)
    if total == 0:
        return 1.0
    return max(plan.load(k) for k in range(1, n + 1)) / (total / n)
