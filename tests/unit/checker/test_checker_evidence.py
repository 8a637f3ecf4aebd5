"""Evidence: every checker says which sources it read; a kind whose source was not read is
unjudged, never absent (history format 1.3, "Evidence"; docs/checker.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from broker_logs import log_run, stamp
from checker_hist import C, H
from click.testing import CliRunner
from ticket_hist import EVIDENCE, crash_history, library_scenario

from kchaos.cli.check import check_cmd
from kchaos.harness.checker import check_run
from kchaos.harness.checker.api import CHECKERS, SOURCES
from kchaos.harness.checker.model import Results
from kchaos.harness.checker.stall import NO_ACKS
from kchaos.harness.rundir import RunDir, names
from kchaos.harness.rundir.expect import (
    EXIT_EXPECTED,
    EXIT_NOT_EXERCISED,
    EXIT_NOT_JUDGED,
    evaluate,
)
from kchaos.harness.scenario.loader import load_scenario

S = 1_000_000_000
STALLED = "broker-stalled"
FENCED = "live-broker-fenced"
SKIPPED = "recovery-skipped"
EPOCHS = "epoch-checkpoint-lost"
DIVERGED = "replica-divergence"
ISR_KINDS = ("acked-below-min-isr", "unclean-election", "last-known-leader-election")


def _cluster() -> C:
    """Brokers 1 to 3 registered and unfenced, partition 0 led by broker 1."""
    c = C()
    for b in (1, 2, 3):
        c.broker(0, b, 10 + b)
    c.part(0, 1, [1, 2, 3])
    return c


def _history(*, meta: bool = True, acked: bool = True) -> H:
    """Sends to partition 0 (acknowledged, or failed), a monitor sample, the drain."""
    h = H()
    if meta:
        h.meta(0, 1, [1, 2, 3])
    values = []
    for i in range(4):
        if acked:
            h.send(f"v{i}", 0, i)
            values.append(f"v{i}")
        else:
            h.invoke(f"v{i}")
            h.done(f"v{i}", "fail")
        h.wait(0.5)
    h.drain_all(0, values)
    return h


def _run(
    tmp_path: Path,
    h: H,
    *,
    controller: C | None = None,
    expect: dict[str, Any] | None = None,
) -> Results:
    """A run directory: the history, controller.jsonl where given, a run.json with the
    scenario's ``expect`` where given; checked as ``kchaos check`` does."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    h.write(tmp_path / names.HISTORY_JSONL)
    if controller is not None:
        controller.write(tmp_path / names.CONTROLLER_JSONL)
    if expect is not None:
        RunDir(tmp_path).write_run({"format": 1, "scenario": {"name": "t", "expect": expect}})
    return check_run(tmp_path)


def _source(results: Results, name: str) -> dict[str, Any]:
    (entry,) = [s for s in results.evidence["sources"] if s["source"] == name]
    return entry


