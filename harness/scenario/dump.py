"""A scenario back as a scenario file: the inverse of the loader, for replay and shrink.

:func:`file_data` turns ``Scenario.to_dict()`` (the form run.json stores) into the plain
data of a scenario file (the JSON Schema's shape: no nulls, ``expect.valid: any`` for "any
verdict"); :func:`to_yaml` writes it as YAML. Loading that text with
:func:`kchaos.harness.scenario.loader.load_scenario` gives the same scenario again (the
unit tests check this for the whole library), so a replayed or shrunk schedule goes
through exactly the checks `kchaos validate` makes.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from ruamel.yaml import YAML

from kchaos.harness.rundir.files import jsonable
from kchaos.harness.rundir.scenario_model import LENGTH_KEY, OLD_LENGTH_KEY, Scenario


def _present(data: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """The given keys of ``data`` whose value is not None, in that order."""
    return {k: data[k] for k in keys if data.get(k) is not None}


def step_data(step: Mapping[str, Any]) -> dict[str, Any]:
    """One ``nemesis.steps`` entry from a FaultStep's dict form: its length as ``for``,
    also when the stored step says ``duration`` (the old spelling, in the scenarios older
    run.json files hold). A step that says both keeps both, for the loader to refuse."""
    out: dict[str, Any] = {"fault": step["fault"], "at": step["at"]}
    given = _present(step, LENGTH_KEY, OLD_LENGTH_KEY)
    if len(given) == 1:
        out[LENGTH_KEY] = given.popitem()[1]
    else:
        out.update(given)
    out.update(_present(step, "target"))
    if step.get("params"):
        out["params"] = dict(step["params"])
    out.update(_present(step, "when", "timeout", "on_timeout"))
    return out


def file_data(sc: Mapping[str, Any]) -> dict[str, Any]:
    """Scenario-file data from a scenario's ``to_dict()`` form (run.json's ``scenario``)."""
    c = sc["cluster"]
    cluster = _present(c, "brokers", "controllers", "kafka_version", "image", "heap")
    cluster["server_properties"] = dict(c.get("server_properties") or {})
    if c.get("data_mount_options"):
        cluster["data_mount_options"] = list(c["data_mount_options"])
    if c.get("broker_properties"):
        cluster["broker_properties"] = {str(k): dict(v) for k, v in c["broker_properties"].items()}
    topics = []
    for t in sc["topics"]:
        topic = _present(t, "name", "partitions", "replication_factor")
        topic["configs"] = dict(t.get("configs") or {})
        if t.get("assignment"):
            topic["assignment"] = [list(r) for r in t["assignment"]]
        topics.append(topic)
    w = sc["workload"]
    p = w["producers"]
    q = w["consumers"]
    workload = _present(w, "duration", "client")
    if w.get("topics"):
        workload["topics"] = list(w["topics"])
    workload["producers"] = {
        **_present(
            p, "count", "rate", "acks", "keys", "message_size", "padding", "max_in_flight"
        ),  # fmt: skip
        "configs": dict(p.get("configs") or {}),
    }
    workload["consumers"] = {
        **_present(q, "count", "mode", "group", "rack"),
        "configs": dict(q.get("configs") or {}),
    }
    if q.get("isolation", "read_uncommitted") != "read_uncommitted":
        workload["consumers"]["isolation"] = q["isolation"]
    workload.update(
        _present(w, "monitor_interval", "drain_timeout", "close_timeout", "metrics_interval")
    )
    t = w.get("transactions")
    if t:
        txn = _present(t, "producers", "max_sends", "abort_ratio", "rate", "timeout", "keys",
                       "message_size", "process")  # fmt: skip
        if t.get("topics"):
            txn["topics"] = list(t["topics"])
        txn["readers"] = dict(t.get("readers") or {})
        if t.get("copier"):
            txn["copier"] = dict(t["copier"])
        txn["configs"] = dict(t.get("configs") or {})
        if t.get("send_interval"):
            txn["send_interval"] = t["send_interval"]
        if t.get("after_unfinished_commit", "reinit") != "reinit":
            txn["after_unfinished_commit"] = t["after_unfinished_commit"]
        workload["transactions"] = txn
    n = sc.get("nemesis") or {}
    nemesis: dict[str, Any] = {}
    if n.get("steps"):
        nemesis["steps"] = [step_data(s) for s in n["steps"]]
    if n.get("random"):
        r = n["random"]
        nemesis["random"] = {
            "faults": list(r["faults"]),
            **_present(r, "start", "quiet", "min_duration", "max_duration"),
            "targets": list(r.get("targets") or ("random",)),
        }
        if r.get("params"):
            nemesis["random"]["params"] = {k: dict(v) for k, v in r["params"].items()}
    e = sc.get("expect") or {}
    valid = e.get("valid", True)
    out: dict[str, Any] = {
        "name": sc["name"],
        "description": sc["description"],
    }
    if sc.get("tags"):
        out["tags"] = list(sc["tags"])
    if sc.get("ticket"):
        out["ticket"] = {
            k: list(v) if isinstance(v, list | tuple) else v
            for k, v in sc["ticket"].items()
            if v not in (None, "", [], ())
        }
    out["seed"] = sc.get("seed", 0)
    out["cluster"] = cluster
    out["topics"] = topics
    out["workload"] = workload
    if nemesis:
        out["nemesis"] = nemesis
    out["checks"] = _present(
        sc.get("checks") or {},
        "max_offline_seconds",
        "max_time_to_full_isr_seconds",
        "min_ok_sends",
    )
    if e.get("section"):  # per-release entries: the file's section, resolved on load
        out["expect"] = dict(e["section"])
    else:
        out["expect"] = {
            "valid": "any" if valid is None else valid,
            "anomalies": list(e.get("anomalies") or ()),
            "allowed": list(e.get("allowed") or ()),
        }
        if e.get("allowed_causes"):
            out["expect"]["allowed_causes"] = list(e["allowed_causes"])
        if e.get("forbid"):
            out["expect"]["forbid"] = list(e["forbid"])
        if e.get("offline_at_least") is not None:
            out["expect"]["offline_at_least"] = e["offline_at_least"]
        if e.get("effects"):
            out["expect"]["effects"] = list(e["effects"])
        if e.get("log_lines"):
            out["expect"]["log_lines"] = [_log_line(line) for line in e["log_lines"]]
        if e.get("elected_from_elr"):
            out["expect"]["elected_from_elr"] = True
    return out


def _log_line(line: Mapping[str, Any]) -> dict[str, Any]:
    """One ``expect.log_lines`` entry as a file gives it: unset fields left out."""
    out: dict[str, Any] = {"contains": line["contains"]}
    if line.get("node") is not None:
        out["node"] = line["node"]
    if line.get("why"):
        out["why"] = line["why"]
    if line.get("regex"):
        out["regex"] = True
    return out


def to_yaml(data: Mapping[str, Any], header: str = "") -> str:
    """Block-style YAML of plain data; ``header`` lines become leading comments."""
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    yaml.width = 100
    buf = io.StringIO()
    yaml.dump(jsonable(data), buf)  # plain types only: ruamel's own scalars dump oddly
    comments = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comments + buf.getvalue()


def scenario_yaml(sc: Scenario, header: str = "") -> str:
    """A loaded scenario as scenario-file YAML."""
    return to_yaml(file_data(sc.to_dict()), header)
