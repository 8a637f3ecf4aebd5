"""expect.elected_from_elr: KIP-966's defence seen, a leader elected from the ELR.

stats.isr.elections.from_elr counts the clean elections whose new leader was an eligible
leader replica and not an ISR member; a scenario that requires one ends "not exercised"
without it. Checked on the real KIP-501 run on 4.4.0 kept as a fixture, and on near
misses: a leader from the ISR, a last-known-leader election, no controller record.
"""

from __future__ import annotations

from pathlib import Path

from checker_hist import C, H, check_with

from kchaos.harness.checker import check_run
from kchaos.harness.rundir.expect import EXIT_EXPECTED, EXIT_NOT_EXERCISED, evaluate
from kchaos.harness.scenario import library

S = 1_000_000_000
FIXTURES = Path(__file__).parent / "fixtures"
WANTED = {"valid": "any", "elected_from_elr": True}


def one_write() -> H:
    h = H()
    h.send("a", 0, 0)
    h.drain_all(0, ["a"])
    return h


def from_elr(c: C, tmp_path: Path) -> tuple[int, int]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    r = check_with(one_write(), c, tmp_path)
    results = r.to_json()
    return results["stats"]["isr"]["elections"]["from_elr"], evaluate(WANTED, results).exit_code


def test_a_leader_from_the_elr_counts(tmp_path: Path) -> None:
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(S, 1, [1], elr=[2, 3], epoch=1)  # the followers dropped, eligible
    c.part(2 * S, 2, [2], elr=[3], epoch=2)  # the leader fenced: 2 from the ELR
    assert from_elr(c, tmp_path) == (1, EXIT_EXPECTED)


def test_near_misses_do_not_count(tmp_path: Path) -> None:
    # a leader from the ISR, though an ELR existed
    c = C()
    c.part(0, 1, [1, 2])
    c.part(S, 1, [1, 2], elr=[3], epoch=1)
    c.part(2 * S, 2, [2], elr=[3], epoch=2)
    assert from_elr(c, tmp_path / "isr") == (0, EXIT_NOT_EXERCISED)
    # a last known ELR member elected once ISR and ELR were empty (not the ELR at work)
    c = C()
    c.part(0, 1, [1, 2, 3])
    c.part(S, -1, [], lke=[2], epoch=1)
    c.part(3 * S, 2, [2], epoch=2)
    assert from_elr(c, tmp_path / "lkl") == (0, EXIT_NOT_EXERCISED)


def test_without_a_controller_record_it_is_not_shown() -> None:
    outcome = evaluate(WANTED, {"valid": True, "anomalies": {}, "stats": {}})
    assert outcome.exit_code == EXIT_NOT_EXERCISED
    assert "no election counts from controller.jsonl" in outcome.reasons[0]


def test_the_kip_501_run_on_4_4_0_elected_from_the_elr() -> None:
    results = check_run(FIXTURES / "busy-440-b", write=False).to_json()
    assert results["stats"]["isr"]["elections"]["from_elr"] == 1
    # KAFKA-15489 on 3.6.2: no ELR, no election from it
    other = check_run(FIXTURES / "k15489-362", write=False).to_json()
    assert evaluate(WANTED, other).exit_code == EXIT_NOT_EXERCISED


def test_the_library_requires_it_where_elr_is_on_by_default() -> None:
    for name in ("kip-501-slow-leader", "kip-966-unclean-last-isr-member"):
        assert library.load(name, kafka_version="4.4.0").expect.elected_from_elr, name
        assert not library.load(name, kafka_version="3.9.1").expect.elected_from_elr, name
