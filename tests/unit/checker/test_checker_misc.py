"""Combination of checkers, crash isolation, run.json reading, the history generator."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from checker_hist import H, counts

from kchaos.harness.checker import CHECKERS, RunSettings, check_history, check_run
from kchaos.harness.checker.facts import Facts
from kchaos.harness.checker.model import CheckOutcome, combine
from kchaos.harness.errors import HistoryError
from kchaos.harness.histgen import INJECTABLE, generate, generate_run


def test_combine_prefers_invalid_then_unknown() -> None:
    assert combine([True, True]) is True
    assert combine([True, "unknown"]) == "unknown"
    assert combine(["unknown", False, True]) is False
    assert combine([]) is True


def test_a_crashing_checker_yields_unknown_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(facts: Facts, config: RunSettings) -> CheckOutcome:
        raise ZeroDivisionError("boom")

    monkeypatch.setitem(CHECKERS, "ordering", broken)
    h = H()
    h.send("a", 0, 0)
    h.drain_all(0, ["a"])
    r = h.check(tmp_path)
    assert r.valid == "unknown"
    assert r.checkers["ordering"].error == "ZeroDivisionError: boom"
    assert r.to_json()["checkers"]["ordering"]["valid"] == "unknown"
    # and an invalid finding elsewhere still wins
    h.send("b", 0, 1)
    assert h.check(tmp_path).valid is False


def test_results_json_shape(tmp_path: Path) -> None:
    generate_run(tmp_path, events=2000, inject=("lost-write", "offline"))
    r = check_run(tmp_path)
    data = orjson.loads((tmp_path / "results.json").read_bytes())
    assert data == orjson.loads(orjson.dumps(r.to_json()))
    assert set(data) >= {"valid", "anomalies", "stats", "checkers", "warnings"}
    assert data["valid"] is False
    assert set(data["anomalies"]) == {"lost-write", "offline"}
    assert set(data["checkers"]) == set(CHECKERS)


def test_examples_name_every_line_of_the_value(tmp_path: Path) -> None:
    h = H()
    inv = h.invoke("x")
    fail = h.done("x", "fail")
    p1 = h.poll(5, (0, 0, "x"))
    h.poll(5, (0, 1, "y"))  # not about x
    p2 = h.poll(6, (0, 0, "x"))
    r = h.check(tmp_path)
    ex = r.anomalies["aborted-read"].examples[0]
    assert ex["index"] == [inv, fail, p1, p2]


def test_at_most_five_examples_but_every_one_counted(tmp_path: Path) -> None:
    h = H()
    for i in range(12):
        h.send(f"v{i}", 0, i)
    h.drain_end(0, 12)
    r = h.check(tmp_path)
    assert r.count("lost-write") == 12 and len(r.anomalies["lost-write"].examples) == 5


def test_run_json_keys() -> None:
    cfg = RunSettings.from_run_json(
        {
            "scenario": {
                "workload": {"producer": {"acks": 1}},
                "checks": {
                    "max_offline_seconds": 5,
                    "max_time_to_full_isr_seconds": 30,
                    "min_ok_sends": 10,
                },
            },
            "cluster": {
                "server_properties": {
                    "unclean.leader.election.enable": "true",
                    "min.insync.replicas": "2",
                }
            },
            "topics": [{"name": "t", "configs": {"min.insync.replicas": 3}}],
        }
    )
    assert cfg.acks_all is False and cfg.unclean_for("t") is True
    assert cfg.min_insync_for("t") == 3 and cfg.min_insync_for("u") == 2
    assert (cfg.max_offline_seconds, cfg.max_time_to_full_isr_seconds) == (5.0, 30.0)
    assert cfg.min_ok_sends == 10
    assert RunSettings.from_run_json({}) == RunSettings()
    assert RunSettings.from_run_json({"producer": {"acks": "all"}}).acks_all is True
    with pytest.raises(HistoryError, match="unclean.leader.election.enable"):
        RunSettings.from_run_json({"broker_config": {"unclean.leader.election.enable": "maybe"}})


def test_run_json_that_is_not_json(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{")
    with pytest.raises(HistoryError, match="run.json"):
        RunSettings.load(tmp_path)


def test_generator_is_deterministic_and_reports_what_it_injected(tmp_path: Path) -> None:
    a = generate(tmp_path / "a.jsonl", events=1500, seed=7, inject=("duplicate", "poll-skip"))
    b = generate(tmp_path / "b.jsonl", events=1500, seed=7, inject=("duplicate", "poll-skip"))
    assert a.path.read_bytes() == b.path.read_bytes()
    assert a.expected == {"duplicate": 1, "poll-skip": 1} and a.expected_valid is False
    assert sorted(i.kind for i in a.injected) == ["duplicate", "poll-skip"]
    dup = next(i for i in a.injected if i.kind == "duplicate")
    lines = [orjson.loads(x) for x in a.path.read_bytes().splitlines()]
    assert lines[dup.index]["value"] == dup.value and lines[dup.index]["type"] == "ok"
    assert a.events == len(lines) and a.sends == sum(a.outcomes.values())
    with pytest.raises(ValueError):
        generate(tmp_path / "c.jsonl", inject=("nonsense",))


def test_generated_clean_history_has_the_near_misses(tmp_path: Path) -> None:
    gen = generate(tmp_path / "h.jsonl", events=6000, seed=3, log_start_offset=10)
    lines = [orjson.loads(x) for x in gen.path.read_bytes().splitlines()]
    assert gen.outcomes["info"] > 0 and gen.outcomes["fail"] > 0
    assert sum(1 for e in lines if e["f"] == "assign") > 2  # rebalances
    assert any(e["f"] == "metadata" and e.get("elr") for e in lines)  # ELR elections
    assert all(e["log_start_offset"] == 10 for e in lines if e["f"] == "drain-end")
    r = check_history(gen.path)
    assert r.valid is True and counts(r) == {}
    assert r.stats["isr"]["partitions_below_min_isr_observed"] > 0


@pytest.mark.parametrize("kind", INJECTABLE)
def test_each_injection_in_a_bigger_history(tmp_path: Path, kind: str) -> None:
    gen = generate(tmp_path / "h.jsonl", events=8000, seed=11, partitions=4, inject=(kind,))
    r = check_history(gen.path)
    assert counts(r) == gen.expected
    assert r.valid == gen.expected_valid
