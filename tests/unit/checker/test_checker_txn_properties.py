"""Property-based, history format 1.2: random transactional histories from the shared
generator (kchaos.harness.histgen.txn) are valid; each injected transactional anomaly is
found, and only it."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kchaos.harness.checker import check_history
from kchaos.harness.histgen import TXN_INJECTABLE, generate_txn

shapes = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32),
        "events": st.integers(0, 400),
        "partitions": st.integers(1, 4),
        "producers": st.integers(1, 3),
        "max_sends": st.integers(1, 4),
    }
)


def _found(shape: dict[str, Any], inject: Sequence[str]) -> tuple[dict[str, int], dict[str, int]]:
    """(what the checker found, what the generator says it injected)."""
    with tempfile.TemporaryDirectory() as tmp:
        gen = generate_txn(Path(tmp) / "history.jsonl", inject=inject, **shape)
        r = check_history(gen.path)
        assert r.valid == gen.expected_valid, (shape, inject)
        return {k: a.count for k, a in r.anomalies.items()}, gen.expected


@settings(max_examples=40, deadline=None)
@given(shapes)
def test_clean_transactional_histories_are_valid(shape: dict[str, Any]) -> None:
    assert _found(shape, ()) == ({}, {}), shape


@settings(max_examples=60, deadline=None)
@given(shapes, st.sampled_from(TXN_INJECTABLE))
def test_each_injected_kind_is_found_alone_and_exactly_once(
    shape: dict[str, Any], kind: str
) -> None:
    found, expected = _found(shape, (kind,))
    assert expected == {kind: 1}
    assert found == expected, (shape, kind)


@settings(max_examples=25, deadline=None)
@given(shapes, st.sets(st.sampled_from(TXN_INJECTABLE), min_size=2))
def test_injected_kinds_together_are_each_found_once(
    shape: dict[str, Any], kinds: set[str]
) -> None:
    found, expected = _found(shape, tuple(sorted(kinds)))
    assert expected == dict.fromkeys(kinds, 1)
    assert found == expected, (shape, kinds)
