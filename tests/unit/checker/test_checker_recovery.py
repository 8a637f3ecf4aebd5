"""Time to full ISR after a fault, from the controller's record (issue 22), and the
fallback to the samples where the record is incomplete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checker_hist import C, H, check_with

from kchaos.harness.checker import RunSettings
from kchaos.harness.rundir.expect import EXIT_UNKNOWN, evaluate

S = 1_000_000_000


def _faulted(samples: bool = True) -> tuple[H, int, int]:
    """A history with one pause of broker-2 and ISR samples that always look full;
    returns it with the fault's start and stop times (ns)."""
    h = H()
    if samples:
        h.meta(0, 1, [1, 2, 3])
    start = h.events[h.fault("start")]["time"]
    if samples:
        h.meta(0, 1, [1, 2, 3])
    stop = h.events[h.fault("stop")]["time"]
    h.wait(40)
    if samples:
        h.meta(0, 1, [1, 2, 3])
    h.send("a", 0, 0)
    h.drain_all(0, ["a"])
    return h, start, stop


def _slo_of(r: Any) -> dict[str, Any]:
    slo: dict[str, Any] = r.stats["availability"]["slo"]["max_time_to_full_isr_seconds"]
    return slo


def _full_isr(r: Any) -> dict[str, Any]:
    entries = r.stats["availability"]["full_isr_after_fault"]
    assert len(entries) == 1
    return entries[0]


def test_a_shrink_of_the_target_after_the_stop_counts(tmp_path: Path) -> None:
    h, start, stop = _faulted()
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(stop + int(11.3 * S), 1, [1, 3], epoch=1)  # the session timed out after the stop
    c.part(stop + 20 * S, 1, [1, 2, 3], epoch=2)
    r = check_with(h, c, tmp_path, RunSettings(max_time_to_full_isr_seconds=15))
    e = _full_isr(r)
    assert e["seconds"] == 20.0 and e["source"] == "controller" and e["unknown"] is False
    assert e["last_shrink_s"] == round((stop + 11.3 * S) / S, 6)
    slo = r.stats["availability"]["slo"]["max_time_to_full_isr_seconds"]
    assert slo["pass"] is False and slo["observed"] == 20.0
    assert r.valid is False


def test_the_samples_alone_read_zero_there(tmp_path: Path) -> None:
    h, _, _ = _faulted()
    assert _full_isr(h.check(tmp_path))["seconds"] == 0.0  # what the record corrects


def test_a_later_shrink_of_another_broker_or_after_the_grace_is_not_the_faults(
    tmp_path: Path,
) -> None:
    h, start, stop = _faulted()
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(stop + 5 * S, 1, [1, 2], epoch=1)  # broker 3 was not the target
    c.part(stop + 6 * S, 1, [1, 2, 3], epoch=2)
    c.part(stop + 31 * S, 1, [1, 3], epoch=3)  # broker 2, but after the 30 s grace
    c.part(stop + 32 * S, 1, [1, 2, 3], epoch=4)
    e = _full_isr(check_with(h, c, tmp_path))
    assert e["seconds"] == 0.0 and "last_shrink_s" not in e


def test_a_shrink_within_the_window_is_measured_from_the_stop(tmp_path: Path) -> None:
    h, start, stop = _faulted()
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(start, 1, [1, 3], epoch=1)
    c.part(stop + 2 * S, 1, [1, 2, 3], epoch=2)
    r = check_with(h, c, tmp_path, RunSettings(max_time_to_full_isr_seconds=5))
    assert _full_isr(r)["seconds"] == 2.0
    assert r.stats["availability"]["slo"]["max_time_to_full_isr_seconds"]["pass"] is True
    assert r.valid is True


def test_a_shrink_healed_before_the_stop_is_zero(tmp_path: Path) -> None:
    h, start, stop = _faulted()
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(start, 1, [1, 3], epoch=1)
    c.part(stop - 1, 1, [1, 2, 3], epoch=2)
    assert _full_isr(check_with(h, c, tmp_path))["seconds"] == 0.0


def test_never_full_again_is_none_and_fails(tmp_path: Path) -> None:
    h, start, stop = _faulted()
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(start, 1, [1, 3], epoch=1)
    r = check_with(h, c, tmp_path, RunSettings(max_time_to_full_isr_seconds=5))
    e = _full_isr(r)
    assert e["seconds"] is None and e["unknown"] is False
    assert r.stats["availability"]["slo"]["max_time_to_full_isr_seconds"]["pass"] is False


