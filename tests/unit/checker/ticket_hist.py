"""What the tests of the ticket checkers share: a history with crash faults in it, and
the library scenario of a ticket judging results by the release they ran on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from checker_hist import H

from kchaos.harness.rundir.expect import Outcome, evaluate
from kchaos.harness.scenario.loader import load_scenario

S = 1_000_000_000
#: The reasons :func:`evaluate` gives for a ticket's anomaly found where the release
#: forbids it, and missing where the release must show it.
FORBIDDEN = "forbidden anomalies found: {}"
MISSING = "expected anomalies not found: {}"


def library_scenario(name: str) -> Path:
    """The scenario ``name`` (a file name) of the library, harness/scenarios."""
    return Path(__file__).resolve().parents[3] / "harness" / "scenarios" / name


#: The parts of an expectation that ask for evidence that the mechanism ran rather than
#: for anomaly kinds: tested on their own (tests/unit/rundir/test_loglines.py,
#: test_checker_elr_election.py, test_checker_effects.py and the docker tests).
EVIDENCE = ("effects", "log_lines", "elected_from_elr")


def judged(scenario: Path, version: str, results: Mapping[str, Any]) -> Outcome:
    """``results`` (results.json's form) judged by ``scenario``'s expectation on Kafka
    ``version``, on its kinds: the evidence it also requires (:data:`EVIDENCE`) is left
    out, as these tests judge the ticket's kind alone."""
    expect = load_scenario(scenario, kafka_version=version).to_dict()["expect"]
    return evaluate({k: v for k, v in expect.items() if k not in EVIDENCE}, results)


def assert_tells_apart(
    scenario: Path,
    kind: str,
    affected: tuple[str, Mapping[str, Any]],
    fixed: tuple[str, Mapping[str, Any]],
) -> None:
    """(version, results) of a release the ticket affects and of one that has the fix:
    each is as ``scenario`` expects on its own release, and not on the other's, for
    ``kind`` alone (found where it is forbidden, missing where it is required)."""
    (bad, bad_results), (good, good_results) = affected, fixed
    assert judged(scenario, bad, bad_results).expected
    assert judged(scenario, good, good_results).expected
    wrong_fixed = judged(scenario, good, bad_results)
    assert not wrong_fixed.expected
    assert wrong_fixed.reasons == (FORBIDDEN.format(kind),)
    wrong_affected = judged(scenario, bad, good_results)
    assert not wrong_affected.expected
    assert wrong_affected.reasons == (MISSING.format(kind),)


def crash_history(
    crashes: Sequence[tuple[str, str, float]],
    target: str,
    *,
    lasting: float = 0.0,
    detail: dict[str, Any] | None = None,
    until: float = 0.0,
    stop_detail: dict[str, Any] | None = None,
) -> H:
    """A valid history: one send, each crash fault ``(id, fault, start s)`` in start
    order on ``target`` (from its start time, or at once when the history is past it)
    for ``lasting`` s, ``detail`` on its start line and ``stop_detail`` on its stop
    line; then the drain, ``until`` s into the history at the earliest."""
    h = H()
    h.send("a", 0, 0)
    for fid, fault, at in sorted(crashes, key=lambda c: c[2]):
        h.wait(max(at - h.now() / S, 0))
        h.fault("start", fid, fault, [target], detail=detail)
        h.wait(lasting)
        h.fault("stop", fid, fault, [target], detail=stop_detail)
    h.wait(max(until - h.now() / S, 0))
    h.drain_all(0, ["a"])
    return h
