"""The library's known-bug scenarios each name their ticket and tell its releases apart.

Every library scenario tagged ``known-bug`` carries a ``ticket`` section and the ticket's
own tag (``kafka-NNNNN``). Its ``compare`` pair is one affected and one fixed release; it
loads on both, and it expects something different on the two: a scenario whose two
expectations were equal could not tell the releases apart.
"""

from __future__ import annotations

import pytest

from kchaos.harness.rundir.tickets import KNOWN_BUG_TAG
from kchaos.harness.scenario import library
from kchaos.harness.scenario.loader import load_scenario

KNOWN_BUGS = library.names_with_tag(KNOWN_BUG_TAG)


def test_the_library_has_known_bugs() -> None:
    # the three tickets reproduced so far (docs/incidents.md); more may join
    assert {
        "kafka-15375-failed-start-marker",
        "kafka-15489-controller-split-brain",
        "kafka-16541-epoch-checkpoint-os-crash",
    } <= set(KNOWN_BUGS)


@pytest.mark.parametrize("name", KNOWN_BUGS)
def test_a_known_bug_tells_its_compare_releases_apart(name: str) -> None:
    path = library.resolve(name)
    first = load_scenario(path)
    ticket = first.ticket
    assert ticket is not None, f"{name} is tagged {KNOWN_BUG_TAG} but has no ticket"
    assert ticket.id.lower() in first.tags
    affected, fixed = ticket.compare
    assert not ticket.is_fixed(affected) and ticket.is_fixed(fixed)
    before = load_scenario(path, kafka_version=affected)
    after = load_scenario(path, kafka_version=fixed)
    assert before.name == after.name == name
    assert not before.nemesis.empty
    assert (before.expect.valid, before.expect.anomalies, before.expect.allowed) != (
        after.expect.valid,
        after.expect.anomalies,
        after.expect.allowed,
    )
