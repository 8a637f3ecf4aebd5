"""The library's known-bug scenarios each name their ticket and tell its releases apart.

Every library scenario tagged ``known-bug`` carries a ``ticket`` section and the ticket's
own tag (``kafka-NNNNN``, or ``kip-NNN`` for a KIP), and names the anomaly kind the bug
shows on an affected release. Its ``compare`` pair is one affected and one fixed release; it
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
    # the tickets and KIPs reproduced so far (docs/incidents.md); more may join
    assert {
        "kafka-15046-fsync-under-log-lock",
        "kafka-15375-failed-start-marker",
        "kafka-15489-controller-split-brain",
        "kafka-16541-epoch-checkpoint-os-crash",
        "kip-903-lost-page-cache-rejoin",
        "kip-966-unclean-last-isr-member",
        "kip-501-slow-leader",
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
    # the bug's own kind is what the affected side expects, and what the fixed side does not
    assert ticket.kind, f"{name}'s ticket names no anomaly kind"
    assert ticket.kind in before.expect.anomalies
    assert ticket.kind not in after.expect.anomalies
    assert not before.nemesis.empty
    assert (before.expect.valid, before.expect.anomalies, before.expect.allowed) != (
        after.expect.valid,
        after.expect.anomalies,
        after.expect.allowed,
    )


def test_kip_501_is_not_called_fixed() -> None:
    """KIP-501 is in no release: what removes the offline window is KIP-966's ELR."""
    ticket = library.load("kip-501-slow-leader", kafka_version="3.9.1").ticket
    assert ticket is not None and ticket.id == "KIP-501"
    assert "KIP-966" in ticket.fix_note() and not ticket.fix_note().startswith("fixed")
