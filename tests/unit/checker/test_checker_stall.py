"""broker-stalled: a broker registered and unfenced for longer than its session while
nothing it led acknowledged a waiting send (KAFKA-15046's zombie)."""

from __future__ import annotations

from pathlib import Path

from checker_hist import C, H, check_with
from ticket_hist import EVIDENCE

from kchaos.harness.checker import RunSettings
from kchaos.harness.checker.model import Results
from kchaos.harness.rundir.expect import evaluate
from kchaos.harness.scenario.loader import load_scenario

S = 1_000_000_000
KIND = "broker-stalled"


def stalls(results: Results) -> int:
    """How many stalls the checker reported (the histories here drain nothing, so other
    kinds such as unseen are beside the point)."""
    found = results.anomalies.get(KIND)
    return 0 if found is None else found.count


def _cluster(c: C, *, leaders: dict[int, int] | None = None) -> None:
    """Brokers 1 to 3 registered and unfenced at 0 (epoch 10 + id), the partitions'
    leaders (partition -> broker; default partition 0 led by 1)."""
    for b in (1, 2, 3):
        c.broker(0, b, 10 + b)
    for part, leader in (leaders or {0: 1}).items():
        c.part(0, leader, [1, 2, 3], partition=part)


def _steady(h: H, first: int, n: int, partition: int = 0) -> int:
    """``n`` sends to ``partition`` acknowledged 0.5 s apart; the next offset."""
    for i in range(n):
        h.send(f"p{partition}-{first + i}", partition, first + i)
        h.wait(0.5)
    return first + n


def _stalled_history(stall_s: float, *, waiting: bool = True) -> H:
    """Steady sends to partition 0, then a gap of ``stall_s`` with one send outstanding
    through it (``waiting``) or with nothing sent (the producers idle), then steady again."""
    h = H()
    off = _steady(h, 0, 6)
    if waiting:
        h.invoke("w")
        h.wait(stall_s)
        h.ok("w", 0, off)
        off += 1
    else:
        h.wait(stall_s)
    off = _steady(h, off, 6)
    values = [f"p0-{i}" for i in range(6)] + (["w"] if waiting else [])
    values += [f"p0-{i}" for i in range(len(values), off)]
    h.drain_all(0, values)
    return h


def test_a_broker_silent_longer_than_its_session_is_stalled(tmp_path: Path) -> None:
    c = C()
    _cluster(c)
    r = check_with(_stalled_history(12.0), c, tmp_path)
    assert stalls(r) == 1
    assert r.valid is True  # reported, never invalid
    ex = r.anomalies[KIND].examples[0]
    assert ex["broker"] == 1 and ex["broker_epoch"] == 11 and not ex["open"]
    assert 12.0 <= ex["length_s"] < 12.6 and ex["longest_wait_s"] >= 12.0
    assert ex["partitions"] == [{"topic": "t", "partition": 0}]
    assert ex["broker_session_timeout_ms"] == 9000
    assert r.stats["stall"]["brokers"]["1"]["longest_gap_s"] == ex["length_s"]


def test_a_gap_shorter_than_the_session_is_measured_not_reported(tmp_path: Path) -> None:
    c = C()
    _cluster(c)
    r = check_with(_stalled_history(8.0), c, tmp_path)
    assert stalls(r) == 0
    assert 8.0 <= r.stats["stall"]["brokers"]["1"]["longest_gap_s"] < 8.6
    assert r.stats["stall"]["threshold_s"] == 9.0


def test_the_threshold_is_the_runs_session_timeout(tmp_path: Path) -> None:
    c = C()
    _cluster(c)
    r = check_with(
        _stalled_history(12.0), c, tmp_path, RunSettings(broker_session_timeout_ms=18_000)
    )
    assert stalls(r) == 0


def test_a_fenced_broker_is_not_stalled_but_gone(tmp_path: Path) -> None:
    # a dead broker: the controller fenced it inside the gap (offline, not a zombie)
    c = C()
    _cluster(c)
    c.broker(12 * S, 1, 11, fenced=True)
    c.broker(16 * S, 1, 11)
    assert stalls(check_with(_stalled_history(12.0), c, tmp_path)) == 0


def test_a_re_registered_broker_is_not_stalled(tmp_path: Path) -> None:
    c = C()
    _cluster(c)
    c.broker(10 * S, 1, 40)  # restarted: a new broker epoch inside the gap
    assert stalls(check_with(_stalled_history(12.0), c, tmp_path)) == 0


