"""Parts of the analysis that need no Spark: windows, run dirs, line checks, run.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kchaos.harness.analysis.lines import (
    count_lines,
    first_bad_line,
    last_line,
    line_problem,
)
from kchaos.harness.analysis.runs import resolve_runs, run_facts
from kchaos.harness.analysis.windows import (
    DONE,
    INVOKED,
    LOST,
    LOST_CODE,
    NO_FAULT,
    FaultLine,
    assign_batch,
    cut_windows,
)
from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir.history import ends_with_newline


def test_windows_cut_at_every_fault_boundary_and_track_overlaps() -> None:
    faults = [
        FaultLine(100, 1, "start", "f-1", "pause"),
        FaultLine(200, 2, "start", "f-2", "partition"),
        FaultLine(300, 3, "stop", "f-1", "pause"),
        FaultLine(400, 4, "stop", "f-2", "partition"),
    ]
    got = [(w["start_ns"], w["end_ns"], w["label"]) for w in cut_windows(faults, 999)]
    assert got == [
        (0, 100, NO_FAULT),
        (100, 200, "pause"),
        (200, 300, "partition+pause"),
        (300, 400, "partition"),
        (400, 1000, NO_FAULT),
    ]


def test_a_fault_never_stopped_lasts_to_the_end_and_no_faults_is_one_window() -> None:
    open_fault = [FaultLine(50, 0, "start", "f-9", "disk-stall")]
    assert [w["label"] for w in cut_windows(open_fault, 80)] == [NO_FAULT, "disk-stall"]
    only = cut_windows([], 80)
    assert len(only) == 1 and only[0]["end_ns"] == 81 and only[0]["label"] == NO_FAULT


def test_simultaneous_start_and_stop_make_no_empty_window() -> None:
    faults = [
        FaultLine(10, 0, "start", "a", "pause"),
        FaultLine(20, 1, "stop", "a", "pause"),
        FaultLine(20, 2, "start", "b", "kill"),
    ]
    windows = cut_windows(faults, 30)
    assert [w["label"] for w in windows] == [NO_FAULT, "pause", "kill"]
    assert all(w["end_ns"] > w["start_ns"] for w in windows)


def test_sends_and_lost_writes_are_placed_in_the_window_holding_their_time() -> None:
    """Windows [0, 100) [100, 250) [250, 301) of run 1, [0, 50) of run 2: a time on a
    start belongs to the window it starts; a time at or past the last end, negative or
    null gives no row; a lost write counts at its time only."""
    import numpy as np
    import pyarrow as pa

    bounds = {1: (np.array([0, 100, 250]), 301), 2: (np.array([0]), 50)}
    batch = pa.RecordBatch.from_pydict(
        {
            "rk": pa.array([1, 2, 1, 1, 1, 2, 1, 3], pa.int32()),
            "t_invoke": pa.array([5, 40, 99, -1, 260, None, None, 1], pa.int64()),
            "t_done": pa.array([100, 49, 301, 250, None, 50, 120, 2], pa.int64()),
            "code": pa.array([1, 2, 3, 1, None, 1, LOST_CODE, 1], pa.int8()),
        }
    )
    got = pa.Table.from_batches(assign_batch(batch, bounds)).to_pylist()
    placed = sorted((r["side"], r["rk"], r["w"], r["code"], r["t_invoke"]) for r in got)
    assert placed == [
        (DONE, 1, 1, 1, 5),  # done at 100: the second window's first instant
        (DONE, 1, 2, 1, -1),  # invoked before time 0: no invoke row, but done at 250
        (DONE, 2, 0, 2, 40),
        (INVOKED, 1, 0, 1, None),
        (INVOKED, 1, 0, 3, None),  # done at 301, the end of the last window: no done row
        (INVOKED, 1, 2, None, None),  # still in flight
        (INVOKED, 2, 0, 2, None),
        (LOST, 1, 1, None, None),
    ]  # run 3 has no window, run 2's completion at 50 lies past its last one


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"index":"1","time":1,"process":1,"type":"ok","f":"send"}', "index"),
        ('{"index":1,"process":1,"type":"ok","f":"send"}', "time"),
        ('{"index":1,"time":1,"process":1,"type":"maybe","f":"send"}', "type"),
        ('{"index":1,"time":1,"process":true,"type":"ok","f":"send"}', "process"),
        (
            '{"index":1,"time":1,"process":1,"type":"ok","f":"poll","records":[{"topic":"t"}]}',
            "records[0].partition",
        ),
        ("[1,2]", None),
        ('{"index":1,', None),
    ],
)
def test_line_problem_names_the_field(line: str, field: str | None) -> None:
    problem = line_problem(line)
    assert problem is not None and problem[0] == field


def test_a_good_line_has_no_problem() -> None:
    line = '{"index":1,"time":2,"process":"nemesis","type":"info","f":"fault","phase":"start"}'
    assert line_problem(line) is None


def test_tail_helpers(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"a":1}\n\n{"b":2}\n{"c":')
    assert last_line(path) == '{"c":'
    assert not ends_with_newline(path)
    assert count_lines(path) == 4
    path.write_bytes(b'{"a":1}\n' + b"x" * 200_000 + b"\n\n")
    assert last_line(path) == "x" * 200_000
    assert ends_with_newline(path)


GOOD = b'{"index":0,"time":1,"process":1,"type":"invoke","f":"send","topic":"t","value":"1-0"}\n'


@pytest.mark.parametrize(
    ("bad", "skip_last", "where"),
    [
        (b'{"index":1,"time":2,"process":1,"type":"ok","f":"send"\n', False, "h.jsonl:4: not JSON"),
        (b'{"index":1,"time":2,"process":1,"type":"ok"}\n', False, "h.jsonl:4: f: missing"),
        (b"[1]\n", False, "h.jsonl:4: not a JSON object"),
        # the last line, torn: passed over, the file has no bad line
        (b'{"index":1,"ti', True, "h.jsonl: a line does not fit"),
    ],
)
def test_first_bad_line_names_the_line_past_blank_ones(
    tmp_path: Path, bad: bytes, skip_last: bool, where: str
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(GOOD + b"\n  \n" + bad)  # blank lines are skipped, as Spark does
    err = first_bad_line(path, skip_last=skip_last)
    assert isinstance(err, HistoryError) and where in str(err), str(err)


def _run(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "history.jsonl").write_text("{}\n")
    return path


def test_resolve_runs_expands_a_directory_of_runs(tmp_path: Path) -> None:
    a, b = _run(tmp_path / "runs" / "a"), _run(tmp_path / "runs" / "b")
    (tmp_path / "runs" / "_analysis").mkdir()  # not a run: no history
    runs = resolve_runs([tmp_path / "runs", a])
    assert [r.path for r in runs] == [a.resolve(), b.resolve()]
    assert [r.key for r in runs] == [0, 1]


@pytest.mark.parametrize("what", ["missing", "file", "empty-dir"])
def test_resolve_runs_rejects_what_is_not_a_run(tmp_path: Path, what: str) -> None:
    target = tmp_path / "x"
    if what == "file":
        target.write_text("")
    elif what == "empty-dir":
        target.mkdir()
    with pytest.raises(HistoryError) as err:
        resolve_runs([target])
    assert str(target) in str(err.value)


def test_parquet_copy_is_preferred_only_when_newer(tmp_path: Path) -> None:
    run = _run(tmp_path / "r")
    (run / "history.parquet").mkdir()
    assert resolve_runs([run])[0].fmt == "parquet"
    assert resolve_runs([run], prefer="jsonl")[0].fmt == "jsonl"
    (run / "history.jsonl").touch()
    import os

    os.utime(run / "history.parquet", (0, 0))
    assert resolve_runs([run])[0].fmt == "jsonl"


def test_run_facts_find_key_configs_anywhere(tmp_path: Path) -> None:
    run = _run(tmp_path / "r1")
    (run / "run.json").write_text(
        json.dumps(
            {
                "run_id": "20260101-x",
                "scenario": {"name": "smoke", "cluster": {"kafka_version": "4.4.0"}},
                "broker_configs": {"unclean.leader.election.enable": "false"},
                "topics": [{"name": "t", "configs": {"min.insync.replicas": 2}}],
                "producers": [{"acks": "all"}, {"acks": "1"}],
            }
        )
    )
    facts = run_facts(run)
    assert facts["run_id"] == "20260101-x"
    assert facts["scenario"] == "smoke"
    assert facts["kafka_version"] == "4.4.0"
    assert facts["acks"] == "1|all"
    assert facts["min.insync.replicas"] == "2"
    assert facts["unclean.leader.election.enable"] == "false"
    assert facts["log.flush.interval.messages"] is None
    assert run_facts(_run(tmp_path / "bare"))["run_id"] == "bare"


def test_verdict_and_exit_code_follow_the_checker() -> None:
    from kchaos.harness.analysis.job import exit_code, verdict

    assert verdict({}) is True
    assert verdict({"unseen": 2}) == "unknown"
    assert verdict({"unseen": 2, "duplicate": 1}) is False
    assert exit_code([True, True]) == 0
    assert exit_code([True, "unknown"]) == 2
    assert exit_code(["unknown", False, True]) == 1
