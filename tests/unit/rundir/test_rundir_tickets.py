"""rundir.tickets: which releases a ticket affects and what runs on them show."""

from __future__ import annotations

import json

import pytest

from kchaos.harness.errors import ConfigError
from kchaos.harness.rundir.tickets import (
    AFFECTED,
    NOT_AFFECTED,
    NOT_JUDGED,
    NOT_REPRODUCED,
    OTHER_WHEN_FIXED,
    SEEN_WHEN_FIXED,
    Ticket,
)

BACKPORTED = {"id": "KAFKA-15046", "title": "t", "fixed_in": ["3.7.0", "3.6.2"]}


@pytest.mark.parametrize(
    ("version", "fixed"),
    [
        ("3.5.2", False),  # an older line the fix never reached
        ("3.6.1", False),
        ("3.6.2", True),  # the backport
        ("3.6.3", True),
        ("3.7.0", True),
        ("3.8.1", True),  # a line newer than every fix
        ("4.0.0", True),
    ],
)
def test_fixed_follows_backports(version: str, fixed: bool) -> None:
    assert Ticket.from_mapping(BACKPORTED).is_fixed(version) is fixed


def test_a_line_between_fixes_without_a_backport_is_affected() -> None:
    t = Ticket.from_mapping({"id": "KAFKA-1", "title": "t", "fixed_in": ["3.5.2", "3.7.0"]})
    assert [t.is_fixed(v) for v in ("3.5.1", "3.5.2", "3.6.2", "3.7.0")] == [
        False,
        True,
        False,
        True,
    ]


def test_status_of_one_run_and_of_seeds() -> None:
    t = Ticket.from_mapping(BACKPORTED)
    assert t.status("3.6.1", True) == AFFECTED
    assert t.status("3.6.1", False) == NOT_REPRODUCED
    assert t.status("3.7.0", True) == NOT_AFFECTED
    assert t.status("3.7.0", False) == SEEN_WHEN_FIXED
    # one seed that showed the bug proves the release affected ...
    assert t.status_of_seeds("3.6.1", [False, True, False]) == AFFECTED
    assert t.status_of_seeds("3.6.1", [False, False]) == NOT_REPRODUCED
    # ... and one seed that saw it on a fixed release is reported
    assert t.status_of_seeds("3.7.0", [True, False]) == SEEN_WHEN_FIXED
    assert t.status_of_seeds("3.7.0", [True, True]) == NOT_AFFECTED


def test_seeds_that_were_not_judged_show_nothing_either_way() -> None:
    t = Ticket.from_mapping(BACKPORTED)
    # the only seeds not as expected were not judged: neither seen nor not affected
    assert t.status_of_seeds("3.7.0", [True, False], not_judged=1) == NOT_JUDGED
    # one that saw the bug on a fixed release still says so
    assert t.status_of_seeds("3.7.0", [False, False], not_judged=1) == SEEN_WHEN_FIXED
    # an affected release: one seed that showed it is enough; else not reproduced is
    # not shown by a seed that could not look
    assert t.status_of_seeds("3.6.1", [True, False], not_judged=1) == AFFECTED
    assert t.status_of_seeds("3.6.1", [False, False], not_judged=1) == NOT_JUDGED
    assert t.status_of_seeds("3.6.1", [False, False], not_judged=0) == NOT_REPRODUCED


def test_seen_on_a_fixed_release_needs_the_bugs_own_kind() -> None:
    t = Ticket.from_mapping({**BACKPORTED, "kind": "broker-stalled"})
    # the bug's kind found on a fixed release: seen there
    assert t.status("3.7.0", False, {"broker-stalled", "offline"}) == SEEN_WHEN_FIXED
    # not as expected for another reason (an SLO, a fault that did not start): not the bug
    assert t.status("3.7.0", False, {"offline"}) == OTHER_WHEN_FIXED
    assert t.status("3.7.0", False, set()) == OTHER_WHEN_FIXED
    # the kinds do not matter on an affected release or for a run as expected
    assert t.status("3.6.1", False, {"offline"}) == NOT_REPRODUCED
    assert t.status("3.7.0", True, {"broker-stalled"}) == NOT_AFFECTED
    # over seeds: one seed that found the kind is enough, other misses are not the bug
    kinds = [{"offline"}, {"broker-stalled"}, set()]
    assert t.status_of_seeds("3.7.0", [False, False, True], kinds) == SEEN_WHEN_FIXED
    # the seed with the kind ended as expected (allowed there): it does not count
    assert t.status_of_seeds("3.7.0", [False, True, False], kinds) == OTHER_WHEN_FIXED
    # a ticket without a kind: any anomaly in a seed not as expected counts
    plain = Ticket.from_mapping(BACKPORTED)
    assert plain.status("3.7.0", False, {"offline"}) == SEEN_WHEN_FIXED
    assert plain.status("3.7.0", False, set()) == OTHER_WHEN_FIXED


def test_a_kip_is_an_id_and_fixed_by_words_the_fix() -> None:
    t = Ticket.from_mapping(
        {"id": "KIP-501", "title": "t", "fixed_in": ["4.1.0"], "fixed_by": "KIP-966's ELR"}
    )
    assert t.fix_note() == "gone from 4.1.0 on: KIP-966's ELR"
    assert Ticket.from_mapping(BACKPORTED).fix_note() == "fixed in 3.6.2, 3.7.0"


def test_range() -> None:
    t = Ticket.from_mapping({**BACKPORTED, "affected_from": "3.6.0"})
    assert t.covers("3.6.0") and not t.covers("3.5.2")
    with pytest.raises(ConfigError, match="outside that range") as err:
        t.check_release("3.5.2", "s")
    assert err.value.field == "kafka-version"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"id": "15046", "title": "t", "fixed_in": ["3.7.0"]}, "ticket.id"),
        ({"id": "KIP-x", "title": "t", "fixed_in": ["3.7.0"]}, "ticket.id"),
        ({"id": "KAFKA-1", "title": "t", "fixed_in": ["3.7.0"], "kind": "Lost"}, "ticket.kind"),
        ({"id": "KAFKA-1", "title": "t", "fixed_in": []}, "ticket.fixed_in"),
        ({"id": "KAFKA-1", "title": "t", "fixed_in": ["3.7"]}, "ticket.fixed_in[0]"),
        (
            {"id": "KAFKA-1", "title": "t", "fixed_in": ["3.7.0"], "affected_from": "3.7.1"},
            "ticket.affected_from",
        ),
        (
            {"id": "KAFKA-1", "title": "t", "fixed_in": ["3.7.0"], "compare": ["x"]},
            "ticket.compare[0]",
        ),
    ],
)
def test_bad_sections_name_the_field(data: dict, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        Ticket.from_mapping(data)
    assert err.value.field == field


def test_the_ticket_of_a_run_json_scenario() -> None:
    from dataclasses import replace

    from kchaos.harness.rundir.runjson import RunJson
    from kchaos.harness.scenario import library

    t = Ticket.from_mapping({**BACKPORTED, "commit": "abc1234", "compare": ["3.6.1", "3.7.0"]})
    sc = replace(library.load("smoke"), ticket=t)
    stored = json.loads(json.dumps(sc.to_dict()))
    run = RunJson.from_mapping({"format": 1, "scenario": stored})
    assert run.scenario is not None and run.scenario.ticket == t
    untagged = RunJson.from_mapping({"format": 1, "scenario": library.load("smoke").to_dict()})
    assert untagged.scenario is not None and untagged.scenario.ticket is None