def test_idle_producers_are_no_stall(tmp_path: Path) -> None:
    c = C()
    _cluster(c)
    assert stalls(check_with(_stalled_history(12.0, waiting=False), c, tmp_path)) == 0


def test_a_leader_that_moved_away_inside_the_gap_is_not_stalled(tmp_path: Path) -> None:
    c = C()
    _cluster(c)
    c.part(10 * S, 2, [2, 3], epoch=1)  # partition 0 led by broker 2 from 10 s on
    assert stalls(check_with(_stalled_history(12.0), c, tmp_path)) == 0


def test_without_controller_jsonl_nothing_is_judged(tmp_path: Path) -> None:
    h = _stalled_history(12.0)
    h.meta(0, 1, [1, 2, 3])
    r = h.check(tmp_path)
    assert stalls(r) == 0
    assert "no controller.jsonl" in r.stats["stall"]["note"]


def test_sends_another_broker_acknowledged_are_not_a_wait(tmp_path: Path) -> None:
    # partition 0 led by broker 1, partition 1 by broker 2; for 12 s every send goes to
    # partition 1 and is acknowledged at once: broker 1 acknowledged nothing, but no
    # client waited for it
    c = C()
    _cluster(c, leaders={0: 1, 1: 2})
    h = H()
    _steady(h, 0, 4)
    _steady(h, 0, 25, partition=1)
    _steady(h, 4, 4)
    r = check_with(h, c, tmp_path)
    assert stalls(r) == 0
    # the same, with one send to partition 0 waiting through it: broker 1 is stalled
    # while broker 2 serves
    c2 = C()
    _cluster(c2, leaders={0: 1, 1: 2})
    h2 = H()
    _steady(h2, 0, 4)
    h2.invoke("w")
    _steady(h2, 0, 25, partition=1)
    h2.ok("w", 0, 4)
    _steady(h2, 5, 4)
    (tmp_path / "waiting").mkdir()
    r2 = check_with(h2, c2, tmp_path / "waiting")
    assert stalls(r2) == 1
    assert r2.anomalies[KIND].examples[0]["broker"] == 1


def test_a_stall_that_lasts_to_the_end_is_open(tmp_path: Path) -> None:
    c = C()
    _cluster(c)
    h = H()
    _steady(h, 0, 4)
    h.invoke("w1")
    h.invoke("w2")
    h.wait(15.0)
    h.done("w1", "fail")  # timed out; w2 is never answered
    r = check_with(h, c, tmp_path)
    assert stalls(r) == 1
    ex = r.anomalies[KIND].examples[0]
    assert ex["open"] is True and ex["length_s"] >= 15.0


def test_the_end_of_the_workload_is_no_stall(tmp_path: Path) -> None:
    c = C()
    _cluster(c)
    h = H()
    _steady(h, 0, 4)
    h.wait(30.0)  # the producers stopped; the history goes on (drain, heal)
    h.drain_all(0, ["p0-0", "p0-1", "p0-2", "p0-3"])
    r = check_with(h, c, tmp_path)
    assert stalls(r) == 0


SCENARIO = (
    Path(__file__).resolve().parents[3]
    / "harness"
    / "scenarios"
    / "kafka-15046-fsync-under-log-lock.yaml"
)


def test_the_scenario_requires_a_stall_before_3_7_0_and_forbids_it_from_3_7_0(
    tmp_path: Path,
) -> None:
    c = C()
    _cluster(c)
    (tmp_path / "stalled").mkdir()
    (tmp_path / "served").mkdir()
    stalled = check_with(_stalled_history(12.0), c, tmp_path / "stalled").to_json()
    served = check_with(_stalled_history(2.0), c, tmp_path / "served").to_json()
    # on the kind alone: these histories have no slow-sync whose effect the scenario
    # also requires (tests/unit/checker/test_checker_evidence.py judges that)
    expect = {
        v: {
            k: x
            for k, x in load_scenario(SCENARIO, kafka_version=v).to_dict()["expect"].items()
            if k not in EVIDENCE
        }
        for v in ("3.6.2", "3.7.0")
    }
    assert evaluate(expect["3.6.2"], stalled).expected
    assert evaluate(expect["3.7.0"], served).expected
    assert evaluate(expect["3.7.0"], stalled).reasons == (f"forbidden anomalies found: {KIND}",)
    assert evaluate(expect["3.6.2"], served).reasons == (f"expected anomalies not found: {KIND}",)
