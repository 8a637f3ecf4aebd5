"""Property-based: clean simulated histories are valid; each injected anomaly is found,
named and counted exactly, alone and together."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kchaos.harness.checker import check_history
from kchaos.harness.histgen import INJECTABLE, generate

_SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

shapes = st.fixed_dictionaries(
    {
        "events": st.integers(300, 2500),
        "partitions": st.integers(2, 5),
        "producers": st.integers(1, 3),
        "consumers": st.integers(1, 3),
        "seed": st.integers(0, 2**32),
        "log_start_offset": st.sampled_from([0, 0, 7, 40]),
        "elr": st.booleans(),
        "faults": st.booleans(),
        "max_poll": st.integers(1, 30),
    }
)


def _check(shape: dict, inject: tuple[str, ...]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        gen = generate(Path(tmp) / "h.jsonl", inject=inject, **shape)
        r = check_history(gen.path)
        assert set(gen.expected) == set(inject), "every requested kind was injected"
        found = {k: a.count for k, a in r.anomalies.items()}
        assert found == gen.expected, (shape, inject)
        assert r.valid == gen.expected_valid
        assert all(o.error is None for o in r.checkers.values())


@_SETTINGS
@given(shape=shapes)
def test_clean_histories_are_valid(shape: dict) -> None:
    _check(shape, ())


@_SETTINGS
@given(shape=shapes, kind=st.sampled_from(INJECTABLE))
def test_each_single_injected_anomaly_is_found_and_named(shape: dict, kind: str) -> None:
    _check(shape, (kind,))


@settings(max_examples=10, deadline=None)
@given(shape=shapes, kinds=st.sets(st.sampled_from(INJECTABLE), min_size=2))
def test_several_injected_anomalies_together(shape: dict, kinds: set[str]) -> None:
    _check(shape, tuple(sorted(kinds)))
