"""history.parquet: DuckDB's conversion of history.jsonl (the one conversion), whole or
not at all, and RunDir's run-end copy of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import orjson
import pytest

from kchaos.harness.analysis.schema import column_names
from kchaos.harness.histgen import generate_run
from kchaos.harness.rundir import RunDir, names
from kchaos.harness.rundir import parquet as pq

GOOD = (
    b'{"index":0,"time":1,"process":1,"type":"invoke","f":"send","topic":"t","value":"1-0"}\n'
    b'{"index":1,"time":2,"process":"drain","type":"ok","f":"drain","records":'
    b'[{"topic":"t","partition":0,"offset":7,"value":"1-0"}],"unknown":{"x":1}}\n'
    b'{"index":2,"time":3,"process":"nemesis","type":"info","f":"fault","phase":"start",'
    b'"id":"f-1","fault":"pause","targets":["broker-1"]}\n'
)
DOUBTFUL = [
    b'{"index":3,"time":4,"process":1,"type":"ok","f":"se',  # torn last line
    b'{"index":"three","time":4,"process":1,"type":"ok","f":"send"}\n',  # wrong type
    b"not json at all\n",
]
DOUBTFUL_IDS = ["torn", "mistyped", "garbage"]


def _partitioned(copy: Path) -> bool:
    """kchaos export's shape: ``f=...`` folders."""
    return copy.is_dir() and any(p.is_dir() and p.name.startswith("f=") for p in copy.iterdir())


def _rows(path: Path) -> list[dict[str, Any]]:
    rel = duckdb.sql(f"SELECT * FROM read_parquet('{path}')")
    cols = [d[0] for d in rel.description]
    return [dict(zip(cols, r, strict=True)) for r in rel.fetchall()]


def _left(run: RunDir) -> list[str]:
    """What the run directory holds besides history.jsonl."""
    return sorted(p.name for p in run.path.iterdir() if p != run.history)


def test_columns_are_the_analysis_schema() -> None:
    assert list(pq.COLUMNS) == column_names()


def test_a_good_history_becomes_parquet_with_every_column_typed(tmp_path: Path) -> None:
    src, out = tmp_path / "history.jsonl", tmp_path / "h.parquet"
    src.write_bytes(GOOD)
    assert pq.to_parquet(src, out)
    rows = _rows(out)
    assert list(rows[0]) == column_names()
    first, drain, fault = rows
    assert first["process"] == "1" and first["value"] == "1-0" and first["records"] is None
    assert drain["records"] == [{"topic": "t", "partition": 0, "offset": 7, "value": "1-0"}]
    assert fault["targets"] == ["broker-1"] and fault["phase"] == "start"


@pytest.mark.parametrize("tail", DOUBTFUL, ids=DOUBTFUL_IDS)
def test_anything_doubtful_is_not_converted(tmp_path: Path, tail: bytes) -> None:
    src, out = tmp_path / "history.jsonl", tmp_path / "h.parquet"
    src.write_bytes(GOOD + tail)
    assert not pq.to_parquet(src, out)
    assert not out.exists()


def _as_parquet(line: dict[str, Any]) -> dict[str, Any]:
    """A JSON line as the copy holds it: every schema column, ``process`` as text, the
    nested lists of objects with their declared fields only (absent ones null)."""
    out: dict[str, Any] = {}
    for name in column_names():
        value = line.get(name)
        if name == "process" and value is not None:
            value = str(value)
        out[name] = value
    return out


@pytest.mark.parametrize("transactional", [False, True], ids=["plain", "txn"])
def test_the_run_end_copy_reads_back_as_the_json_lines(tmp_path: Path, transactional: bool) -> None:
    """Every line of a generated history (faults, drains, transactions) is one row of the
    copy, in the same order, with the same values."""
    run = RunDir(tmp_path / "run")
    generate_run(run.path, events=400, seed=3, transactional=transactional)
    assert run.write_history_parquet()
    copy = run.history_parquet
    assert copy.is_dir()
    assert [p.name for p in copy.iterdir()] == [names.HISTORY_PARQUET_PART]
    assert pq.part_files(copy) == [copy / names.HISTORY_PARQUET_PART]
    assert not _partitioned(copy)
    lines = [orjson.loads(raw) for raw in run.history.read_bytes().splitlines() if raw]
    rows = _rows(copy / names.HISTORY_PARQUET_PART)
    assert len(rows) == len(lines) > 100
    for line, row in zip(lines, rows, strict=True):
        expected = _as_parquet(line)
        for nested in ("records", "sends", "consumed"):
            if expected[nested] is not None:  # absent struct fields come back as null
                expected[nested] = [{k: r.get(k) for k in row[nested][0]} for r in line[nested]]
        if expected["offsets"] is not None:
            expected["offsets"] = {
                "group": line["offsets"].get("group"),
                "positions": [[str(x) for x in p] for p in line["offsets"]["positions"]],
            }
        assert row == expected, line
    assert _left(run) == [names.HISTORY_PARQUET, names.RUN_JSON]


@pytest.mark.parametrize("tail", DOUBTFUL, ids=DOUBTFUL_IDS)
def test_a_history_duckdb_cannot_read_gets_no_copy(tmp_path: Path, tail: bytes) -> None:
    run = RunDir(tmp_path / "run").create()
    run.history.write_bytes(GOOD + tail)
    assert not run.write_history_parquet()
    assert _left(run) == []  # no copy, no temporary directory


def test_an_empty_history_gets_no_copy(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run").create()
    run.history.write_bytes(b"")
    assert not run.write_history_parquet()
    assert _left(run) == []


def test_a_failure_midway_leaves_no_partial_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy is built under a temporary name: a failure after part of it is written
    leaves neither a copy nor the temporary directory."""
    run = RunDir(tmp_path / "run").create()
    run.history.write_bytes(GOOD)
    seen: list[Path] = []

    def half_then_fail(history: Path, target: Path, threads: int = 2) -> bool:
        target.write_bytes(b"PAR1 half a file")
        seen.append(target)
        raise OSError("disk full")

    monkeypatch.setattr(pq, "to_parquet", half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        run.write_history_parquet()
    assert seen and seen[0].parent != run.history_parquet  # written under another name
    assert _left(run) == []


def test_a_new_copy_replaces_an_old_one_whole(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run").create()
    run.history.write_bytes(GOOD)
    old = run.history_parquet / "f=send"
    old.mkdir(parents=True)
    (old / "part-00000.parquet").write_bytes(b"an older export")
    assert _partitioned(run.history_parquet)
    assert run.write_history_parquet()
    assert [p.name for p in run.history_parquet.iterdir()] == [names.HISTORY_PARQUET_PART]
    assert len(_rows(run.history_parquet / names.HISTORY_PARQUET_PART)) == 3
    # A history that cannot be converted leaves the copy there as it was.
    run.history.write_bytes(GOOD + DOUBTFUL[0])
    assert not run.write_history_parquet()
    assert len(_rows(run.history_parquet / names.HISTORY_PARQUET_PART)) == 3
    assert _left(run) == [names.HISTORY_PARQUET]
