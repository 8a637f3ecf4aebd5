"""Read the histories of many runs into ONE cached DataFrame, checked against format v1.

Every row carries ``rk``, the run's small integer key. JSON lines are parsed once, with
the explicit schema; the result is cached, so every later query reads memory, not JSON.
A torn last line is dropped and reported; any other bad line ends the job with a
HistoryError naming the file, the line and the field.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from kchaos.harness.analysis.lines import (
    count_lines,
    first_bad_line,
    last_line,
    line_problem,
)
from kchaos.harness.analysis.runs import RunInput
from kchaos.harness.analysis.schema import (
    ACTIONS,
    CORRUPT,
    ISOLATIONS,
    REQUIRED,
    TYPES,
    column_names,
    history_schema,
)
from kchaos.harness.analysis.session import spark_errors
from kchaos.harness.errors import AnalysisError, HistoryError
from kchaos.harness.rundir.history import (
    F_FAULT,
    F_SEND,
    F_TXN,
    F_TXN_END,
    INVOKE,
    ends_with_newline,
    is_torn,
)
from kchaos.harness.rundir.parquet import part_files, write_copy
from kchaos.harness.rundir.rundir import RunDir

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_RUN_DIR = r"^(.*)/history\.(?:jsonl|parquet)(?:/.*)?$"
_EXPORT_PART = r"/history\.parquet/f=([^/]*)/[^/]*$"  # a file of kchaos export's copy
_NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # Spark's folder name for a null value


@dataclass(frozen=True)
class Loaded:
    """The events of every run (cached) and what loading found per run key."""

    events: DataFrame
    scratch: Path  # temporary files the events may be read from again: remove when done
    torn: dict[int, int] = field(default_factory=dict)  # run key -> line number dropped
    lines: dict[int, int] = field(default_factory=dict)  # run key -> events kept
    # run key -> (f, type, lines, latest time, records in them) of its valid lines
    counts: dict[int, list[tuple[str, str, int, int, int]]] = field(default_factory=dict)
    send_topics: list[str] = field(default_factory=list)  # on send lines of any run, sorted
    # run key -> its fault lines, (time, index, phase, id, fault), found by the validation
    # pass (windows.faults_from_rows makes them FaultLines)
    faults: dict[int, list[tuple[Any, ...]]] = field(default_factory=dict)
    # the frame held in Spark's cache (the events parsed by Spark's JSON reader), if any:
    # ``events`` is derived from it, so unpersisting ``events`` would not free it
    cached: DataFrame | None = None

    def release(self) -> None:
        """Drop the cached events and the temporary files; a session that goes on (tests,
        a caller's own session) would otherwise keep them until it stops."""
        if self.cached is not None:
            self.cached.unpersist()
        shutil.rmtree(self.scratch, ignore_errors=True)


def txn_line_bad() -> Column:
    """True on a line whose format 1.2 fields are wrong in a way the schema cannot catch
    (the same rules as :func:`kchaos.harness.analysis.lines.event_problem`, which then
    names the line): an unknown isolation, a txn invoke without sends, a send entry
    without its value (or topic, on an invoke), a malformed committed position, a
    txn-end line that is no invoke, names no txn or no known action."""
    from pyspark.sql import functions as F

    invoke = (F.col("f") == F_TXN) & (F.col("type") == INVOKE)
    iso = F.col("isolation").isNotNull() & ~F.col("isolation").isin(*sorted(ISOLATIONS))
    end = (F.col("f") == F_TXN_END) & (
        (F.col("type") != INVOKE)
        | F.col("txn").isNull()
        | ~F.coalesce(F.col("action").isin(*ACTIONS), F.lit(False))
    )
    empty = invoke & (F.col("sends").isNull() | (F.size("sends") == 0))
    entry = F.exists("sends", lambda s: s["value"].isNull() | (invoke & s["topic"].isNull()))
    position = F.exists(
        "offsets.positions",
        lambda p: (
            (F.size(p) != 3)
            | p[0].isNull()
            | p[1].cast("int").isNull()
            | p[2].cast("long").isNull()
        ),
    )
    lines = F.coalesce(entry, F.lit(False)) | F.coalesce(position, F.lit(False))
    return iso | empty | lines | F.coalesce(end, F.lit(False))


def _local_path(uri: str) -> str:
    """A plain path from the URI Spark names a file by (``file:/a%20b/history.jsonl``)."""
    return unquote(re.sub(r"^file:/+", "/", uri))


def _spellings(uri: str) -> set[str]:
    """``uri`` as Spark may spell it: ``inputFiles()`` gives ``file:///a`` where the rows'
    ``_metadata.file_path`` gives ``file:/a`` (Spark 4.3); a file's rows are matched by
    either."""
    return {uri, re.sub(r"^file:/+", "file:/", uri), re.sub(r"^file:/+", "file:///", uri)}


def _with_run_key(spark: SparkSession, df: DataFrame, dirs: list[tuple[Path, int]]) -> DataFrame:
    """``df`` with ``rk``, the key of the run directory each row's file lies in (its
    history.jsonl, or a file under its history.parquet), and, for the files of a
    ``kchaos export`` (which hold no ``f``), ``f`` from their folder's name (``f=VALUE``,
    escaped as Spark escapes partition values; its name for null).

    Both are worked out once per FILE, here, from the files Spark will read. The rows
    then only look their file up (a broadcast join on ``_metadata.file_path``), or, when
    every file is of one run and none is an export's, get a constant. Deriving them per
    row from the path (regular expressions and URL decoding on every row of every query,
    as the Parquet events are not cached) cost 10 to 16 s per scan of the 10M-event bench
    history, where the scan itself takes 2 to 4 s (2026-11-26). A row whose file matched
    no run keeps a null ``rk``, which the validation pass refuses."""
    from pyspark.sql import functions as F

    by_dir = {str(d): key for d, key in dirs}
    rows: list[tuple[str, int | None, str | None]] = []
    for uri in df.inputFiles():
        local = _local_path(uri)
        run_dir = re.match(_RUN_DIR, local)
        key = by_dir.get(run_dir.group(1)) if run_dir else None
        part = re.search(_EXPORT_PART, local)
        f = unquote(part.group(1)) if part else None
        rows += [(s, key, None if f in (None, "", _NULL_PARTITION) else f) for s in _spellings(uri)]
    exported = any(f is not None for _, _, f in rows)
    keys_found = {key for _, key, _ in rows}
    if len(keys_found) == 1 and None not in keys_found and not exported:
        return df.withColumn("rk", F.lit(keys_found.pop()))
    files = spark.createDataFrame(rows, "_file string, rk int, _f string")
    out = df.withColumn("_file", F.col("_metadata.file_path"))
    out = out.join(F.broadcast(files), "_file", "left")
    if exported:
        out = out.withColumn("f", F.coalesce(F.col("f"), F.col("_f")))
    return out.drop("_file", "_f")


def _ingest(spark: SparkSession, runs: list[RunInput], scratch: Path) -> dict[int, RunDir]:
    """JSON lines to Parquet with DuckDB before Spark reads them, when the master is local:
    the run directory's own conversion (:mod:`kchaos.harness.rundir.parquet`), into
    ``scratch/run-KEY/history.parquet``; returns the scratch run directory per run key.

    Parsing is the biggest cost of the job on one machine: Spark's JSON reader took 3 to
    5 s per million events on two cores, several times DuckDB's whole loss query. A run
    that ended normally has this copy already (the runner writes it); this is for the
    others. DuckDB reads strictly: a torn last line, a line that is not JSON or a field of
    the wrong type, and the run goes to Spark's permissive reader, which names the file
    and line. On a cluster the executors parse the JSON themselves, in parallel."""
    if not (spark.sparkContext.master or "").startswith("local"):
        return {}
    threads = max(1, spark.sparkContext.defaultParallelism)
    made: dict[int, RunDir] = {}
    for run in runs:
        if run.fmt == "jsonl":
            copy = RunDir(scratch / f"run-{run.key}")
            copy.create()
            if write_copy(run.history, copy.history_parquet, threads):
                made[run.key] = copy
    return made


def _read(spark: SparkSession, runs: list[RunInput], scratch: Path) -> tuple[DataFrame, bool]:
    """Every run's events, and whether any were parsed by Spark's JSON reader.

    Two tables at most, whatever the number of runs: every Parquet file (the run-end
    copies, DuckDB's scratch copies, the files of every ``kchaos export``) as ONE table,
    and the JSON histories left as one more. Each row's run key comes from its file's
    path, and so does an export's ``f`` (its files hold the other columns), both worked
    out once per file (:func:`_with_run_key`). A table per run, unioned, grows every
    later query's plan with the number of runs (23 small runs exhausted a 2 GB driver in
    the optimizer); several exports cannot be one table by their folders either, as
    Spark's partition discovery wants one base folder."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    cols = ["rk", *column_names(), CORRUPT]
    parts: list[DataFrame] = []
    copies = _ingest(spark, runs, scratch)
    jsonl = [r for r in runs if r.fmt == "jsonl" and r.key not in copies]
    folders = [(copies[key], key) for key in sorted(copies)]
    folders += [(r.rundir, r.key) for r in runs if r.fmt == "parquet"]
    keyed: list[tuple[Path, int]] = [(rd.path, key) for rd, key in folders]
    files: list[str] = []
    given: dict[Path, list[str]] = {}  # the runs' own copies (not DuckDB's): their files
    for folder, key in folders:
        copy = folder.history_parquet
        found = [str(f) for f in part_files(copy) + sorted(copy.glob("f=*/*.parquet"))]
        if not found:
            raise HistoryError("no Parquet file in the copy", file=str(copy))
        files.extend(found)
        if key not in copies:
            given[copy] = found
    check_parquet_schemas(spark, given)
    if files:
        df = spark.read.schema(history_schema(with_corrupt=False)).parquet(*files)
        df = _with_run_key(spark, df, keyed).withColumn(CORRUPT, F.lit(None).cast(StringType()))
        parts.append(df.select(*cols))
    if jsonl:
        df = (
            spark.read.schema(history_schema())
            .option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", CORRUPT)
            .json([str(r.history) for r in jsonl])
        )
        df = _with_run_key(spark, df, [(r.path, r.key) for r in jsonl])
        parts.append(_commit_lines_read(df).select(*cols))
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out, bool(jsonl)


def _commit_lines_read(df: DataFrame) -> DataFrame:
    """``df`` (Spark's JSON reader, ``offsets`` as a txn line's object) with the lines it
    could not parse only because their ``offsets`` is another shape, a consumer commit's
    list, read again with ``offsets`` as text: such a line keeps its fields but not its
    offsets (which the analysis does not read). Any other line the reader refused, a txn
    line's included, stays a corrupt record."""
    from pyspark.sql import functions as F

    again = F.from_json(
        F.col(CORRUPT),
        history_schema(offsets_text=True),
        {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT},
    )
    df = df.withColumn("_again", again)
    read = F.coalesce(
        F.col(CORRUPT).isNotNull()
        & F.col(f"_again.{CORRUPT}").isNull()
        & (F.col("_again.f") != F_TXN),
        F.lit(False),
    )
    columns = [
        F.when(~read, F.col(name)).alias(name)
        if name in ("offsets", CORRUPT)
        else F.when(read, F.col(f"_again.{name}")).otherwise(F.col(name)).alias(name)
        for name in [*column_names(), CORRUPT]
    ]
    return df.select("rk", *columns)


_WIDENS = {"bigint": {"int", "smallint", "tinyint"}, "int": {"smallint", "tinyint"}}


def check_parquet_schemas(spark: SparkSession, copies: dict[Path, list[str]]) -> None:
    """Every Parquet history in ``copies`` (copy -> its files) has the analysis schema's
    types (see :func:`check_parquet_schema`), checked with ONE read of all the files.

    Spark merges the footers of every file in one job. Only when that merge fails (two
    files disagree on a column's type) or the merged schema has a wrong type are the
    copies read one by one, to name the copy. Reading each copy's schema on its own is a
    file listing and a footer read per run, done before the one read of the rows; with
    200 runs the load phase took 20 s against 8 s for one run of the same size
    (2026-12-07), and these per-run reads are the part of it that grows with the number
    of runs (not timed on their own)."""
    if footers_fit(copies):
        return
    if len(copies) < 2:
        for copy in copies:
            check_parquet_schema(spark, copy)
        return
    files = [f for found in copies.values() for f in found]
    # Files of many copies have no common base folder to find ``f=`` partitions under:
    # read them as plain files (an export's ``f`` is only in its folder's name).
    reader = spark.read.option("mergeSchema", "true").option("recursiveFileLookup", "true")
    try:
        with spark_errors("reading the histories"):
            merged = reader.parquet(*files).schema
    except AnalysisError:
        merged = None
    if merged is None or _schema_problem(merged) is not None:
        for copy in copies:
            check_parquet_schema(spark, copy)


def footers_fit(copies: dict[Path, list[str]]) -> bool:
    """True when the footer of every file in ``copies``, read on the driver with pyarrow,
    gives each column the analysis reads its type (or a narrower int). Anything else (a
    wrong type, a type Spark has no name for, a file pyarrow cannot read) is False, and
    the caller asks Spark, which names the copy and the column as before.

    A footer read here costs about a millisecond; Spark's merge of the footers is a job
    of its own, and with more than 32 files a listing job before it (3.5 to 6 s for 200
    copies, measured 2026-12-07 on a shared machine)."""
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import from_arrow_type

    read = set(column_names())
    for found in copies.values():
        for file in found:
            try:
                schema = pq.read_schema(file)
                types = {
                    f.name: from_arrow_type(f.type).simpleString() for f in schema if f.name in read
                }
            except Exception:  # noqa: BLE001 - Spark's own read names what is wrong
                return False
            if _type_problem(types) is not None:
                return False
    return True


def _schema_problem(schema: Any) -> tuple[str, str, str] | None:
    """(column, type found, type read) of the first column the analysis reads with
    another type than ``schema`` gives it, or None."""
    return _type_problem({f.name: f.dataType.simpleString() for f in schema})


def _type_problem(found: dict[str, str]) -> tuple[str, str, str] | None:
    """:func:`_schema_problem` on column name -> Spark type name."""
    for want in history_schema(with_corrupt=False).fields:
        got, expected = found.get(want.name), want.dataType.simpleString()
        if got is not None and got != expected and got not in _WIDENS.get(expected, ()):
            return want.name, got, expected
    return None


def check_parquet_schema(spark: SparkSession, path: Path) -> None:
    """A Parquet history whose columns do not have the analysis schema's types is bad
    input: say which column, rather than let Spark fail while reading it."""
    problem = _schema_problem(spark.read.parquet(str(path)).schema)
    if problem is not None:
        name, got, expected = problem
        raise HistoryError(
            f"column has type {got}, the analysis reads {expected}", file=str(path), field=name
        )


def precheck(runs: list[RunInput]) -> None:
    for run in runs:
        if run.fmt == "jsonl" and run.history.stat().st_size == 0:
            raise HistoryError("empty history: no events", file=str(run.history))


def load_events(spark: SparkSession, runs: list[RunInput]) -> Loaded:
    """Parse, cache and validate the histories of ``runs``; the caller removes
    ``Loaded.scratch`` once it is done with the events."""
    precheck(runs)
    scratch = Path(tempfile.mkdtemp(prefix="kchaos-analyze-"))
    try:
        return _load(spark, runs, scratch)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _load(spark: SparkSession, runs: list[RunInput], scratch: Path) -> Loaded:
    from pyspark import StorageLevel

    with spark_errors("reading the histories"):
        raw, from_json = _read(spark, runs, scratch)
        if from_json:  # parsed by Spark: keep it; Parquet is cheaper to read again
            raw = raw.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return _validated(raw, runs, scratch, cached=raw if from_json else None)
    except BaseException:
        if from_json:  # bad input: nobody will read these events
            raw.unpersist()
        raise


def _validated(
    raw: DataFrame, runs: list[RunInput], scratch: Path, cached: DataFrame | None
) -> Loaded:
    """Check every run's lines (bad input names its file and line) and count them."""
    from pyspark.sql import functions as F

    with spark_errors("reading the histories"):
        corrupt = F.col(CORRUPT).isNotNull()
        missing = F.lit(False)
        for name in REQUIRED:
            missing = missing | F.col(name).isNull()
        bad = (~corrupt) & (missing | ~F.col("type").isin(*TYPES) | txn_line_bad())
        # One pass: validity per run, the per-(f, type) counts the stats need and the
        # topics of send lines. Numbers only in the buffers: Spark can hash, not sort.
        # ... and the fault lines, which the windows need: one group per fault line
        # (a few thousand), the key null on every other line; a grouping key may be a
        # struct without leaving the hash aggregation. One scan fewer than reading
        # them on their own (0.5 to 1.5 s of the 10M-event bench).
        fault = F.when(
            (F.col("f") == F_FAULT) & ~corrupt,
            F.struct("time", "index", "phase", "id", "fault"),
        )
        rows = (
            raw.groupBy("rk", "f", "type", "topic", fault.alias("_fault"))
            .agg(
                F.count(F.lit(1)).alias("n"),
                F.sum(corrupt.cast("int")).alias("corrupt"),
                F.sum(bad.cast("int")).alias("bad"),
                F.max("time").alias("end"),
                F.sum(F.coalesce(F.size("records"), F.lit(0))).alias("records"),
            )
            .collect()
        )
    if any(row["rk"] is None for row in rows):
        raise AnalysisError(
            "rows of a history file were matched to no run: Spark names the file"
            " otherwise than load._spellings expects"
        )
    by_key: dict[int, dict[str, Any]] = {}
    counts: dict[int, list[tuple[str, str, int, int, int]]] = {}
    topics: set[str] = set()
    faults: dict[int, list[tuple[int, int, str | None, str | None, str | None]]] = {}
    for row in rows:
        if row["_fault"] is not None and row["rk"] is not None:
            line = tuple(row["_fault"])
            faults.setdefault(row["rk"], []).extend([line] * (row["n"] - int(row["corrupt"] or 0)))
        agg = by_key.setdefault(row["rk"], {"n": 0, "corrupt": 0, "bad": 0})
        agg["n"] += row["n"]
        agg["corrupt"] += int(row["corrupt"] or 0)
        agg["bad"] += int(row["bad"] or 0)
        valid = row["n"] - int(row["corrupt"] or 0)
        if row["f"] == F_SEND and row["topic"] is not None:
            topics.add(row["topic"])
        if row["f"] is not None and row["type"] is not None and valid > 0:
            counts.setdefault(row["rk"], []).append(
                (row["f"], row["type"], valid, int(row["end"] or 0), int(row["records"] or 0))
            )
    torn: dict[int, int] = {}
    kept: dict[int, int] = {}
    for run in runs:
        got = by_key.get(run.key)
        if got is None:
            raise HistoryError("empty history: no events", file=str(run.history))
        n_corrupt, n_bad = got["corrupt"], got["bad"]
        if n_corrupt or n_bad:
            if run.fmt != "jsonl":
                # A Parquet copy has no line numbers: name the line from the JSON lines it
                # was made from when they are still there.
                jsonl = run.rundir.history
                if jsonl.is_file():
                    raise first_bad_line(jsonl, skip_last=not ends_with_newline(jsonl))
                raise HistoryError("rows missing required fields", file=str(run.history))
            # Torn, as the checker has it (rundir.history.is_torn): the last line lacks its
            # newline and begins as an event does, and it does not parse.
            tail = last_line(run.history)
            tail_bad = (
                not ends_with_newline(run.history)
                and is_torn(tail.encode())
                and line_problem(tail) is not None
            )
            only_tail = (
                n_bad == 0
                and n_corrupt == 1
                and tail_bad
                and _corrupt_text(raw, run.key).strip() == tail.strip()
            )
            if not only_tail:
                raise first_bad_line(run.history, skip_last=tail_bad)
            torn[run.key] = count_lines(run.history)
        kept[run.key] = got["n"] - n_corrupt
        if kept[run.key] == 0:
            raise HistoryError("empty history: no complete event", file=str(run.history))
    events = raw.filter(F.col(CORRUPT).isNull()).drop(CORRUPT)
    return Loaded(
        events=events,
        scratch=scratch,
        torn=torn,
        lines=kept,
        counts=counts,
        send_topics=sorted(topics),
        cached=cached,
        faults=faults,
    )


def _corrupt_text(raw: DataFrame, key: int) -> str:
    """The text of one line of run ``key`` Spark's reader could not parse ("" if none)."""
    from pyspark.sql import functions as F

    with spark_errors("reading the histories"):
        rows = raw.filter((F.col("rk") == key) & F.col(CORRUPT).isNotNull()).limit(1).collect()
    return str(rows[0][CORRUPT]) if rows else ""
