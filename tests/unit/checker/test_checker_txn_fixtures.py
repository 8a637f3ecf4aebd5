"""The checker on the hand-written format 1.2 histories the Spark job is tested with
(tests/unit/fixtures/txn): the same counts as expected.json, which
tests/unit/analysis/test_analysis_txn.py holds the Spark job to, so the two agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kchaos.harness.checker import check_history
from kchaos.harness.rundir.anomalies import DATA_KINDS

FIXTURES = Path(__file__).parents[1] / "fixtures" / "txn"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_checker_counts_equal_the_fixtures_expected_ones(name: str) -> None:
    results = check_history(FIXTURES / name)
    counts = {
        kind: a.count for kind, a in results.anomalies.items() if kind in DATA_KINDS and a.count
    }
    assert counts == EXPECTED[name]["anomalies"]
    assert results.valid == EXPECTED[name]["valid"]
