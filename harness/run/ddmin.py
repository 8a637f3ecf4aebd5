"""Delta debugging under a run budget, with repeats for flaky reproductions.

Pure: a *probe* is any function from a candidate to a :class:`Trial`; ``kchaos shrink``'s
probe is a full run on a fresh cluster, the unit tests' probes are fakes.

Flakiness policy (:class:`Prober`). A run that shows the anomaly proves the candidate
fails (the checkers report only what the history proves), so one reproduction is enough
to accept a candidate. A clean run proves nothing: the candidate counts as passing only
after ``repeats`` clean runs in a row. A failing candidate therefore costs 1 to
``repeats`` runs, a passing one exactly ``repeats``; with ``repeats`` = 1 (the default
for small budgets) a flaky reproduction that happens to stay clean drops a step that was
needed, and the result is then larger than necessary but still a reproduction (every
accepted candidate did show the anomaly). A run that ends without a verdict counts as
clean. Every candidate is probed at most once per policy (results are cached), and no
probe starts once ``budget`` runs are spent: :class:`BudgetExhausted` ends the search, and
the smallest candidate seen failing is the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kchaos.harness.errors import BudgetExhausted

T = TypeVar("T")
X = TypeVar("X")


@dataclass(frozen=True)
class Trial:
    """One probe of a candidate: reproduced True/False, or None (no verdict)."""

    reproduced: bool | None
    detail: Any = None


class Prober(Generic[T]):
    """Probes candidates under a budget, repeating clean ones, caching verdicts.

    ``admissible(candidate)`` rejects candidates that cannot be run (a schedule the loader
    refuses) without spending a run; ``key`` makes a candidate hashable for the cache.
    """

    def __init__(
        self,
        probe: Callable[[T], Trial],
        *,
        budget: int,
        repeats: int = 1,
        admissible: Callable[[T], bool] | None = None,
        key: Callable[[T], Hashable] = lambda c: c,
    ) -> None:
        if budget < 0 or repeats < 1:
            raise ValueError("budget >= 0 and repeats >= 1")
        self.probe = probe
        self.budget = budget
        self.repeats = repeats
        self.admissible = admissible
        self.key = key
        self.used = 0
        self.cache: dict[Hashable, bool] = {}
        self.last_failing: T | None = None

    def fails(self, candidate: T) -> bool:
        """Whether the candidate reproduces the failure (under the policy above)."""
        k = self.key(candidate)
        if k in self.cache:
            if self.cache[k]:
                self.last_failing = candidate
            return self.cache[k]
        if self.admissible is not None and not self.admissible(candidate):
            self.cache[k] = False
            return False
        for _ in range(self.repeats):
            if self.used >= self.budget:
                raise BudgetExhausted
            self.used += 1
            if self.probe(candidate).reproduced:
                self.cache[k] = True
                self.last_failing = candidate
                return True
        self.cache[k] = False
        return False

    def known_failing(self, candidate: T) -> None:
        """Record a candidate known to fail (the original run) without a probe."""
        self.cache[self.key(candidate)] = True
        self.last_failing = candidate


def _chunks(items: Sequence[X], n: int) -> list[tuple[X, ...]]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(tuple(items[start:end]))
        start = end
    return out


def ddmin(items: Sequence[X], fails: Callable[[tuple[X, ...]], bool]) -> tuple[X, ...]:
    """Zeller's ddmin: a 1-minimal sub-sequence of ``items`` (known to fail) that still
    fails; order is kept. Tries each of n chunks alone, then each complement, doubling n
    when neither fails. Never tests the empty sequence."""
    current = tuple(items)
    n = 2
    while len(current) >= 2:
        parts = _chunks(current, n)
        reduced = None
        for part in parts:
            if fails(part):
                reduced, n = part, 2
                break
        if reduced is None and n > 2:  # with n = 2 the complements are the chunks
            for i in range(n):
                rest = tuple(x for j, p in enumerate(parts) if j != i for x in p)
                if fails(rest):
                    reduced, n = rest, max(n - 1, 2)
                    break
        if reduced is not None:
            current = reduced
            continue
        if n >= len(current):
            break
        n = min(len(current), 2 * n)
    return current


def greedy(
    current: T,
    smaller: Callable[[T], Sequence[T]],
    fails: Callable[[T], bool],
) -> T:
    """Repeatedly replace ``current`` by the first of ``smaller(current)`` that fails,
    until none does."""
    while True:
        for candidate in smaller(current):
            if fails(candidate):
                current = candidate
                break
        else:
            return current
