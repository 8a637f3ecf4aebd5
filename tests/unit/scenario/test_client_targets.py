"""Client targets in scenario files (the ``zombie`` fault): the library scenario, and the
refusals that name the file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from scenario_variants import assert_refused_at_target, variant

from kchaos.harness.scenario import library
from kchaos.harness.scenario.loader import load_scenario


def test_the_library_scenario_aims_its_zombie_at_a_producer() -> None:
    sc = load_scenario(library.resolve("txn-zombie-fencing"))
    assert sc.plan is not None and sc.plan.schedule is not None
    (step,) = sc.plan.schedule.faults
    assert (step.spec.fault, step.spec.target) == ("zombie", "client:txn:kchaos-t-3")
    processes = sc.plan.workload.txn_processes()
    assert (3, "producer", "kchaos-t-3") in processes
    assert step.end < sc.workload.duration  # continued before the workload stops
    assert sc.expect.valid is True


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("client:txn:kchaos-t-3", "client:txn:kchaos-t-9", "transactional id 'kchaos-t-9'"),
        ("client:txn:kchaos-t-3", "client:group:g", "expected client:txn:"),
        ("fault: zombie", "fault: pause", "pause acts on nodes, not on a client process"),
        ("    timeout: 10s\n", "    timeout: 10s\n    process: false\n", "in threads"),
    ],
)
def test_a_client_target_that_cannot_work_is_refused_with_file_line_and_field(
    tmp_path: Path, old: str, new: str, needle: str
) -> None:
    assert_refused_at_target(variant(tmp_path, "txn-zombie-fencing", old, new), needle)
