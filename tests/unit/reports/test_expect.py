import pytest

from kchaos.harness.rundir.expect import (
    EXIT_EXPECTED,
    EXIT_NOT_JUDGED,
    EXIT_UNEXPECTED,
    EXIT_UNKNOWN,
    LABELS,
    evaluate,
)


def res(valid, **anomalies):
    return {
        "valid": valid,
        "anomalies": {k.replace("_", "-"): {"count": n} for k, n in anomalies.items()},
    }


@pytest.mark.parametrize(
    ("expect", "results", "code", "reason"),
    [
        ({"valid": True}, res(True), EXIT_EXPECTED, None),
        ({"valid": True}, res(True, offline=2), EXIT_EXPECTED, None),
        ({"valid": True}, res(False, lost_write=1), EXIT_UNEXPECTED, "unexpected anomalies"),
        ({"valid": True}, res("unknown", unseen=4), EXIT_UNKNOWN, "verdict unknown"),
        (
            {"valid": False, "anomalies": ["lost-write"]},
            res(False, lost_write=3),
            EXIT_EXPECTED,
            None,
        ),
        ({"valid": False, "anomalies": ["lost-write"]}, res(True), EXIT_UNEXPECTED, "not found"),
        (
            {"valid": False, "anomalies": ["lost-write"]},
            res(False, lost_write=1, duplicate=1),
            EXIT_UNEXPECTED,
            "unexpected anomalies: duplicate",
        ),
        (
            {"valid": False, "anomalies": ["lost-write"], "allowed": ["duplicate"]},
            res(False, lost_write=1, duplicate=1),
            EXIT_EXPECTED,
            None,
        ),
        # "allowed: kinds that may be found without failing the run", valid runs included
        (
            {"valid": True, "allowed": ["unclean-election"]},
            res(False, unclean_election=3),
            EXIT_EXPECTED,
            None,
        ),
        (
            {"valid": True, "allowed": ["unclean-election"]},
            res(False, unclean_election=3, lost_write=1),
            EXIT_UNEXPECTED,
            "unexpected anomalies: lost-write",
        ),
        (
            {"valid": True, "allowed": ["unclean-election"]},
            res(False, unclean_election=1, unseen=2),
            EXIT_UNKNOWN,
            "verdict unknown",
        ),
        ({"valid": True, "allowed": ["offline"]}, res(False), EXIT_UNEXPECTED, "verdict invalid"),
        ({"valid": "any"}, res(False, lost_write=9, duplicate=1), EXIT_EXPECTED, None),
        ({"valid": None}, res("unknown", unseen=1), EXIT_EXPECTED, None),
        ({}, None, EXIT_UNEXPECTED, "no results.json"),
        # forbid: the one way a reported-only kind fails a run
        ({"valid": True}, res(True, live_broker_fenced=2), EXIT_EXPECTED, None),
        (
            {"valid": True, "forbid": ["live-broker-fenced"]},
            res(True, live_broker_fenced=2),
            EXIT_UNEXPECTED,
            "forbidden anomalies found: live-broker-fenced",
        ),
        ({"valid": True, "forbid": ["live-broker-fenced"]}, res(True), EXIT_EXPECTED, None),
        (
            {"valid": "any", "forbid": ["offline"]},
            res(False, lost_write=1, offline=1),
            EXIT_UNEXPECTED,
            "forbidden anomalies found: offline",
        ),
        (
            {"valid": True, "allowed": ["duplicate"], "forbid": ["duplicate"]},
            res(False, duplicate=1),
            EXIT_UNEXPECTED,
            "forbidden anomalies found: duplicate",
        ),
        (
            {"valid": True, "anomalies": ["live-broker-fenced"]},
            res(True, live_broker_fenced=1),
            EXIT_EXPECTED,
            None,
        ),
    ],
)
def test_evaluate(expect, results, code, reason):
    outcome = evaluate(expect, results)
    assert outcome.exit_code == code
    assert outcome.expected == (code == EXIT_EXPECTED)
    if reason:
        assert any(reason in r for r in outcome.reasons), outcome.reasons
    else:
        assert outcome.reasons == ()


def test_failed_slo_makes_the_run_unexpected():
    results = res(True)
    results["stats"] = {"thresholds": {"max_offline_seconds": {"pass": False}, "x": {"pass": True}}}
    outcome = evaluate({"valid": True}, results)
    assert outcome.exit_code == EXIT_UNEXPECTED
    assert outcome.slo == {"max_offline_seconds": False, "x": True}
    assert "SLO failed: max_offline_seconds" in outcome.reasons


def test_an_excused_run_keeps_its_own_verdict():
    outcome = evaluate(
        {"valid": True, "allowed": ["unclean-election"]}, res(False, unclean_election=1)
    )
    assert outcome.expected and outcome.verdict is False
    assert outcome.found == ("unclean-election",)


def dup(valid, causes, **more):
    out = res(valid, **more)
    out["anomalies"]["duplicate"] = {"count": sum(causes.values()), "causes": causes}
    return out


@pytest.mark.parametrize(
    ("causes", "code"),
    [
        ({"producer-epoch-bump": 10}, EXIT_EXPECTED),  # every copy pinned on the client
        ({"producer-epoch-bump": 9, "sequence-written-twice": 1}, EXIT_UNEXPECTED),
        ({"unknown": 10}, EXIT_UNEXPECTED),
    ],
)
def test_allowed_causes_excuse_a_kind_only_when_every_occurrence_has_one(causes, code):
    expect = {"valid": True, "allowed": ["offline"], "allowed_causes": ["producer-epoch-bump"]}
    outcome = evaluate(expect, dup(False, causes, offline=1))
    assert outcome.exit_code == code
    assert outcome.verdict is False  # the verdict itself is unchanged
    if code != EXIT_EXPECTED:
        assert "unexpected anomalies: duplicate" in outcome.reasons


