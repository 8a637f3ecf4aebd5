"""``history.parquet``: history.jsonl as Parquet, converted by DuckDB (the one conversion).

The copy holds the columns of the analysis schema only, with the same types
(:func:`kchaos.harness.analysis.schema.history_schema`; a unit test of the analysis keeps
:data:`COLUMNS` equal to it), in the history's line order. It is written by
:meth:`kchaos.harness.rundir.rundir.RunDir.write_history_parquet` at the end of a run,
and into a scratch directory by ``kchaos analyze`` for a run that lacks it.

On disk it is a directory, as ``kchaos export``'s copy partitioned by ``f`` is, holding
one file (:data:`~kchaos.harness.rundir.names.HISTORY_PARQUET_PART`); the export's files
are in ``f=...`` folders instead, and lack the ``f`` column their folder names.

DuckDB reads strictly. A line it cannot read (not JSON, a field of the wrong type), a
torn last line, an empty history, or DuckDB missing: no copy is written, and the
analysis reads the JSON lines itself (its reader names the bad line). Rows missing
required fields are not judged here: the analysis checks them on every input.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from kchaos.harness.rundir.files import TMP_SUFFIX
from kchaos.harness.rundir.history import ends_with_newline
from kchaos.harness.rundir.names import HISTORY_PARQUET_PART

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
    "action": "VARCHAR",
}


def _quoted(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


# ``offsets`` has two shapes in a history: a transaction's object (``group``, ``positions``:
# the analysis reads it, COLUMNS' type) and a consumer's ``commit`` line's list of
# [topic, partition, offset] (not read). It is read as JSON and made the object on txn
# lines only, strictly (a txn line whose offsets do not fit fails the copy, as any
# mistyped field does); the copy has no offsets on other lines.
_TXN_OFFSETS = "offsets"


def json_columns() -> str:
    """The ``columns`` argument of DuckDB's read_json for the analysis schema."""
    kinds = {**COLUMNS, _TXN_OFFSETS: "JSON"}
    return "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in kinds.items()) + "}"


def _select() -> str:
    """The columns of the copy, from read_json's (:func:`json_columns`)."""
    offsets = f"CAST({_TXN_OFFSETS} AS {COLUMNS[_TXN_OFFSETS]})"
    return f"* REPLACE (CASE WHEN f = 'txn' THEN {offsets} END AS {_TXN_OFFSETS})"


def to_parquet(history: Path, target: Path, threads: int = 2) -> bool:
    """Write ``history`` (JSON lines) as one Parquet file at ``target``; False (and no
    file) when DuckDB cannot read every line strictly, the last line is torn, or DuckDB
    is not installed. The file is written in place: :func:`write_copy` makes it atomic."""
    try:
        import duckdb
    except ImportError:
        log.info("DuckDB is not installed: no Parquet copy of %s", history)
        return False

    if not ends_with_newline(history):
        log.info("%s: the last line is torn; no Parquet copy", history)
        return False
    con = duckdb.connect()
    try:
        con.execute(f"SET threads = {max(1, threads)}")
        con.execute("SET preserve_insertion_order = true")
        con.execute(
            f"COPY (SELECT {_select()} FROM read_json({_quoted(history)},"
            " format = 'newline_delimited',"
            f" columns = {json_columns()}, maximum_object_size = 268435456))"
            f" TO {_quoted(target)} (FORMAT parquet, COMPRESSION zstd)"
        )
        return True
    except duckdb.Error as exc:
        log.info("DuckDB could not read %s strictly (%s); no Parquet copy", history, exc)
        target.unlink(missing_ok=True)
        return False
    finally:
        con.close()


def part_files(copy: Path) -> list[Path]:
    """The Parquet files of a copy written here (a directory of one part)."""
    return sorted(p for p in copy.glob("*.parquet") if p.is_file())


def write_copy(history: Path, target: Path, threads: int = 2) -> bool:
    """``target`` (a directory holding one Parquet file) from ``history``, atomically:
    built as ``target.tmp`` beside it and renamed over it once complete, so a reader
    sees the whole copy or none. False, with nothing written or left behind, when the
    history is empty or cannot be converted (:func:`to_parquet`); a copy already at
    ``target`` is then left as it was (the analysis takes it only when it is at least
    as new as the history)."""
    if history.stat().st_size == 0:
        log.info("%s is empty; no Parquet copy", history)
        return False
    tmp = target.with_name(target.name + TMP_SUFFIX)
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        if not to_parquet(history, tmp / HISTORY_PARQUET_PART, threads):
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        os.replace(tmp, target)
        return True
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