def _saved(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads((path / names.RESULTS_JSON).read_bytes())
    return data


# -- every checker declares its sources, and says of each whether it read it ----------------


def test_every_checker_declares_its_sources_and_says_whether_it_read_each(
    tmp_path: Path,
) -> None:
    assert set(CHECKERS) <= set(SOURCES)
    r = _run(tmp_path, _history(), controller=_cluster())
    for name, out in r.checkers.items():
        declared = {s.name for s in SOURCES[name]}
        assert set(out.sources) == declared, name


def test_results_json_says_what_was_read_and_what_was_not(tmp_path: Path) -> None:
    _run(tmp_path, _history())  # no controller.jsonl, no logs, no replicas.jsonl
    data = _saved(tmp_path)
    sources = {s["source"]: s for s in data["evidence"]["sources"]}
    assert sources[names.HISTORY_JSONL]["read"] is True
    assert "why" not in sources[names.HISTORY_JSONL]
    ctl = sources[names.CONTROLLER_JSONL]
    assert ctl["read"] is False and "no controller.jsonl" in ctl["why"]
    assert {STALLED, FENCED, DIVERGED, "offline", *ISR_KINDS} <= set(ctl["kinds"])
    # the elections and offline windows were judged from the samples instead
    assert set(ctl["fallback"]["metadata-samples"]) == {"offline", *ISR_KINDS}
    assert sources["metadata-samples"]["read"] is True
    assert set(data["unjudged"]) == {FENCED, STALLED, DIVERGED}
    assert data["unjudged"][STALLED].startswith("controller.jsonl not read: no controller.jsonl")
    assert data["checkers"]["stall"] == {
        "valid": None,
        "error": None,
        "anomalies": [],
        "unjudged": [STALLED],
    }
    assert data["checkers"]["durability"]["valid"] is True
    assert data["checkers"]["durability"]["unjudged"] == []


# -- controller.jsonl: stall and fencing have no fallback; the ISR kinds do -----------------


@pytest.mark.parametrize("kind", [STALLED, FENCED])
def test_without_controller_jsonl_broker_kinds_are_unjudged_not_valid(
    tmp_path: Path, kind: str
) -> None:
    r = _run(tmp_path, _history())
    assert kind in r.unjudged and kind not in r.anomalies
    checker = "stall" if kind == STALLED else "fencing"
    assert r.checkers[checker].valid is None  # judged nothing: no part in the verdict
    assert r.valid is True  # the verdict stays as judged from what was read


@pytest.mark.parametrize("kind", [STALLED, FENCED])
def test_with_controller_jsonl_broker_kinds_are_judged(tmp_path: Path, kind: str) -> None:
    r = _run(tmp_path, _history(), controller=_cluster())
    assert kind not in r.unjudged
    assert r.checkers["stall" if kind == STALLED else "fencing"].valid is True
    assert _source(r, names.CONTROLLER_JSONL)["read"] is True


def test_a_stall_without_any_acknowledgement_is_unjudged(tmp_path: Path) -> None:
    r = _run(tmp_path, _history(acked=False), controller=_cluster())
    assert r.unjudged[STALLED] == NO_ACKS
    assert FENCED not in r.unjudged  # controller.jsonl was read


def test_without_controller_jsonl_or_samples_the_isr_kinds_are_unjudged(tmp_path: Path) -> None:
    r = _run(tmp_path, _history(meta=False))
    for kind in (*ISR_KINDS, "offline"):
        assert kind in r.unjudged, kind
        assert "metadata-samples not read" in r.unjudged[kind]
    assert r.checkers["isr"].valid is None


def test_the_samples_are_a_fallback_for_the_isr_kinds(tmp_path: Path) -> None:
    r = _run(tmp_path, _history(meta=True))
    assert not set(ISR_KINDS) & set(r.unjudged)
    assert r.checkers["isr"].valid is True


def test_controller_jsonl_describing_every_partition_needs_no_samples(tmp_path: Path) -> None:
    r = _run(tmp_path, _history(meta=False), controller=_cluster())
    assert not {*ISR_KINDS, "offline"} & set(r.unjudged)
    samples = _source(r, "metadata-samples")
    assert samples["read"] is False and samples["needed"] is False


# -- broker logs: needed where a fault stopped or restarted a broker ------------------------


def test_without_broker_logs_a_restart_leaves_recovery_unjudged(tmp_path: Path) -> None:
    crash_history([("f-1", "kill", 1.0)], "broker-3", lasting=2.0).write(
        tmp_path / names.HISTORY_JSONL
    )
    r = check_run(tmp_path)
    assert "f-1 (kill)" in r.unjudged[SKIPPED]
    assert r.checkers["startlog"].valid is None
    assert _source(r, "broker-logs")["read"] is False


def test_without_broker_logs_and_without_a_restart_there_is_nothing_to_judge(
    tmp_path: Path,
) -> None:
    # a pause stops no process: no start can have skipped a recovery
    crash_history([("f-1", "pause", 1.0)], "broker-3", lasting=2.0).write(
        tmp_path / names.HISTORY_JSONL
    )
    r = check_run(tmp_path)
    assert SKIPPED not in r.unjudged
    logs = _source(r, "broker-logs")
    assert logs["read"] is False and logs["needed"] is False
    assert r.checkers["startlog"].valid is True


def test_with_broker_logs_a_restart_is_judged(tmp_path: Path) -> None:
    crash_history([("f-1", "kill", 1.0)], "broker-3", lasting=2.0).write(
        tmp_path / names.HISTORY_JSONL
    )
    lines = ["[kchaos] start", f"{stamp(S // 2)} INFO Loaded 0 logs in 7ms"]
    log_run(tmp_path, {3: lines})
    r = check_run(tmp_path)
    assert SKIPPED not in r.unjudged and SKIPPED not in r.anomalies
    assert _source(r, "broker-logs")["read"] is True


# -- crash-time files: needed where a page-cache-losing crash ran ---------------------------


def _scan(lost: int = 0) -> dict[str, Any]:
    entry = {"partition": "t-0", "size": 0, "entries": 0, "error": None, "log_bytes": 4096}
    return {"checked": 3, "with_entries": 3 - lost, "empty": lost, "lost": [entry] * lost}


@pytest.mark.parametrize(
    ("detail", "why"),
    [
        pytest.param({"epoch_checkpoints": {"broker-2": {"error": "EIO"}}}, "EIO", id="err"),
        pytest.param(None, "no epoch_checkpoints", id="no-scan"),
    ],
)
def test_a_crash_whose_scan_failed_leaves_the_checkpoints_unjudged(
    tmp_path: Path, detail: dict[str, Any] | None, why: str
) -> None:
    h = crash_history([("f-1", "hard-reboot", 1.0)], "broker-2", lasting=2.0, detail=detail)
    r = h.check(tmp_path)
    assert why in r.unjudged[EPOCHS] and "f-1 (hard-reboot)" in r.unjudged[EPOCHS]
    assert r.checkers["crash-files"].valid is None


def test_a_crash_whose_scan_worked_is_judged(tmp_path: Path) -> None:
    detail = {"epoch_checkpoints": {"broker-2": _scan()}}
    r = crash_history([("f-1", "hard-reboot", 1.0)], "broker-2", detail=detail).check(tmp_path)
    assert EPOCHS not in r.unjudged and EPOCHS not in r.anomalies
    assert _source(r, "crash-time-files")["read"] is True


def test_a_kind_found_is_present_even_where_another_scan_failed(tmp_path: Path) -> None:
    detail = {"epoch_checkpoints": {"broker-1": _scan(lost=1), "broker-3": {"error": "EIO"}}}
    r = crash_history([("f-1", "power-loss", 1.0)], "broker-1", detail=detail).check(tmp_path)
    assert r.count(EPOCHS) == 1 and EPOCHS not in r.unjudged
    assert _source(r, "crash-time-files")["read"] is False  # still said


def test_a_run_without_a_page_cache_losing_crash_needs_no_scan(tmp_path: Path) -> None:
    r = crash_history([("f-1", "kill", 1.0)], "broker-2").check(tmp_path)
    assert EPOCHS not in r.unjudged
    assert _source(r, "crash-time-files")["needed"] is False


# -- replicas.jsonl: the dumps, and controller.jsonl for the final ISR ----------------------


def test_without_replicas_jsonl_divergence_is_unjudged(tmp_path: Path) -> None:
    r = _run(tmp_path, _history(), controller=_cluster())
    assert r.unjudged[DIVERGED].startswith("replicas.jsonl not read")
    assert "replicas" not in r.checkers


def test_the_independent_reader_is_a_source_without_kinds(tmp_path: Path) -> None:
    r = _run(tmp_path, _history(), controller=_cluster())
    reread = _source(r, names.REREAD_JSONL)
    assert reread["read"] is False and reread["kinds"] == []


# -- the expectation: a kind it needs that was not judged is "not judged" -------------------

SCENARIO_15046 = library_scenario("kafka-15046-fsync-under-log-lock.yaml")
SCENARIO_15375 = library_scenario("kafka-15375-failed-start-marker.yaml")


def _expect(scenario: Path, version: str) -> dict[str, Any]:
    expect: dict[str, Any] = load_scenario(scenario, kafka_version=version).to_dict()["expect"]
    return expect


def _kinds_expect(scenario: Path, version: str) -> dict[str, Any]:
    """The expectation on its kinds alone: these histories have no fault whose effect the
    scenario also requires (KAFKA-15046's slow-sync, measured from broker-metrics.jsonl)."""
    return {k: v for k, v in _expect(scenario, version).items() if k not in EVIDENCE}


def test_the_fixed_side_of_kafka_15046_without_controller_jsonl_is_not_judged(
    tmp_path: Path,
) -> None:
    expect = _kinds_expect(SCENARIO_15046, "3.7.0")
    assert STALLED in expect["forbid"]
    r = _run(tmp_path, _history(), expect=expect)
    data = _saved(tmp_path)
    assert STALLED in data["unjudged"]
    outcome = evaluate(expect, data)
    assert not outcome.expected and outcome.label == "not judged"
    assert outcome.exit_code == EXIT_NOT_JUDGED
    assert outcome.reasons == (f"not judged: {STALLED} ({r.unjudged[STALLED]})",)


def test_the_affected_side_of_kafka_15046_without_controller_jsonl_is_not_judged(
    tmp_path: Path,
) -> None:
    expect = _kinds_expect(SCENARIO_15046, "3.6.2")
    _run(tmp_path, _history(), expect=expect)
    outcome = evaluate(expect, _saved(tmp_path))
    assert outcome.exit_code == EXIT_NOT_JUDGED
    # not "expected anomalies not found": it was never looked for
    assert not any("not found" in reason for reason in outcome.reasons)


def test_the_fixed_side_of_kafka_15046_with_controller_jsonl_is_judged(tmp_path: Path) -> None:
    expect = _kinds_expect(SCENARIO_15046, "3.7.0")
    _run(tmp_path, _history(), controller=_cluster(), expect=expect)
    data = _saved(tmp_path)
    assert STALLED not in data["unjudged"]
    outcome = evaluate(expect, data)
    assert outcome.expected and outcome.exit_code == EXIT_EXPECTED
    # the whole expectation also needs slow-sync's effect, which a history without the
    # fault cannot show: a fixed side whose throttle never bit proves nothing
    whole = evaluate(_expect(SCENARIO_15046, "3.7.0"), data)
    assert (whole.exit_code, whole.label) == (EXIT_NOT_EXERCISED, "not exercised"), whole


def test_the_fixed_side_of_kafka_15375_without_broker_logs_is_not_judged(tmp_path: Path) -> None:
    expect = _expect(SCENARIO_15375, "3.6.2")
    assert SKIPPED in expect["forbid"]
    crashes = [("f-1", "hard-reboot", 1.0), ("f-4", "kill", 3.0)]
    crash_history(crashes, "broker-3", lasting=1.0).write(tmp_path / names.HISTORY_JSONL)
    check_run(tmp_path)
    saved = _saved(tmp_path)
    # the scenario also wants Kafka's own lines, which a run without broker logs cannot
    # show either: "not exercised", which wins over "not judged"; never as expected
    whole = evaluate(expect, saved)
    assert whole.label == "not exercised" and SKIPPED in whole.unjudged
    assert any("not judged: recovery-skipped" in r for r in whole.reasons)
    # on the kind alone: not judged
    kinds = {k: v for k, v in expect.items() if k not in ("log_lines", "effects")}
    outcome = evaluate(kinds, saved)
    assert outcome.label == "not judged" and SKIPPED in outcome.unjudged


def test_the_fixed_side_of_kafka_15375_with_broker_logs_is_judged(tmp_path: Path) -> None:
    expect = _expect(SCENARIO_15375, "3.6.2")
    crashes = [("f-1", "hard-reboot", 1.0), ("f-4", "kill", 3.0)]
    crash_history(crashes, "broker-3", lasting=1.0).write(tmp_path / names.HISTORY_JSONL)
    log_run(tmp_path, {3: ["[kchaos] start", f"{stamp(S // 2)} INFO Loaded 0 logs in 7ms"]})
    check_run(tmp_path)
    data = _saved(tmp_path)
    assert SKIPPED not in data["unjudged"]
    outcome = evaluate(expect, data)
    assert outcome.label != "not judged" and SKIPPED not in outcome.unjudged


def test_kchaos_check_lists_unjudged_kinds_and_keeps_its_exit_code(tmp_path: Path) -> None:
    _history().write(tmp_path / names.HISTORY_JSONL)
    result = CliRunner().invoke(check_cmd, [str(tmp_path)], standalone_mode=False)
    assert result.exception is None
    assert result.return_value == 0  # valid: judged from what was read
    assert f"not judged: {STALLED} (controller.jsonl not read" in result.output
    assert f"not judged: {FENCED}" in result.output
