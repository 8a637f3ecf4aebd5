"""live-broker-fenced: the controller fenced a broker that no fault had touched (KAFKA-15489)."""

from __future__ import annotations

import shutil
from pathlib import Path

from checker_hist import C, H, check_with, counts
from ticket_hist import assert_tells_apart, library_scenario

from kchaos.harness.checker import RunSettings, check_run

S = 1_000_000_000
KIND = "live-broker-fenced"
FIXTURES = Path(__file__).parent / "fixtures"
DRAFT = library_scenario("kafka-15489-controller-split-brain.yaml")


def _history(*faults: tuple[str, float, float | None, list[str]], end: float = 60.0) -> H:
    """One send, drained, and the faults (id, start s, stop s or None, targets) at their
    times; the history's last line is at ``end`` seconds."""
    h = H()
    h.send("a", 0, 0)
    steps: list[tuple[float, str, str, list[str]]] = []
    for fid, start, stop, targets in faults:
        steps.append((start, "start", fid, targets))
        if stop is not None:
            steps.append((stop, "stop", fid, targets))
    for at, phase, fid, targets in sorted(steps):
        h.wait(max(at - h.now() / S, 0))
        fault = "heal" if fid == "heal" else "pause"
        h.fault(phase, fid, fault, targets)
    h.wait(max(end - h.now() / S, 0))
    h.drain_all(0, ["a"])
    return h


def _registered(c: C, *brokers: int) -> None:
    """Startup: each broker registers fenced, then is unfenced (epoch = 10 + id)."""
    for b in brokers:
        c.broker(0, b, 10 + b, fenced=True)
    for b in brokers:
        c.broker(0, b, 10 + b)


def test_the_3_6_2_pattern_is_flagged(tmp_path: Path) -> None:
    # the active controller is cut from its peers for 30 s, then everything is healed;
    # 3.5 s after the heal the new leader fences brokers 2 and 3, same epochs
    h = _history(
        ("f-1", 10.0, 40.0, ["controller-102"]),
        ("heal", 40.1, 40.3, ["broker-1", "broker-2", "broker-3", "controller-102"]),
    )
    c = C()
    _registered(c, 1, 2, 3)
    c.part(0, 1, [1, 2, 3])
    fence2 = c.broker(43_800_000_000, 2, 12, fenced=True)
    fence3 = c.broker(43_800_000_000, 3, 13, fenced=True)
    c.part(43_800_000_000, 1, [1], epoch=1)
    c.broker(43_870_000_000, 2, 12)
    c.broker(43_870_000_000, 3, 13)
    r = check_with(h, c, tmp_path, RunSettings(broker_session_timeout_ms=18_000))
    assert counts(r) == {KIND: 2}
    assert r.valid is True  # reported, never invalid
    first, second = r.anomalies[KIND].examples
    assert (first["broker"], second["broker"]) == (2, 3)
    assert first["controller_offsets"][1] == fence2 and second["controller_offsets"][1] == fence3
    assert first["time_s"] == 43.8 and first["broker_epoch"] == 12
    assert first["faults_open"] == []
    assert first["last_fault"]["id"] == "f-1"  # the heal restores, it is no cause
    assert first["last_fault"]["targets"] == ["controller-102"]
    stats = r.stats["fencing"]
    assert (stats["fenced"], stats[KIND], stats["broker_session_timeout_ms"]) == (2, 2, 18_000)


def test_a_broker_fenced_while_its_fault_runs_is_not_flagged(tmp_path: Path) -> None:
    h = _history(("f-1", 10.0, 30.0, ["broker-2"]))
    c = C()
    _registered(c, 1, 2)
    c.broker(20 * S, 2, 12, fenced=True)  # paused for 10 s: its session expired
    c.broker(31 * S, 2, 12)
    r = check_with(h, c, tmp_path)
    assert counts(r) == {}
    assert r.stats["fencing"]["by_fault"] == 1


def test_the_grace_after_a_fault_is_the_session_timeout(tmp_path: Path) -> None:
    # Kafka's default 9 s: fenced 5 s after its fault's stop is the fault's doing,
    # 10 s after is not; with an 18 s session both are the fault's
    h = _history(("f-1", 10.0, 20.0, ["broker-2", "broker-3"]))
    c = C()
    _registered(c, 2, 3)
    c.broker(25 * S, 2, 12, fenced=True)
    c.broker(30 * S, 3, 13, fenced=True)
    (tmp_path / "default").mkdir()
    (tmp_path / "longer").mkdir()
    default = check_with(h, c, tmp_path / "default")
    assert counts(default) == {KIND: 1}
    assert default.anomalies[KIND].examples[0]["broker"] == 3
    assert default.stats["fencing"]["broker_session_timeout_ms"] == 9_000
    longer = check_with(h, c, tmp_path / "longer", RunSettings(broker_session_timeout_ms=18_000))
    assert counts(longer) == {}


