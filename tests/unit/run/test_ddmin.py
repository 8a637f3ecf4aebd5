"""ddmin and the Prober's budget and flakiness policy, against fake "runners"."""

from __future__ import annotations

import random

import pytest

from kchaos.harness.errors import BudgetExhausted
from kchaos.harness.run.ddmin import Prober, Trial, ddmin, greedy

Cand = tuple[int, ...]


def needs(*culprits: int):  # type: ignore[no-untyped-def]
    """A deterministic runner: the failure needs every culprit."""
    calls: list[Cand] = []

    def run(candidate: Cand) -> Trial:
        calls.append(candidate)
        return Trial(set(culprits) <= set(candidate))

    return run, calls


@pytest.mark.parametrize(
    ("n", "culprits"),
    [(2, (0,)), (4, (2, 3)), (10, (3, 7)), (10, (9,)), (16, (0, 5, 15)), (7, (1, 2, 3))],
)
def test_ddmin_finds_exactly_the_culprits(n: int, culprits: tuple[int, ...]) -> None:
    run, calls = needs(*culprits)
    prober = Prober(run, budget=1000)
    prober.known_failing(tuple(range(n)))
    assert ddmin(tuple(range(n)), prober.fails) == culprits
    assert len(calls) == len(set(calls))  # the cache: no candidate run twice
    assert () not in calls  # never the empty schedule


def test_ddmin_keeps_everything_when_everything_is_needed() -> None:
    run, _ = needs(0, 1, 2, 3)
    assert ddmin((0, 1, 2, 3), Prober(run, budget=100).fails) == (0, 1, 2, 3)


def test_two_harmless_steps_before_two_decisive_ones_cost_two_runs() -> None:
    # the docker test's case: steps [latency, pause, isolate, kill], the failure needs
    # isolate and kill; the first split tries the harmless half, then the decisive half
    run, calls = needs(2, 3)
    prober = Prober(run, budget=2)
    prober.known_failing((0, 1, 2, 3))
    with pytest.raises(BudgetExhausted):
        ddmin((0, 1, 2, 3), prober.fails)
    assert calls == [(0, 1), (2, 3)]
    assert prober.last_failing == (2, 3)
    assert prober.used == 2


def test_budget_is_never_exceeded_and_the_best_so_far_is_kept() -> None:
    run, calls = needs(5)
    prober = Prober(run, budget=3)
    prober.known_failing(tuple(range(8)))
    with pytest.raises(BudgetExhausted):
        ddmin(tuple(range(8)), prober.fails)
    assert len(calls) == 3
    assert prober.last_failing is not None and 5 in prober.last_failing
    assert len(prober.last_failing) < 8


def test_inadmissible_candidates_cost_no_run() -> None:
    run, calls = needs(1)
    prober = Prober(run, budget=100, admissible=lambda c: 0 not in c or len(c) > 2)
    prober.known_failing((0, 1, 2, 3))
    assert ddmin((0, 1, 2, 3), prober.fails) == (1,)
    assert all(not (0 in c and len(c) <= 2) for c in calls)


class Alternating:
    """A flaky runner: a candidate holding the culprits reproduces only on every second
    probe of it (the first is clean)."""

    def __init__(self, culprits: set[int]) -> None:
        self.culprits = culprits
        self.seen: dict[Cand, int] = {}
        self.runs = 0

    def __call__(self, candidate: Cand) -> Trial:
        self.runs += 1
        n = self.seen[candidate] = self.seen.get(candidate, 0) + 1
        return Trial(self.culprits <= set(candidate) and n % 2 == 0)


def test_a_flaky_reproduction_is_missed_with_one_run_per_candidate() -> None:
    flaky = Alternating({2, 3})
    prober = Prober(flaky, budget=100, repeats=1)
    prober.known_failing((0, 1, 2, 3, 4, 5))
    # every candidate's first run is clean: nothing can be removed, the answer stays big
    assert ddmin((0, 1, 2, 3, 4, 5), prober.fails) == (0, 1, 2, 3, 4, 5)


def test_repeats_find_the_culprits_of_a_flaky_reproduction() -> None:
    flaky = Alternating({2, 3})
    prober = Prober(flaky, budget=100, repeats=2)
    prober.known_failing((0, 1, 2, 3, 4, 5))
    assert ddmin((0, 1, 2, 3, 4, 5), prober.fails) == (2, 3)
    # the cost: a passing candidate costs `repeats` runs, a failing one up to that
    assert flaky.runs == sum(flaky.seen.values()) <= 2 * len(flaky.seen)


def test_random_flakiness_with_repeats_still_returns_a_reproduction() -> None:
    rng = random.Random(7)
    culprits = {1, 4}

    def run(candidate: Cand) -> Trial:
        return Trial(culprits <= set(candidate) and rng.random() < 0.6)

    for repeats in (1, 3):
        prober = Prober(run, budget=60, repeats=repeats)
        prober.known_failing(tuple(range(8)))
        try:
            result = ddmin(tuple(range(8)), prober.fails)
        except BudgetExhausted:
            result = prober.last_failing  # type: ignore[assignment]
        # whatever was accepted did reproduce: the culprits are always kept
        assert result is not None and culprits <= set(result)


def test_a_run_without_verdict_counts_as_clean() -> None:
    prober = Prober(lambda c: Trial(None), budget=5, repeats=2)
    assert prober.fails((1,)) is False
    assert prober.used == 2


def test_greedy_halves_while_it_fails() -> None:
    def smaller(x: float) -> list[float]:
        return [x / 2] if x > 1 else []

    probes: list[float] = []

    def fails(x: float) -> bool:
        probes.append(x)
        return x >= 3

    assert greedy(24.0, smaller, fails) == 3.0
    assert probes == [12.0, 6.0, 3.0, 1.5]


def test_bad_policy_values_are_refused() -> None:
    with pytest.raises(ValueError):
        Prober(lambda c: Trial(True), budget=1, repeats=0)
