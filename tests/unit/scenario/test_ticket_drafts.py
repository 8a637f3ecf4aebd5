"""The draft scenarios of docs/tickets-drafts stay valid and say what they test.

Each draft names its ticket in its tags (next to ``known-bug``) and expects something
different on the last affected release than on the first fixed one; a draft whose two
expectations were equal could not tell the releases apart.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kchaos.harness.scenario.loader import load_scenario

DRAFTS = Path(__file__).resolve().parents[3] / "docs" / "tickets-drafts"

# draft -> (ticket tag, last affected release, first fixed release), as docs/tickets.md says
RELEASES = {
    "kafka-15375-failed-start-marker": ("kafka-15375", "3.5.1", "3.5.2"),
}


def test_every_draft_is_listed() -> None:
    assert {p.stem for p in DRAFTS.glob("*.yaml")} == set(RELEASES)


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_draft_validates_on_both_sides(name: str) -> None:
    tag, affected, fixed = RELEASES[name]
    before = load_scenario(DRAFTS / f"{name}.yaml", kafka_version=affected)
    after = load_scenario(DRAFTS / f"{name}.yaml", kafka_version=fixed)
    assert before.name == after.name == name
    assert {"known-bug", tag} <= set(before.tags)
    assert "source" in before.description.lower()
    assert not before.nemesis.empty
    assert (before.expect.valid, before.expect.anomalies, before.expect.allowed) != (
        after.expect.valid,
        after.expect.anomalies,
        after.expect.allowed,
    )