def test_a_fault_on_another_broker_does_not_excuse_a_fencing(tmp_path: Path) -> None:
    h = _history(("f-1", 10.0, 30.0, ["broker-1"]))
    c = C()
    _registered(c, 1, 2)
    c.broker(20 * S, 2, 12, fenced=True)
    r = check_with(h, c, tmp_path)
    assert counts(r) == {KIND: 1}
    assert [f["id"] for f in r.anomalies[KIND].examples[0]["faults_open"]] == ["f-1"]


def test_a_fault_that_never_stopped_covers_the_rest_of_the_run(tmp_path: Path) -> None:
    h = _history(("f-1", 10.0, None, ["broker-2"]))
    c = C()
    _registered(c, 2)
    c.broker(50 * S, 2, 12, fenced=True)
    assert counts(check_with(h, c, tmp_path)) == {}


def test_a_re_registration_is_not_a_lost_session(tmp_path: Path) -> None:
    h = _history()
    c = C()
    _registered(c, 2)
    c.broker(20 * S, 2, 40, fenced=True)  # a new incarnation registers fenced
    c.broker(21 * S, 2, 40)
    r = check_with(h, c, tmp_path)
    assert counts(r) == {} and r.stats["fencing"]["fenced"] == 0


def test_a_controlled_shutdown_is_not_flagged(tmp_path: Path) -> None:
    h = _history()
    c = C()
    _registered(c, 2, 3)
    c.broker(20 * S, 2, 12, shutting_down=True)
    c.broker(21 * S, 2, 12, fenced=True)  # the shutdown ended: fenced, flag cleared
    c.broker(22 * S, 3, 13, fenced=True, shutting_down=True)
    r = check_with(h, c, tmp_path)
    assert counts(r) == {}
    assert r.stats["fencing"]["shutdown"] == 2


def test_startup_lines_are_not_flagged(tmp_path: Path) -> None:
    h = _history()
    c = C()
    c.broker(0, 2, 12, fenced=True)
    c.broker(0, 2, 12, fenced=True)  # fenced twice before its first unfenced line
    c.broker(1 * S, 2, 12)
    r = check_with(h, c, tmp_path)
    assert counts(r) == {} and r.stats["fencing"]["fenced"] == 0


def test_the_teardown_after_the_history_is_not_flagged(tmp_path: Path) -> None:
    h = _history(end=30.0)
    c = C()
    _registered(c, 2)
    c.broker(45 * S, 2, 12, fenced=True)
    r = check_with(h, c, tmp_path)
    assert counts(r) == {} and r.stats["fencing"]["teardown"] == 1


def test_without_the_controllers_record_nothing_is_judged(tmp_path: Path) -> None:
    r = _history().check(tmp_path)
    assert counts(r) == {}
    assert r.stats["fencing"]["source"] is None
    assert "controller.jsonl" in r.stats["fencing"]["note"]


def _fixture(tmp_path: Path, name: str) -> Path:
    run = tmp_path / name
    shutil.copytree(FIXTURES / name, run)
    return run


def test_the_real_3_6_2_run_shows_it_and_the_3_7_0_run_does_not(tmp_path: Path) -> None:
    affected = check_run(_fixture(tmp_path, "k15489-362"), write=False)
    assert counts(affected) == {KIND: 2}
    examples = affected.anomalies[KIND].examples
    assert [(e["broker"], e["controller_offsets"]) for e in examples] == [
        (2, [13, 140]),
        (3, [11, 157]),
    ]
    assert all(e["last_fault"]["fault"] == "cut" for e in examples)
    assert affected.stats["fencing"]["broker_session_timeout_ms"] == 18_000  # run.json's
    fixed = check_run(_fixture(tmp_path, "k15489-370"), write=False)
    assert counts(fixed) == {}
    assert fixed.stats["fencing"]["fenced"] == 0


def test_the_draft_tells_the_two_releases_apart(tmp_path: Path) -> None:
    results = {
        v: check_run(_fixture(tmp_path, f"k15489-{v.replace('.', '')}"), write=False).to_json()
        for v in ("3.6.2", "3.7.0")
    }
    assert_tells_apart(DRAFT, KIND, ("3.6.2", results["3.6.2"]), ("3.7.0", results["3.7.0"]))
