"""heal_everything walks the heals the fault families register (kchaos.faults.heal)."""

from __future__ import annotations

import re

import pytest

from kchaos.faults import heal, registry

# Families whose faults leave nothing behind for a stateless heal to undo.
NOTHING_TO_HEAL = {
    # an election or a reassignment is the cluster's new state, not a fault to undo
    "leadership",
}


def _documented() -> list[tuple[int, str]]:
    """(order, family) of each row of the table in kchaos.faults.heal's docstring."""
    rows = re.findall(r"^    (\d+)\s+(\(core\)|[a-z-]+)\s", heal.__doc__ or "", re.MULTILINE)
    return [(int(order), family.strip("()")) for order, family in rows]


def test_the_heals_run_in_the_documented_order() -> None:
    registered = [(h.order, h.family) for h in heal.heals()]
    assert registered == _documented()
    # the order that cannot deadlock: thaw before anything that could block on a frozen
    # filesystem, and nodes sorted into running/stopped before the heals that use that;
    # stopped client processes (no node involved) are continued first
    assert registered[:5] == [
        (0, "core"), (5, "client"), (10, "disk"), (20, "pause"), (25, "core"),
    ]  # fmt: skip


def test_every_family_with_a_fault_has_a_heal() -> None:
    families = {cls.family for cls in registry().values()}
    healed = {h.family for h in heal.heals()}
    assert families - NOTHING_TO_HEAL <= healed, sorted(families - NOTHING_TO_HEAL - healed)
    assert families >= NOTHING_TO_HEAL, "a family listed as having nothing to heal is gone"
    assert not NOTHING_TO_HEAL & healed, "a family listed as having nothing to heal has one"


def test_one_heal_a_place() -> None:
    with pytest.raises(ValueError, match="heal order 10 is taken by disk"):
        heal.register_heal(10, "other", "something else")(lambda ctx: None)
    assert [h.order for h in heal.heals()] == sorted({h.order for h in heal.heals()})