def test_without_allowed_causes_a_caused_duplicate_still_fails():
    outcome = evaluate({"valid": True}, dup(False, {"producer-epoch-bump": 3}))
    assert outcome.exit_code == EXIT_UNEXPECTED


def test_anomaly_text_names_the_causes():
    from kchaos.harness.rundir.anomalies import anomaly_text

    counts = {"offline": 3, "duplicate": 10, "lost-write": 0}
    causes = {"duplicate": {"producer-epoch-bump": 9, "unknown": 1}}
    assert anomaly_text(counts, causes) == (
        "duplicate 10 (producer-epoch-bump 9, unknown 1), offline 3"
    )
    assert anomaly_text({}, None) == ""


def _offline(*lengths: float) -> dict:
    windows = [{"topic": "t", "partition": 0, "length_s": n} for n in lengths]
    return {
        "valid": True,
        "anomalies": {"offline": {"count": len(windows)}} if windows else {},
        "stats": {"availability": {"offline_windows": windows}},
    }


@pytest.mark.parametrize(
    "results, code, reason",
    [
        (_offline(4.0, 25.5), EXIT_EXPECTED, None),
        (
            _offline(4.0, 12.0),
            EXIT_UNEXPECTED,
            "longest offline window 12.0 s, expected at least 20 s",
        ),
        (_offline(), EXIT_UNEXPECTED, "longest offline window 0.0 s"),
        ({"valid": True, "anomalies": {}, "stats": {}}, EXIT_UNKNOWN, "offline windows unknown"),
    ],
)
def test_offline_at_least_fails_a_run_whose_outage_is_missing_or_short(results, code, reason):
    out = evaluate({"valid": True, "offline_at_least": 20}, results)
    assert out.exit_code == code
    if reason is None:
        assert out.expected and not out.reasons
    else:
        assert any(reason in r for r in out.reasons), out.reasons


def test_an_unknown_verdict_and_unknown_windows_together_are_still_unknown():
    out = evaluate(
        {"valid": True, "offline_at_least": 20},
        {"valid": "unknown", "anomalies": {"unseen": 3}, "stats": {}},
    )
    assert out.exit_code == EXIT_UNKNOWN and len(out.reasons) == 2


def test_unknown_windows_beside_a_real_failure_are_a_failure():
    out = evaluate(
        {"valid": True, "offline_at_least": 20},
        {"valid": False, "anomalies": {"lost-write": 1}, "stats": {}},
    )
    assert out.exit_code == EXIT_UNEXPECTED


def blind(valid, unjudged, **anomalies):
    """results.json with kinds listed as unjudged (their source was not read)."""
    return {**res(valid, **anomalies), "unjudged": unjudged}


STALL = "broker-stalled"
NO_CTL = {STALL: "controller.jsonl not read: no controller.jsonl beside the history"}


@pytest.mark.parametrize(
    ("expect", "results", "code", "label"),
    [
        # the fixed side forbids the kind, the affected side requires it: neither can be
        # met by a kind nobody looked for
        ({"valid": True, "forbid": [STALL]}, blind(True, NO_CTL), EXIT_NOT_JUDGED, "not judged"),
        ({"valid": True, "anomalies": [STALL]}, blind(True, NO_CTL), EXIT_NOT_JUDGED, "not judged"),
        # a kind the expectation does not name: judged as before
        ({"valid": True}, blind(True, NO_CTL), EXIT_EXPECTED, "as expected"),
        ({"valid": True, "forbid": ["offline"]}, blind(True, NO_CTL), EXIT_EXPECTED, "as expected"),
        # a definite failure beside it wins
        (
            {"valid": True, "forbid": ["broker-stalled"]},
            blind(False, NO_CTL, lost_write=1),
            EXIT_UNEXPECTED,
            "NOT as expected",
        ),
        # an unknown verdict beside it does not
        (
            {"valid": True, "forbid": ["broker-stalled"]},
            blind("unknown", NO_CTL, unseen=2),
            EXIT_NOT_JUDGED,
            "not judged",
        ),
        # found is found: a forbidden kind present fails the run whatever else was not read
        (
            {"valid": True, "forbid": ["broker-stalled"]},
            blind(True, NO_CTL, broker_stalled=1),
            EXIT_UNEXPECTED,
            "NOT as expected",
        ),
    ],
)
def test_a_kind_the_expectation_needs_that_was_not_judged(expect, results, code, label):
    outcome = evaluate(expect, results)
    assert outcome.exit_code == code
    assert outcome.label == label
    assert outcome.expected == (code == EXIT_EXPECTED)
    assert outcome.unjudged == ("broker-stalled",)
    named = [r for r in outcome.reasons if r.startswith("not judged: broker-stalled")]
    needs = STALL in {*expect.get("forbid", ()), *expect.get("anomalies", ())}
    found = "broker-stalled" in results["anomalies"]
    assert bool(named) == (needs and not found)
    assert not any("not found" in r for r in outcome.reasons)


def test_the_not_judged_exit_code_is_its_own() -> None:
    assert EXIT_NOT_JUDGED not in (EXIT_EXPECTED, EXIT_UNEXPECTED, EXIT_UNKNOWN, 3, 4)
    assert LABELS[EXIT_NOT_JUDGED] == "not judged"
