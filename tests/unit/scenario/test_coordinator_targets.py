"""Coordinator targets in scenario files: the syntax, and the id or group a worker uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scenario_variants import assert_refused_at_target, variant

from kchaos.harness.rundir.anomalies import KINDS
from kchaos.harness.scenario import library
from kchaos.harness.scenario.loader import load_scenario


def test_the_library_scenario_resolves_its_coordinators() -> None:
    sc = load_scenario(library.resolve("txn-coordinator-failover"))
    assert sc.plan is not None
    targets = [str(f.spec.target) for f in sc.plan.schedule.faults]  # type: ignore[union-attr]
    assert targets == [
        "coordinator:txn:kchaos-t-3",
        "coordinator:txn:kchaos-t-4",
        "coordinator:group:kchaos-copier",
    ]
    ids = [t for _, _, t in sc.plan.workload.txn_processes()]
    assert ids == ["kchaos-t-3", "kchaos-t-4", "kchaos-t-5"]


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        (
            "coordinator:txn:kchaos-t-3",
            "coordinator:txn:kchaos-t-9",
            "transactional id 'kchaos-t-9'",
        ),
        ("coordinator:group:kchaos-copier", "coordinator:group:nobody", "consumer group 'nobody'"),
        ("coordinator:txn:kchaos-t-3", "coordinator:topic:x", "expected coordinator:txn:"),
        (
            "coordinator:txn:kchaos-t-3",
            "brokers-except:coordinator:txn:kchaos-t-9",
            "transactional id 'kchaos-t-9'",
        ),
        ("coordinator:txn:kchaos-t-3", "brokers-except:client:txn:kchaos-t-3", "names nodes"),
    ],
)
def test_a_coordinator_no_worker_has_is_refused_with_file_line_and_field(
    tmp_path: Path, old: str, new: str, needle: str
) -> None:
    assert_refused_at_target(variant(tmp_path, "txn-coordinator-failover", old, new), needle)


def test_kip_890_leaves_out_its_own_coordinator() -> None:
    sc = load_scenario(library.resolve("kip-890-hanging-transaction"))
    assert sc.plan is not None and sc.plan.schedule is not None
    (fault,) = sc.plan.schedule.faults
    assert str(fault.spec.target) == "brokers-except:coordinator:txn:kchaos-t-1"
    assert [t for _, _, t in sc.plan.workload.txn_processes()] == ["kchaos-t-1"]
    # it outlasts the workload: the final heal ends it
    assert fault.at < sc.workload.duration < fault.at + fault.duration


def test_the_published_schema_names_every_anomaly_kind() -> None:
    on_disk = Path(__file__).parents[3] / "harness" / "schema" / "scenario.schema.json"
    assert json.loads(on_disk.read_text())["$defs"]["anomaly"]["enum"] == list(KINDS)
