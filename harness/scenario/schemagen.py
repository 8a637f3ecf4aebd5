"""The published JSON Schema of scenario files, generated from the model.

:mod:`kchaos.harness.rundir.scenario_model` is the one definition of a scenario: each field of its
frozen dataclasses is a key of the file, with the same name (or the one its ``file``
metadata gives: a step's ``for_`` is the file's ``for``), and its type and
``metadata`` give the key's schema (the rules: :mod:`kchaos.harness.rundir.schemagen`).
This module adds the shared definitions (``$defs``) and writes
``harness/schema/scenario.schema.json`` (package data, what the loader validates with):
``python -m kchaos.harness.scenario.schemagen`` after a change to the model. A unit test
checks that the file in the tree is what :func:`render` gives, so the two cannot drift
apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kchaos.harness.checker.replicas import DUPLICATE_CAUSES
from kchaos.harness.rundir import scenario_model as model
from kchaos.harness.rundir import schemagen
from kchaos.harness.rundir.anomalies import KINDS

#: Where the generated file lives in the source tree (package data of kchaos.harness).
SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schema" / "scenario.schema.json"

_HEAD: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://kchaos.invalid/schema/scenario.schema.json",
    "title": "kchaos scenario",
    "description": "One chaos experiment: a cluster, its topics, a workload, a nemesis, SLO "
    "checks and what the run must produce. Durations are seconds (a number) or a string "
    'such as "500ms", "30s", "2m".',
}

#: Shared definitions (``$defs``), named by a field's ``ref``.
DEFS: dict[str, Any] = {
    "duration": {
        "description": "Seconds, or a string with a unit: 500ms, 30s, 2m, 1h.",
        "oneOf": [
            {"type": "number", "minimum": 0},
            {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(ms|s|m|h)$"},
        ],
    },
    "properties": {
        "type": "object",
        "description": "Kafka properties; values are written as strings (true/false for booleans).",
        "propertyNames": {"pattern": "^[A-Za-z0-9._-]+$"},
        "additionalProperties": {"type": ["string", "number", "boolean"]},
    },
    "target": {
        "type": ["string", "integer"],
        "description": "Which nodes a fault hits, resolved when it starts (the faults "
        "package's grammar): all, brokers, controllers, random, random:K, minority, "
        "majority, controller (the active one), leader:TOPIC:PARTITION, "
        "coordinator:txn:TRANSACTIONAL_ID, coordinator:group:GROUP, "
        "client:txn:TRANSACTIONAL_ID (a transactional client process: the zombie fault "
        "only), none, a node name (broker-2) or id, several joined by commas; "
        "brokers-except:SPEC is every broker SPEC does not name.",
    },
    "anomaly": {"enum": list(KINDS)},
    "cause": {"enum": list(DUPLICATE_CAUSES)},
}


def generate() -> dict[str, Any]:
    """The scenario file's JSON Schema (draft 2020-12), from the model."""
    body = schemagen.object_schema(model.Scenario)
    return {**_HEAD, **body, "$defs": DEFS}


if __name__ == "__main__":
    schemagen.main(generate, SCHEMA_FILE)