def test_never_full_in_a_record_shorter_than_the_threshold_is_unknown(tmp_path: Path) -> None:
    # the history and the record stop 3 s after the stop: a 5 s deadline had not passed
    h = H()
    h.meta(0, 1, [1, 2, 3])
    start = h.events[h.fault("start")]["time"]
    h.fault("stop")
    h.wait(3)
    h.send("a", 0, 0)
    h.drain_all(0, ["a"])
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(start, 1, [1, 3], epoch=1)
    r = check_with(h, c, tmp_path, RunSettings(max_time_to_full_isr_seconds=5))
    assert _full_isr(r)["seconds"] is None and _full_isr(r)["unknown"] is False
    slo = _slo_of(r)
    assert slo["pass"] == "unknown" and slo["observed"] is None
    assert slo["unknown_faults"] == ["f-1"]
    watched = slo["ended_before_threshold_s"]["f-1"]
    assert 3 <= watched < 5
    assert r.valid == "unknown"
    # the same record judged against a deadline it did outlast: never full, a failure
    r = check_with(h, c, tmp_path, RunSettings(max_time_to_full_isr_seconds=2))
    assert _slo_of(r)["pass"] is False and "ended_before_threshold_s" not in _slo_of(r)
    assert r.valid is False


def test_no_samples_and_no_record_is_unknown_never_zero(tmp_path: Path) -> None:
    h, _, _ = _faulted(samples=False)
    r = h.check(tmp_path, RunSettings(max_time_to_full_isr_seconds=5))
    e = _full_isr(r)
    assert e["seconds"] is None and e["unknown"] is True and e["source"] is None
    slo = r.stats["availability"]["slo"]["max_time_to_full_isr_seconds"]
    assert slo["pass"] == "unknown" and slo["observed"] is None
    assert slo["unknown_faults"] == ["f-1"]
    assert r.valid == "unknown"
    outcome = evaluate({"valid": True}, r.to_json())
    assert outcome.expected is False and outcome.exit_code == EXIT_UNKNOWN
    assert any("SLO unknown" in reason for reason in outcome.reasons)


def test_an_incomplete_partition_falls_back_to_the_samples_and_says_so(tmp_path: Path) -> None:
    h, start, stop = _faulted()
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.lines.append(
        {
            "offset": 15,
            "time": start,
            "type": "incomplete",
            "partitions": [{"topic": "t", "partition": 0}],
            "reason": "Error at 15, skipping.",
        }
    )
    c.part(stop + 20 * S, 1, [1, 2, 3], epoch=2)
    c.lines[-1]["incomplete"] = True
    r = check_with(h, c, tmp_path)
    e = _full_isr(r)
    assert e["source"] == "samples" and e["samples_for"] == ["t/0"] and e["seconds"] == 0.0
    ctl = r.stats["controller"]
    assert ctl["incomplete_partitions"] == ["t/0"] and "samples" in ctl["note"]
    assert ctl["partitions"] == 0  # nothing judged from the record for it


def test_an_incomplete_partition_without_samples_is_unknown(tmp_path: Path) -> None:
    h, start, stop = _faulted(samples=False)
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(start, 1, [1, 2, 3], epoch=1)
    c.lines[-1]["incomplete"] = True
    r = check_with(h, c, tmp_path, RunSettings(max_time_to_full_isr_seconds=5))
    e = _full_isr(r)
    assert e["seconds"] is None and e["unknown"] is True and e["unknown_for"] == ["t/0"]
    assert r.stats["availability"]["slo"]["max_time_to_full_isr_seconds"]["pass"] == "unknown"


def test_an_unknown_slo_alone_is_exit_unknown_even_with_any_verdict() -> None:
    results = {
        "valid": True,
        "stats": {"availability": {"slo": {"max_time_to_full_isr_seconds": {"pass": "unknown"}}}},
    }
    outcome = evaluate({"valid": "any"}, results)
    assert outcome.expected is False and outcome.exit_code == EXIT_UNKNOWN
    assert outcome.reasons == ("SLO unknown (could not be measured): max_time_to_full_isr_seconds",)


def test_an_incomplete_partitions_election_is_judged_from_the_samples(tmp_path: Path) -> None:
    h = H()
    h.meta(0, 1, [1], min_insync=1)  # the samples missed the ISR that held 2
    h.send("a", 0, 0)
    h.meta(0, 2, [2], min_insync=1)
    h.drain_all(0, ["a"])
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(h.now(), 2, [2, 3], epoch=1)
    for name in ("complete", "incomplete"):
        (tmp_path / name).mkdir()
    complete = check_with(h, c, tmp_path / "complete")
    assert complete.valid is True  # the record shows a clean election
    c.lines[-1]["incomplete"] = True
    r = check_with(h, c, tmp_path / "incomplete")
    assert r.count("unclean-election") == 1  # the samples' view, and it says so
    assert r.stats["controller"]["incomplete_partitions"] == ["t/0"]
