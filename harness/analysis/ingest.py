"""JSON lines to Parquet with DuckDB, before Spark reads them (one machine only).

Parsing is the biggest cost of the job on one machine: Spark's JSON reader took 3 to 5 s
per million events on two cores, several times DuckDB's whole loss query. When the master
is local, each ``history.jsonl`` is therefore read once by DuckDB's reader (explicit
columns, the same types as :func:`kchaos.harness.analysis.schema.history_schema`) into a
temporary Parquet file that Spark then reads. On a cluster the executors parse the JSON
themselves, in parallel, and this step is skipped.

DuckDB reads strictly: a line it cannot parse, or a field of the wrong type, and the run
falls back to Spark's own reader, whose permissive mode names the file and line (as does
a history whose last line is torn). Rows missing required fields are caught afterwards by
the same checks as every other input.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

_RECORD = 'STRUCT(topic VARCHAR, "partition" INTEGER, "offset" BIGINT, value VARCHAR)[]'
_TXN_SEND = (
    'STRUCT(topic VARCHAR, "partition" INTEGER, "offset" BIGINT, value VARCHAR, copy_of VARCHAR)[]'
)
# Every column of the analysis schema, with DuckDB's names for its types; "process" is an
# int or a string in the file, and VARCHAR keeps both, as the Spark schema does.
COLUMNS: dict[str, str] = {
    "index": "BIGINT",
    "time": "BIGINT",
    "process": "VARCHAR",
    "type": "VARCHAR",
    "f": "VARCHAR",
    "topic": "VARCHAR",
    "partition": "INTEGER",
    "offset": "BIGINT",
    "value": "VARCHAR",
    "error": "VARCHAR",
    "records": _RECORD,
    "log_start_offset": "BIGINT",
    "high_watermark": "BIGINT",
    "phase": "VARCHAR",
    "id": "VARCHAR",
    "fault": "VARCHAR",
    "targets": "VARCHAR[]",
    "txn": "VARCHAR",
    "transactional_id": "VARCHAR",
    "sends": _TXN_SEND,
    "consumed": _RECORD,
    "offsets": 'STRUCT("group" VARCHAR, positions VARCHAR[][])',
    "isolation": "VARCHAR",
    "last_stable_offset": "BIGINT",
}


def _quoted(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def json_columns() -> str:
    """The ``columns`` argument of DuckDB's read_json for the analysis schema."""
    return "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in COLUMNS.items()) + "}"


def to_parquet(history: Path, target: Path, threads: int = 2) -> bool:
    """Write ``history`` (JSON lines) as one Parquet file at ``target``; False (and no
    file) when DuckDB cannot read every line strictly or a history line is torn."""
    from kchaos.harness.analysis.lines import ends_with_newline

    try:
        import duckdb
    except ImportError:  # not installed: Spark's own reader works, only slower
        return False

    if not ends_with_newline(history):  # torn last line: Spark's reader reports it
        return False
    con = duckdb.connect()
    try:
        con.execute(f"SET threads = {max(1, threads)}")
        con.execute("SET preserve_insertion_order = true")
        con.execute(
            f"COPY (SELECT * FROM read_json({_quoted(history)}, format = 'newline_delimited',"
            f" columns = {json_columns()}, maximum_object_size = 268435456))"
            f" TO {_quoted(target)} (FORMAT parquet, COMPRESSION zstd)"
        )
        return True
    except duckdb.Error as exc:
        log.info("DuckDB could not read %s strictly (%s); Spark's reader takes it", history, exc)
        target.unlink(missing_ok=True)
        return False
    finally:
        con.close()
