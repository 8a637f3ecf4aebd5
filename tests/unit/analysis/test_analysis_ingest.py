"""DuckDB ingestion: JSON lines to Parquet, strictly, or not at all (Spark's reader then)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from kchaos.harness.analysis.ingest import COLUMNS, to_parquet
from kchaos.harness.analysis.schema import column_names

GOOD = (
    b'{"index":0,"time":1,"process":1,"type":"invoke","f":"send","topic":"t","value":"1-0"}\n'
    b'{"index":1,"time":2,"process":"drain","type":"ok","f":"drain","records":'
    b'[{"topic":"t","partition":0,"offset":7,"value":"1-0"}],"unknown":{"x":1}}\n'
    b'{"index":2,"time":3,"process":"nemesis","type":"info","f":"fault","phase":"start",'
    b'"id":"f-1","fault":"pause","targets":["broker-1"]}\n'
)


def test_columns_are_the_analysis_schema() -> None:
    assert list(COLUMNS) == column_names()


def test_a_good_history_becomes_parquet_with_every_column_typed(tmp_path: Path) -> None:
    src, out = tmp_path / "history.jsonl", tmp_path / "h.parquet"
    src.write_bytes(GOOD)
    assert to_parquet(src, out)
    rows = duckdb.sql(f"SELECT * FROM read_parquet('{out}') ORDER BY index").fetchall()
    cols = [d[0] for d in duckdb.sql(f"SELECT * FROM read_parquet('{out}')").description]
    assert cols == column_names()
    first, drain, fault = (dict(zip(cols, r, strict=True)) for r in rows)
    assert first["process"] == "1" and first["value"] == "1-0" and first["records"] is None
    assert drain["records"] == [{"topic": "t", "partition": 0, "offset": 7, "value": "1-0"}]
    assert fault["targets"] == ["broker-1"] and fault["phase"] == "start"


@pytest.mark.parametrize(
    "tail",
    [
        b'{"index":3,"time":4,"process":1,"type":"ok","f":"se',  # torn last line
        b'{"index":"three","time":4,"process":1,"type":"ok","f":"send"}\n',  # wrong type
        b"not json at all\n",
    ],
    ids=["torn", "mistyped", "garbage"],
)
def test_anything_doubtful_is_left_to_spark(tmp_path: Path, tail: bytes) -> None:
    src, out = tmp_path / "history.jsonl", tmp_path / "h.parquet"
    src.write_bytes(GOOD + tail)
    assert not to_parquet(src, out)
    assert not out.exists()
