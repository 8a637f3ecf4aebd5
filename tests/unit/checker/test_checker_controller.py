"""Verdicts from the controller's own record (controller.jsonl, history format 1.1)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from checker_hist import C, H, check_with, counts

from kchaos.harness.checker import RunSettings, check_run
from kchaos.harness.checker.controller import read_controller
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.expect import evaluate

S = 1_000_000_000


def _base(h: H, values: list[str]) -> None:
    for i, v in enumerate(values):
        h.send(v, 0, i)


def _one_write(sampled_isr: list[int] | None = None) -> H:
    """A history of one acknowledged write, "a" at offset 0 of partition 0, that the drain
    read back; with ``sampled_isr``, after a metadata sample of partition 0 (leader 1)."""
    h = H()
    if sampled_isr is not None:
        h.meta(0, 1, sampled_isr)
    _base(h, ["a"])
    h.drain_all(0, ["a"])
    return h


def test_clean_election_from_the_record_overrides_a_misleading_sample(tmp_path: Path) -> None:
    h = H()
    h.meta(0, 1, [1], min_insync=1)  # the samples missed the ISR that held 2 at its election
    _base(h, ["a", "b"])
    h.meta(0, 2, [2], min_insync=1)
    h.drain_all(0, ["a", "b"])
    samples_only = h.check(_fresh(tmp_path, "samples"))
    assert counts(samples_only) == {"unclean-election": 1}
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(h.now(), 2, [2, 3], epoch=1)
    r = check_with(h, c, _fresh(tmp_path, "controller"))
    assert r.valid is True and counts(r) == {}
    assert r.stats["isr"]["elections"]["clean"] == 1
    assert r.stats["isr"]["source"] == "controller.jsonl"


def test_isr_shrinks_are_attributed_to_the_leader_or_the_controller(tmp_path: Path) -> None:
    h = _one_write(sampled_isr=[1, 2, 3])
    c = C()
    c.broker(0, 2, 5)
    c.broker(0, 3, 6)
    c.part(0, 1, [1, 2, 3])
    c.part(1 * S, 1, [1, 3], epoch=1)  # 2 is registered and unfenced: the leader dropped it
    c.broker(2 * S, 3, 6, fenced=True)  # 3's session expired: the controller drops it
    c.part(2 * S, 1, [1], elr=[3], epoch=2)
    c.part(3 * S, 1, [1, 2], epoch=3)  # a join is not a shrink
    r = check_with(h, c, tmp_path)
    shrinks = r.stats["isr"]["shrinks"]
    assert shrinks["count"] == 2 and shrinks["by_cause"] == {"leader": 1, "fenced": 1}
    first, second = shrinks["first"]
    assert (first["broker"], first["cause"], first["time_s"]) == (2, "leader", 1.0)
    assert (second["broker"], second["cause"], second["elr_after"]) == (3, "fenced", [3])
    assert r.valid is True  # who shrank an ISR is evidence, never an anomaly


def test_a_fence_later_in_the_same_batch_explains_the_shrink(tmp_path: Path) -> None:
    h = _one_write(sampled_isr=[1, 2, 3])
    c = C()
    c.broker(0, 1, 5)
    c.part(0, 1, [1, 2, 3])
    # one batch at 2 s: the election that drops the dead leader, then its fence
    c.part(2 * S, 2, [2, 3], epoch=1)
    c.broker(2 * S, 1, 5, fenced=True)
    c.broker(9 * S, 1, 5, fenced=True)  # a later batch must not reach back
    r = check_with(h, c, tmp_path)
    assert r.stats["isr"]["shrinks"]["by_cause"] == {"fenced": 1}


def test_a_replica_reassigned_away_left_the_isr_by_the_controllers_hand(tmp_path: Path) -> None:
    h = _one_write(sampled_isr=[1, 2, 3])
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(1 * S, 1, [1, 2], epoch=1, replicas=[1, 2])  # 3 moved off the partition
    c.part(2 * S, 2, [2], epoch=2, replicas=[1, 2])  # the leader itself dropped: other
    r = check_with(h, c, tmp_path)
    shrinks = r.stats["isr"]["shrinks"]
    assert shrinks["by_cause"] == {"reassigned": 1, "other": 1}
    assert shrinks["cause_source"] == "elimination"


def _fresh(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    return d


def test_unclean_election_the_samples_never_saw(tmp_path: Path) -> None:
    h = _one_write(sampled_isr=[1, 2, 3])
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(1 * S, 1, [1], epoch=1)
    c.broker(2 * S, 3, 77)
    c.part(3 * S, 3, [3], epoch=2)
    r = check_with(h, c, tmp_path)
    assert r.valid is False and counts(r) == {"unclean-election": 1}
    ex = r.anomalies["unclean-election"].examples[0]
    assert ex["old_leader"] == 1 and ex["new_leader"] == 3
    assert ex["previous_isr"] == [1] and ex["controller_offsets"] == [20, 40]
    assert ex["new_leader_broker_epoch"] == 77 and ex["new_leader_registered_s"] == 2.0


def test_recovering_marks_an_election_unclean_even_from_the_isr(tmp_path: Path) -> None:
    h = _one_write()
    c = C()
    c.part(0, 1, [1, 2])
    c.part(S, 2, [2], epoch=1, recovering=True)
    r = check_with(h, c, tmp_path)
    assert counts(r) == {"unclean-election": 1} and r.valid is False


def test_elr_member_is_a_clean_leader(tmp_path: Path) -> None:
    h = _one_write()
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(S, -1, [], elr=[2, 3], epoch=1)
    c.part(2 * S, 2, [2], elr=[3], epoch=2)
    r = check_with(h, c, tmp_path)
    assert r.valid is True and counts(r) == {"offline": 1}
    w = r.anomalies["offline"].examples[0]
    assert w["start_s"] == 1.0 and w["length_s"] == 1.0 and w["open"] is False


def test_last_known_leader_election_is_reported_not_invalid(tmp_path: Path) -> None:
    h = _one_write()
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(S, -1, [], lke=[2], epoch=1)
    c.part(3 * S, 2, [2], epoch=2)
    r = check_with(h, c, tmp_path)
    assert r.valid is True
    assert counts(r) == {"last-known-leader-election": 1, "offline": 1}
    assert r.anomalies["offline"].examples[0]["length_s"] == 2.0
    # a leader outside ISR, ELR and the last known ELR is unclean
    c2 = C()
    c2.part(0, 1, [1, 2, 3])
    c2.part(S, -1, [], lke=[2], epoch=1)
    c2.part(3 * S, 3, [3], epoch=2)
    r2 = check_with(h, c2, _fresh(tmp_path, "other"))
    assert counts(r2) == {"unclean-election": 1, "offline": 1} and r2.valid is False


def test_unclean_election_where_enabled_is_reported_but_allowed(tmp_path: Path) -> None:
    h = _one_write()
    c = C()
    c.part(0, 1, [1])
    c.part(S, -1, [1], epoch=1)
    c.part(2 * S, 2, [2], epoch=2)
    r = check_with(h, c, tmp_path, RunSettings(unclean_enabled=True))
    assert r.valid is True and r.count("unclean-election") == 1
    data = r.to_json()["anomalies"]["unclean-election"]
    assert data["allowed"] == 1
    # a scenario expecting valid, without listing the kind, ended as expected
    assert evaluate({"valid": True}, r.to_json()).expected
    # per topic: enabled on another topic only, the same election invalidates
    r2 = check_with(
        h, c, _fresh(tmp_path, "t2"), RunSettings(topic_unclean={"other": True, "t": False})
    )
    assert r2.valid is False and "allowed" not in r2.to_json()["anomalies"]["unclean-election"]


def test_first_line_of_a_partition_is_not_an_election(tmp_path: Path) -> None:
    h = _one_write()
    c = C()
    c.part(0, 3, [3])
    c.part(0, 2, [2, 3], partition=1)
    assert check_with(h, c, tmp_path).valid is True


def test_acked_below_min_isr_needs_a_second_of_committed_shrink(tmp_path: Path) -> None:
    h = H()
    c = C()
    c.part(0, 1, [1, 2, 3])
    shrink = h.now() + S // 2
    c.part(shrink, 1, [1], epoch=1)
    h.wait(0.6)
    h.send("early", 0, 0)  # invoked 0.1 s after the shrink: the leader may not know yet
    h.wait(1.0)
    h.send("late", 0, 1)  # invoked 1.1 s after: acknowledged below min.insync
    h.invoke("healed")
    h.wait(0.5)
    c.part(h.now() - S // 4, 1, [1, 2], epoch=1)  # the ISR grew back before its ok
    h.ok("healed", 0, 2)
    h.meta(0, 1, [1], min_insync=2)  # a stale sample is not used for this partition
    h.drain_all(0, ["early", "late", "healed"])
    r = check_with(h, c, tmp_path)
    assert counts(r) == {"acked-below-min-isr": 1}
    ex = r.anomalies["acked-below-min-isr"].examples[0]
    assert ex["value"] == "late" and ex["min_insync"] == 2 and ex["isr_sizes"] == [1]
    assert ex["source"] == "controller.jsonl"


def test_acked_below_min_isr_uses_run_json_and_acks(tmp_path: Path) -> None:
    h = H()
    c = C()
    c.part(0, 1, [1, 2])
    h.wait(2)
    h.send("a", 0, 0)
    h.send("b", 0, 1, acks="1")
    h.drain_all(0, ["a", "b"])
    # ISR of 2 is below a configured min.insync of 3; Kafka's default 1 is not
    assert counts(check_with(h, c, _fresh(tmp_path, "d"))) == {}
    r = check_with(h, c, _fresh(tmp_path, "m"), RunSettings(min_insync=3))
    assert counts(r) == {"acked-below-min-isr": 1}
    assert r.anomalies["acked-below-min-isr"].examples[0]["value"] == "a"


def test_partition_absent_from_the_record_falls_back_to_samples(tmp_path: Path) -> None:
    h = H()
    h.meta(1, 1, [1, 2])
    h.meta(1, 3, [3])  # partition 1: only samples, an unclean change
    _base(h, ["a"])
    h.drain_all(0, ["a"])
    c = C()
    c.part(0, 1, [1, 2, 3])
    r = check_with(h, c, tmp_path)
    assert counts(r) == {"unclean-election": 1}
    assert r.anomalies["unclean-election"].examples[0]["partition"] == 1


def test_run_directory_with_controller_record_writes_results(tmp_path: Path) -> None:
    h = _one_write()
    h.write(tmp_path / "history.jsonl")
    c = C()
    c.part(0, 1, [1, 2])
    c.part(S, 3, [3], epoch=1)
    c.write(tmp_path / "controller.jsonl")
    r = check_run(tmp_path)
    data = orjson.loads((tmp_path / "results.json").read_bytes())
    assert r.valid is False and data["anomalies"]["unclean-election"]["count"] == 1
    assert data["stats"]["controller"]["partitions"] == 1


# a controller.jsonl partition line and broker line, each short of the fields a case adds
_PART = {"offset": 5, "time": 0, "type": "partition", "topic": "t", "partition": 0}
_BROKER = {"offset": 5, "time": 0, "type": "broker", "broker": 1}


@pytest.mark.parametrize(
    ("line", "field"),
    [
        (_PART, "leader"),
        ({**_PART, "leader": 1, "isr": "1,2"}, "isr"),
        ({**_PART, "partition": -1, "leader": 1, "isr": [1]}, "partition"),
        ({**_BROKER, "broker": "one"}, "broker"),
        ({**_BROKER, "fenced": "yes"}, "fenced"),
        ({**_BROKER, "time": -1.5}, "time"),
        ({**_BROKER, "offset": 1}, "offset"),
        ({k: v for k, v in _BROKER.items() if k != "offset"}, "offset"),
    ],
)
def test_malformed_line_is_bad_input_naming_file_line_field(
    tmp_path: Path, line: dict, field: str
) -> None:
    path = tmp_path / "controller.jsonl"
    first = {"offset": 1, "time": 0, "type": "broker", "broker": 1, "broker_epoch": 3}
    path.write_bytes(orjson.dumps(first) + b"\n" + orjson.dumps(line) + b"\n")
    with pytest.raises(HistoryError) as err:
        read_controller(path)
    assert err.value.line == 2 and err.value.field == field
    assert str(path) in str(err.value)


def test_not_json_is_bad_input_and_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "controller.jsonl"
    good = orjson.dumps({"offset": 1, "time": 0, "type": "broker", "broker": 1})
    path.write_bytes(good + b"\n{not json\n")
    with pytest.raises(HistoryError) as err:
        read_controller(path)
    assert err.value.line == 2
    path.write_bytes(good + b'\n{"offset": 2, "ti')
    record = read_controller(path)
    assert list(record.brokers) == [1] and "torn" in record.warnings[0]


def test_check_cli_exits_3_on_a_bad_controller_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kchaos.cli.main import main

    h = _one_write()
    h.write(tmp_path / "history.jsonl")
    (tmp_path / "controller.jsonl").write_bytes(b'{"offset": 1, "time": 0, "type": 7}\n')
    with pytest.raises(SystemExit) as done:
        main(["check", str(tmp_path)])
    assert done.value.code == 3
    err = capsys.readouterr().err
    assert "controller.jsonl:1" in err and "type" in err and "Traceback" not in err
