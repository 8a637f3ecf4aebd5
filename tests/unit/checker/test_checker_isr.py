"""acked-below-min-isr and unclean-election, and their near misses."""

from __future__ import annotations

from pathlib import Path

from checker_hist import H, counts

from kchaos.harness.checker import RunSettings


def _drained(h: H, values: list[str]) -> None:
    h.drain_all(0, values)


def test_acked_below_min_isr(tmp_path: Path) -> None:
    h = H()
    h.meta(0, 1, [1, 2, 3])
    h.send("a", 0, 0)
    before = h.meta(0, 1, [1])
    inv = h.invoke("b")
    ack = h.ok("b", 0, 1)
    h.send("c", 0, 2)
    after = h.meta(0, 1, [1])
    h.meta(0, 1, [1, 2, 3])
    _drained(h, ["a", "b", "c"])
    r = h.check(tmp_path)
    assert counts(r) == {"acked-below-min-isr": 2}
    ex = r.anomalies["acked-below-min-isr"].examples[0]
    assert ex["value"] == "b" and ex["min_insync"] == 2 and ex["isr_sizes"] == [1, 1]
    assert {inv, ack, before, after} <= set(ex["index"])


def test_isr_recovering_between_invoke_and_completion_is_fine(tmp_path: Path) -> None:
    h = H()
    h.meta(0, 1, [1])
    h.invoke("a")
    h.meta(0, 1, [1, 2])  # back to min.insync while the send was retrying
    h.meta(0, 1, [1])
    h.ok("a", 0, 0)
    h.meta(0, 1, [1])
    _drained(h, ["a"])
    assert h.check(tmp_path).valid is True


def test_observation_before_invoke_good_then_bad(tmp_path: Path) -> None:
    h = H()
    h.meta(0, 1, [1, 2, 3])
    h.invoke("a")  # the last observation before the invoke was healthy
    h.meta(0, 1, [1])
    h.ok("a", 0, 0)
    h.meta(0, 1, [1])
    _drained(h, ["a"])
    assert h.check(tmp_path).valid is True


def test_only_acks_all_sends_count(tmp_path: Path) -> None:
    h = H()
    h.meta(0, 1, [1])
    h.send("a", 0, 0, acks="1")
    h.send("b", 0, 1, acks="all")
    h.send("c", 0, 2)  # acks per run.json
    h.meta(0, 1, [1])
    _drained(h, ["a", "b", "c"])
    assert counts(h.check(tmp_path)) == {"acked-below-min-isr": 2}
    assert counts(h.check(tmp_path, RunSettings(acks_all=False))) == {"acked-below-min-isr": 1}


def test_min_insync_from_run_json_overrides_the_monitor(tmp_path: Path) -> None:
    h = H()
    h.meta(0, 1, [1, 2], min_insync=None)
    h.send("a", 0, 0)
    h.meta(0, 1, [1, 2], min_insync=None)
    _drained(h, ["a"])
    assert h.check(tmp_path).valid is True  # nothing says what the minimum is
    config = RunSettings.from_run_json(
        {"topics": [{"name": "t", "configs": {"min.insync.replicas": "3"}}]}
    )
    assert counts(h.check(tmp_path, config)) == {"acked-below-min-isr": 1}


def test_unclean_election(tmp_path: Path) -> None:
    h = H()
    prev = h.meta(0, 1, [1, 2])
    line = h.meta(0, 3, [3])  # 3 was out of sync
    h.meta(0, 3, [1, 2, 3])
    r = h.check(tmp_path)
    assert counts(r) == {"unclean-election": 1}
    ex = r.anomalies["unclean-election"].examples[0]
    assert (ex["old_leader"], ex["new_leader"], ex["previous_isr"]) == (1, 3, [1, 2])
    assert ex["index"] == [prev, line]


def test_unclean_election_after_going_offline(tmp_path: Path) -> None:
    h = H()
    h.meta(0, 1, [1, 2, 3])
    h.meta(0, 1, [1])
    h.meta(0, -1, [1])  # the last in-sync replica died
    h.meta(0, 2, [2])  # an out-of-sync replica took over
    assert counts(h.check(tmp_path)) == {"unclean-election": 1, "offline": 1}


def test_clean_elections(tmp_path: Path) -> None:
    h = H()
    h.meta(0, 1, [1, 2, 3])
    h.meta(0, 2, [2, 3])  # from the ISR
    h.meta(0, 2, [2], elr=[3])
    h.meta(0, 3, [3], elr=[2])  # from the ELR
    h.meta(0, -1, [3], elr=[])
    h.meta(0, 3, [3])  # back after being offline
    r = h.check(tmp_path)
    assert counts(r) == {"offline": 1}
    assert r.checkers["isr"].valid is True  # the run as a whole: no sends, so unknown


def test_unclean_elections_allowed_by_config(tmp_path: Path) -> None:
    h = H()
    h.meta(0, 1, [1])
    h.meta(0, 2, [2])
    r = h.check(
        tmp_path,
        RunSettings.from_run_json({"broker_config": {"unclean.leader.election.enable": "true"}}),
    )
    assert r.checkers["isr"].valid is True
    assert r.stats["isr"]["unclean_elections_allowed"] == 1
    topic_level = RunSettings.from_run_json(
        {
            "broker_config": {"unclean.leader.election.enable": "true"},
            "topics": {"t": {"configs": {"unclean.leader.election.enable": False}}},
        }
    )
    assert counts(h.check(tmp_path, topic_level)) == {"unclean-election": 1}
