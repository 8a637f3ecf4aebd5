"""run.json's published JSON Schema, generated from :class:`~kchaos.harness.rundir.runjson.RunJson`.

The fields readers use are RunJson's (their types and ``metadata`` give the schema, by
:mod:`kchaos.harness.rundir.schemagen`'s rules); the keys a reader keeps as written, in
``RunJson.raw``, are described in :data:`KEPT_AS_WRITTEN`. Every key is optional and may
be null, and a key the schema does not name is allowed (a later kchaos may add one).

``harness/schema/run.schema.json`` is this module's output: regenerate it with
``python -m kchaos.harness.rundir.runschema`` after a change to RunJson or to the table
below; a unit test fails while the two disagree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kchaos.harness.rundir import schemagen
from kchaos.harness.rundir.runjson import RunJson

#: Where the generated file lives in the source tree (package data of kchaos.harness).
SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schema" / "run.schema.json"

_HEAD: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://kchaos.dev/schema/run.schema.json",
    "title": "kchaos run.json, format 1",
    "description": "What a run directory's run.json holds. Every field is optional, so a "
    "hand-written run.json with only the settings the checkers read is valid; the runner "
    "writes all of them. Fields not listed here are kept and passed through.",
}

DEFS: dict[str, Any] = {
    "text": {"type": ["string", "null"]},
    "object": {"type": ["object", "null"]},
}

_TEXT = {"$ref": "#/$defs/text"}
_OBJECT = {"$ref": "#/$defs/object"}

#: The keys the runner writes that RunJson does not type (readers find them with
#: ``RunJson.get``), and their schemas.
KEPT_AS_WRITTEN: dict[str, dict[str, Any]] = {
    "command": {"type": ["array", "null"], "items": {"type": "string"}},
    "wall_seconds": {"type": ["number", "null"]},
    "error": {
        "description": "why the run did not complete (status error or interrupted): the "
        "exception's type and message; absent for a completed run",
        **_TEXT,
    },
    # Copies of the scenario's sections that runs before 2026-11-26 wrote at the top level
    # (the runner now writes each fact once, in `scenario`); a hand-written run.json may
    # still state a checker setting here.
    "cluster": {
        "description": "brokers, controllers, server_properties, broker_properties "
        "(older runs and hand-written files; the runner writes the scenario's)",
        **_OBJECT,
    },
    "cluster_spec": _OBJECT,
    "topics": {
        "description": "older runs and hand-written files; the runner writes the scenario's",
        "type": ["array", "object", "null"],
    },
    "producer": {
        "description": "older runs and hand-written files; the runner writes the scenario's",
        **_OBJECT,
    },
    "consumer": {
        "description": "older runs and hand-written files; the runner writes the scenario's",
        **_OBJECT,
    },
    "heal_actions": {"type": ["array", "null"]},
    "full_isr_wait": {
        "description": "with checks.max_time_to_full_isr_seconds: how long the runner waited "
        "after the final heal for the scenario's topics' whole ISR, and whether it came",
        **_OBJECT,
    },
    "workload_stats": _OBJECT,
    "drain": {"type": ["object", "array", "null"]},
    "after_run": {
        "description": "controller.jsonl and node logs collected after the run",
        **_OBJECT,
    },
    "replicas": {"description": "replicas.jsonl collected after the run", **_OBJECT},
    "reread": {"description": "the committed-offset re-read after the run", **_OBJECT},
    "replay_of": {"description": "the run this one replays", **_OBJECT},
    "shrink_of": {"description": "the run directory a shrink attempt shrinks", **_TEXT},
    "generated_by": _TEXT,
    "host": {
        "description": "the host's CPU share of the run: its CPUs, how many runs the batch "
        "ran on it at once (--parallel), the CPUs that left each, and the 1, 5 and 15 "
        "minute load averages at the run's start and end",
        "type": ["object", "null"],
        "properties": {
            "cpus": {"type": ["integer", "null"], "minimum": 1},
            "parallel": {"type": ["integer", "null"], "minimum": 1},
            "cpus_per_run": {"type": ["number", "null"]},
            "load_avg_start": {"type": ["array", "null"], "items": {"type": "number"}},
            "load_avg_end": {"type": ["array", "null"], "items": {"type": "number"}},
        },
    },
}


def generate() -> dict[str, Any]:
    """run.json's JSON Schema (draft 2020-12), from RunJson and :data:`KEPT_AS_WRITTEN`."""
    body = schemagen.object_schema(RunJson, closed=False)
    typed = set(body["properties"])
    if typed & set(KEPT_AS_WRITTEN):
        raise ValueError(f"typed by RunJson and kept as written: {typed & set(KEPT_AS_WRITTEN)}")
    body["properties"].update(KEPT_AS_WRITTEN)
    return {**_HEAD, **body, "$defs": DEFS}


if __name__ == "__main__":
    schemagen.main(generate, SCHEMA_FILE)
