"""Property-based, history format 1.2: random transactional histories built over a
simulated log are valid; each injected transactional anomaly is found, and only it."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from txn_gen import INJECTABLE, generate

from kchaos.harness.checker import check_history

shapes = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32),
        "txns": st.integers(0, 40),
        "partitions": st.integers(1, 4),
        "inputs": st.integers(2, 12),
    }
)


def _found(shape: dict, inject: tuple[str, ...]) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        h = generate(inject=inject, **shape)
        r = check_history(h.write(Path(tmp) / "history.jsonl"))
        return {k: a.count for k, a in r.anomalies.items()}


@settings(max_examples=40, deadline=None)
@given(shapes)
def test_clean_transactional_histories_are_valid(shape: dict) -> None:
    assert _found(shape, ()) == {}, shape


@settings(max_examples=60, deadline=None)
@given(shapes, st.sampled_from(INJECTABLE))
def test_each_injected_kind_is_found_alone_and_exactly_once(shape: dict, kind: str) -> None:
    assert _found(shape, (kind,)) == {kind: 1}, (shape, kind)


@settings(max_examples=25, deadline=None)
@given(shapes, st.sets(st.sampled_from(INJECTABLE), min_size=2))
def test_injected_kinds_together_are_each_found_once(shape: dict, kinds: set[str]) -> None:
    assert _found(shape, tuple(sorted(kinds))) == dict.fromkeys(kinds, 1), (shape, kinds)
