"""Offline windows, per-fault send statistics, time to full ISR, and SLO thresholds."""

from __future__ import annotations

from pathlib import Path

from checker_hist import H, counts

from kchaos.harness.checker import RunSettings


def _history() -> H:
    h = H()
    h.meta(0, 1, [1, 2, 3])  # t = 1 ms
    h.meta(1, 2, [1, 2, 3])
    h.send("a", 0, 0)  # invoke at 3 ms, ok at 4 ms: outside faults
    h.fault("start")  # 5 ms (index 4)
    h.invoke("b")
    h.meta(0, -1, [1])  # 7 ms: offline
    h.meta(1, 2, [2, 3])
    h.done("b", "info")
    h.invoke("c")  # 10 ms
    h.invoke("d")  # 11 ms
    h.ok("c", 1, 0)  # 12 ms
    h.done("d", "fail")
    h.meta(0, -1, [1])
    h.fault("stop")  # 15 ms
    h.meta(0, 1, [1])  # 16 ms: back online, 9 ms offline
    h.meta(1, 2, [1, 2, 3])
    h.meta(0, 1, [1, 2, 3])  # 18 ms: full ISR everywhere, 3 ms after the stop
    h.invoke("e")
    h.drain_all(0, ["a"])
    h.drain_all(1, ["c"])
    return h


def test_offline_windows_are_reported_not_invalid(tmp_path: Path) -> None:
    r = _history().check(tmp_path)
    assert r.valid is True
    assert counts(r) == {"offline": 1}
    w = r.anomalies["offline"].examples[0]
    assert (w["topic"], w["partition"], w["start_s"], w["length_s"]) == ("t", 0, 0.007, 0.009)
    assert w["open"] is False and len(w["index"]) == 2
    assert r.stats["availability"]["offline_windows"] == [w]


def test_send_outcomes_and_latency_per_fault_window(tmp_path: Path) -> None:
    sends = _history().check(tmp_path).stats["availability"]["sends"]
    assert {k: sends["all"][k] for k in ("ok", "fail", "info", "pending")} == {
        "ok": 2,
        "fail": 1,
        "info": 1,
        "pending": 1,
    }
    outside = sends["outside_faults"]
    assert (outside["ok"], outside["pending"]) == (1, 1)
    (fault,) = sends["per_fault"]
    assert (fault["id"], fault["fault"], fault["ok"], fault["fail"], fault["info"]) == (
        "f-1",
        "pause",
        1,
        1,
        1,
    )
    assert fault["start_s"] == 0.005 and fault["duration_s"] == 0.01
    assert fault["latency_ms"] == {"p50": 2.0, "p99": 2.0, "max": 2.0}
    assert sends["all"]["latency_ms"]["max"] == 2.0


def test_time_to_full_isr_after_each_fault(tmp_path: Path) -> None:
    stats = _history().check(tmp_path).stats["availability"]
    assert stats["full_isr_after_fault"] == [
        {
            "id": "f-1",
            "fault": "pause",
            "stop_s": 0.015,
            "seconds": 0.003,
            "source": "samples",
            "unknown": False,
        }
    ]


def test_thresholds_pass_and_fail(tmp_path: Path) -> None:
    h = _history()
    ok = RunSettings(max_offline_seconds=0.5, max_time_to_full_isr_seconds=0.5)
    r = h.check(tmp_path, ok)
    assert r.valid is True
    slo = r.stats["availability"]["slo"]
    assert slo["max_offline_seconds"] == {"threshold": 0.5, "observed": 0.009, "pass": True}
    strict = RunSettings(max_offline_seconds=0.005, max_time_to_full_isr_seconds=0.001)
    r = h.check(tmp_path, strict)
    assert r.valid is False
    assert r.checkers["availability"].valid is False
    assert not r.stats["availability"]["slo"]["max_time_to_full_isr_seconds"]["pass"]


def test_open_offline_window_and_isr_never_full(tmp_path: Path) -> None:
    h = H()
    h.meta(0, 1, [1, 2, 3])
    h.fault("start")
    h.meta(0, -1, [1])
    h.fault("stop")
    h.meta(0, -1, [1])
    h.send("late", 1, 0)  # the history goes on without partition 0 coming back
    h.drain_all(1, ["late"])
    r = h.check(tmp_path, RunSettings(max_time_to_full_isr_seconds=10))
    w = r.anomalies["offline"].examples[0]
    assert w["open"] is True and w["length_s"] == 0.006
    assert r.stats["availability"]["full_isr_after_fault"][0]["seconds"] is None
    # the history ends milliseconds after the stop: "never" within 10 s cannot be known
    assert r.valid == "unknown"
    r = h.check(tmp_path, RunSettings(max_time_to_full_isr_seconds=0.001))
    assert r.stats["availability"]["slo"]["max_time_to_full_isr_seconds"]["pass"] is False
    assert r.valid is False


def test_no_faults_no_observations(tmp_path: Path) -> None:
    h = H()
    h.send("a", 0, 0)
    h.drain_all(0, ["a"])
    stats = h.check(tmp_path).stats["availability"]
    assert stats["sends"]["per_fault"] == [] and stats["offline_windows"] == []
    assert stats["full_isr_after_fault"] == [] and stats["slo"] == {}


def test_min_ok_sends(tmp_path: Path) -> None:
    h = _history()
    assert h.check(tmp_path, RunSettings(min_ok_sends=2)).valid is True
    r = h.check(tmp_path, RunSettings(min_ok_sends=3))
    assert r.valid is False
    assert r.stats["availability"]["slo"]["min_ok_sends"] == {
        "threshold": 3,
        "observed": 2,
        "pass": False,
    }
