"""The DuckDB baseline of ``kchaos bench analyze`` (kchaos.bench.duck_kinds) counts every
format-v1 data kind as the checker does, on the plain histories of the agreement corpus
(no Spark here: the Spark job's agreement with the checker is test_analysis_agreement's)."""

from __future__ import annotations

from pathlib import Path

from kchaos.bench.duck_kinds import KINDS, duckdb_kinds
from kchaos.harness.checker import check_history
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.rundir import RunDir

from corpus import checker_test_histories, data_counts, histgen_cases  # isort: skip
from hist import History, every_kind, near_misses  # isort: skip


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {k: n for k, n in counts.items() if n}


def _both_inputs(run: Path) -> tuple[dict[str, int], dict[str, int]]:
    """The counts from the JSON lines and from the run's Parquet copy."""
    rd = RunDir(run)
    assert rd.write_history_parquet(), run
    return duckdb_kinds(rd.history, 1), duckdb_kinds(rd.history_parquet, 1)


def test_every_kind_once_from_a_hand_written_history(tmp_path: Path) -> None:
    h, expected = every_kind()
    from_json, from_parquet = _both_inputs(h.write(tmp_path / "every"))
    assert set(from_json) == set(KINDS)
    assert from_json == from_parquet == {k: expected.get(k, 0) for k in KINDS}


def test_near_misses_count_nothing(tmp_path: Path) -> None:
    from_json, from_parquet = _both_inputs(near_misses().write(tmp_path / "near"))
    assert _nonzero(from_json) == _nonzero(from_parquet) == {}


def _stuck_drain() -> History:
    """A read_committed drain that stopped at a last stable offset of 2, below the high
    watermark of 5: above it the drain could not read, so an undrained acknowledgement
    there is unseen (not lost), and a poll there is not uncommitted."""
    h = History()
    h.send("a", 0, 0)
    h.send("b", 0, 1)  # below the stuck offset and not drained: lost
    h.send("c", 0, 3)  # above it, never read: unseen
    h.send("d", 0, 4)  # above it, polled: seen, nothing
    h.poll((0, 0, "a"), (0, 4, "d"))
    h.drain((0, 0, "a"))
    h.add(
        process="drain",
        type="ok",
        f="drain-end",
        topic=h.topic,
        partition=0,
        log_start_offset=0,
        high_watermark=5,
        isolation="read_committed",
        last_stable_offset=2,
    )
    return h


def test_a_stuck_last_stable_offset_makes_unseen_not_lost(tmp_path: Path) -> None:
    run = _stuck_drain().write(tmp_path / "stuck")
    from_json, from_parquet = _both_inputs(run)
    assert _nonzero(from_json) == _nonzero(from_parquet) == {"lost-write": 1, "unseen": 1}
    assert _nonzero(from_json) == data_counts(check_history(RunDir(run).history).anomalies)


def test_generated_histories_give_the_injected_counts_and_the_checkers(tmp_path: Path) -> None:
    wrong = {}
    cases = [c for c in histgen_cases(tmp_path / "gen") if not c.name.startswith("gentxn")]
    assert len(cases) >= 10
    for case in cases:
        from_json, from_parquet = _both_inputs(case.run_dir)
        checker = data_counts(check_history(RunDir(case.run_dir).history).anomalies)
        if not (_nonzero(from_json) == _nonzero(from_parquet) == checker == case.expected):
            wrong[case.name] = {"duck": from_json, "checker": checker, "injected": case.expected}
    assert not wrong


def test_the_checker_test_histories_count_as_the_checker_does(tmp_path: Path) -> None:
    compared, wrong = 0, {}
    for case in checker_test_histories(tmp_path / "checker"):
        history = RunDir(case.run_dir).history
        try:
            checker = data_counts(check_history(history).anomalies)
        except HistoryError:
            continue  # bad-input histories: not comparable
        compared += 1
        got = _nonzero(duckdb_kinds(history, 1))
        if got != checker:
            wrong[case.name] = {"duck": got, "checker": checker}
    assert compared >= 20
    assert not wrong
