"""A run whose listed fault did not bite ends "not exercised", whatever the checker found."""

from __future__ import annotations

from typing import Any

import pytest

from kchaos.harness.rundir.expect import (
    EXIT_EXPECTED,
    EXIT_NOT_EXERCISED,
    EXIT_UNEXPECTED,
    EXIT_UNKNOWN,
    evaluate,
)


def fault(name: str, family: str, effect: str, started: bool = True) -> dict[str, Any]:
    return {
        "name": name,
        "family": family,
        "targets": ["broker-1"],
        "started": started,
        "effect": effect,
        "observed": f"{name} observed",
    }


def results(valid: Any, *faults: dict[str, Any], **anomalies: int) -> dict[str, Any]:
    return {
        "valid": valid,
        "anomalies": {k.replace("_", "-"): {"count": n} for k, n in anomalies.items()},
        "evidence": {"faults": list(faults)},
    }


SEEN = fault("f-1", "slow-sync", "seen")
IDLE = fault("f-2", "kill", "not-seen")
BLIND = fault("f-3", "slow-disk", "not-measured")


def test_a_listed_fault_that_was_seen_leaves_the_judgement_to_the_rest() -> None:
    out = evaluate({"valid": True, "effects": ["f-1"]}, results(True, SEEN, IDLE))
    assert (out.expected, out.exit_code, out.label) == (True, EXIT_EXPECTED, "as expected")
    out = evaluate({"valid": True, "effects": ["slow-sync"]}, results(False, SEEN, lost_write=1))
    assert (out.exit_code, out.label) == (EXIT_UNEXPECTED, "NOT as expected")


@pytest.mark.parametrize(
    ("effects", "named"),
    [
        (["f-2"], "f-2"),
        (["f-3"], "f-3"),
        (["kill"], "kill"),  # by fault name: every kill of the run
        (["f-1", "slow-disk"], "slow-disk"),
        (["f-9"], "f-9"),  # never started: not in the evidence at all
    ],
)
def test_a_listed_fault_not_seen_or_not_measured_is_not_exercised(
    effects: list[str], named: str
) -> None:
    # the checker's verdict matches the expectation: still not "as expected"
    out = evaluate({"valid": True, "effects": effects}, results(True, SEEN, IDLE, BLIND))
    assert (out.expected, out.exit_code, out.label) == (False, EXIT_NOT_EXERCISED, "not exercised")
    assert out.not_exercised == (named,)
    assert out.reasons[0].startswith(f"not exercised: {named}")


def test_not_exercised_wins_over_what_the_checker_found() -> None:
    expect = {"valid": False, "anomalies": ["lost-write"], "effects": ["f-2"]}
    out = evaluate(expect, results(False, SEEN, IDLE, lost_write=3))
    assert out.exit_code == EXIT_NOT_EXERCISED
    out = evaluate({"valid": True, "effects": ["f-2"]}, results("unknown", IDLE, unseen=1))
    assert out.exit_code == EXIT_NOT_EXERCISED and out.exit_code != EXIT_UNKNOWN
    assert any("verdict unknown" in r for r in out.reasons)  # the other reasons stay


def test_a_fault_name_needs_every_such_fault_seen() -> None:
    again = fault("f-4", "slow-sync", "not-seen")
    out = evaluate({"effects": ["slow-sync"]}, results(True, SEEN, again))
    assert out.not_exercised == ("slow-sync",) and "f-4 not-seen" in out.reasons[0]


def test_results_without_evidence_exercise_nothing_listed() -> None:
    out = evaluate({"effects": ["f-1"]}, {"valid": True, "anomalies": {}})
    assert out.exit_code == EXIT_NOT_EXERCISED
    out = evaluate({"valid": True}, {"valid": True, "anomalies": {}})
    assert out.exit_code == EXIT_EXPECTED  # no effects listed: nothing to exercise
