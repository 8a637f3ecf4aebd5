"""The DuckDB baseline of ``kchaos bench analyze``: every data kind of format v1 in SQL.

The Spark job's rules (its per-partition pass, :mod:`kchaos.harness.analysis.partitions`,
and the second stage of :mod:`kchaos.harness.analysis.anomalies`) restated for DuckDB as
plain SQL over whole tables, with the same counting rule: one counted anomaly per row
the job reports, so each count here must equal the job's
``summary["anomalies"][kind]["count"]`` on the same history.

- ``sends``: one row per value sent; its completion is its first non-invoke send line
  by index (outcome ok/fail/info, topic, partition, offset there; the topic of an
  invoke when the completion has none);
- ``reads``: one row per record a poll or drain line (type ok) returned;
- ``drained``: one row per partition with a drain-end line, from its last such line, with
  ``readable``: the last stable offset where a read_committed drain stopped below the
  high watermark, the high watermark otherwise;
- ``drain_values``: the distinct values the drain returned per partition.

Several runs are read as one table, every key carrying the run (``rk``, the run
directory), as the job does with its run key. The transactional kinds of
format 1.2 (and the job's extensions of lost-write, uncommitted-read and
inconsistent-offset to transactions) are not computed: the bench's generated history is
plain, and on it the job's transactional queries find nothing.

Input: histories' JSON lines (read with the analysis columns,
:func:`kchaos.harness.rundir.parquet.json_columns`) or their Parquet copies (a file, or
the ``history.parquet`` directory a run writes), one or many.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kchaos.harness.rundir.anomalies import V1_DATA_KINDS
from kchaos.harness.rundir.parquet import json_columns, part_files

#: The kinds the baseline counts: format v1's data kinds (the vocabulary's owner names them).
KINDS = V1_DATA_KINDS

# The derived tables, built once as temporary tables over the view ``h`` of the histories;
# ``rk`` names the run each row comes from (its run directory).
TABLES = {
    "sends": """
SELECT rk, value, done.type AS outcome, done."index" AS i_done, done.time AS t_done,
       coalesce(done.topic, inv_topic) AS topic, done."partition" AS "partition",
       done."offset" AS "offset"
FROM (
  SELECT rk, value,
         arg_min({'type': CASE WHEN type IN ('ok', 'fail', 'info') THEN type END,
                  'index': "index", 'time': time, 'topic': topic,
                  'partition': "partition", 'offset': "offset"}, "index")
           FILTER (WHERE type <> 'invoke') AS done,
         min(topic) FILTER (WHERE type = 'invoke') AS inv_topic
  FROM h WHERE f = 'send' GROUP BY rk, value
)
""",
    "reads": """
SELECT rk, src, "index", time, r.topic AS topic, r."partition" AS "partition",
       r."offset" AS "offset", r.value AS value
FROM (SELECT rk, f AS src, "index", time, unnest(records) AS r
      FROM h WHERE f IN ('poll', 'drain') AND type = 'ok')
""",
    "drained": """
SELECT rk, topic, "partition", e.lso AS lso, e.hwm AS hwm,
       CASE WHEN e.last_stable IS NOT NULL
             AND coalesce(e.isolation, 'read_committed') <> 'read_uncommitted'
             AND e.last_stable < e.hwm
            THEN e.last_stable ELSE e.hwm END AS readable
FROM (
  SELECT rk, topic, "partition",
         arg_max({'lso': log_start_offset, 'hwm': high_watermark, 'isolation': isolation,
                  'last_stable': last_stable_offset}, "index") AS e
  FROM h WHERE f = 'drain-end' AND type = 'ok' GROUP BY rk, topic, "partition"
)
""",
    "drain_values": """
SELECT DISTINCT rk, topic, "partition", value FROM reads WHERE src = 'drain'
""",
}

_SAME_PART = 'x.rk = d.rk AND x.topic = d.topic AND x."partition" = d."partition"'


def _same(a: str, b: str, *columns: str) -> str:
    """``a`` and ``b`` agree on the run and on ``columns``."""
    return " AND ".join(f'{a}."{c}" = {b}."{c}"' for c in ("rk", *columns))


_IN_DRAIN = f"SELECT 1 FROM drain_values v WHERE {_same('v', 'x', 'topic', 'partition', 'value')}"

# One count per kind, each the number of rows the job's query of that kind returns.
QUERIES = {
    # nowhere in the partition's drain (and not above a stuck last stable offset, where
    # the drain could not read), or acknowledged at or above the high watermark and
    # drained only there
    "lost-write": f"""
SELECT count(*) FROM sends x JOIN drained d ON {_SAME_PART}
WHERE x.outcome = 'ok' AND x."offset" >= d.lso AND (
  (NOT EXISTS ({_IN_DRAIN})
   AND (x."offset" < d.readable OR x."offset" >= d.hwm))
  OR (x."offset" >= d.hwm
      AND EXISTS (SELECT 1 FROM reads r WHERE r.src = 'drain'
                    AND {_same("r", "x", "topic", "partition", "offset", "value")})))
""",
    # one per value polled at or above the drain's log start, outside its complete view
    # (below ``readable`` or at/above the high watermark), and not in the drain
    "uncommitted-read": f"""
SELECT count(*) FROM (
  SELECT x.rk, x.value FROM reads x JOIN drained d ON {_SAME_PART}
  WHERE x.src = 'poll' AND x."offset" >= d.lso
    AND (x."offset" < d.readable OR x."offset" >= d.hwm)
    AND NOT EXISTS ({_IN_DRAIN})
  GROUP BY x.rk, x.value)
""",
    # one per failed value any reader returned
    "aborted-read": """
SELECT count(*) FROM (
  SELECT r.rk, r.value FROM reads r JOIN sends s ON r.rk = s.rk AND r.value = s.value
  WHERE s.outcome = 'fail' GROUP BY r.rk, r.value)
""",
    # one per value read at two or more positions
    "duplicate": """
SELECT count(*) FROM (
  SELECT rk, value FROM reads GROUP BY rk, value
  HAVING count(DISTINCT {'t': topic, 'p': "partition", 'o': "offset"}) > 1)
""",
    # one per position where two values were seen (reads and acknowledgements), plus
    # one per other position acknowledged at or above the drain's log start where the
    # drain holds no record, its value drained elsewhere in the partition
    "inconsistent-offset": f"""
WITH acks AS (
  SELECT rk, topic, "partition", "offset", value FROM sends
  WHERE outcome = 'ok' AND "offset" >= 0
), bad AS (
  SELECT rk, topic, "partition", "offset" FROM (
    SELECT rk, topic, "partition", "offset", value FROM reads
    UNION ALL SELECT rk, topic, "partition", "offset", value FROM acks)
  WHERE "offset" IS NOT NULL GROUP BY rk, topic, "partition", "offset"
  HAVING min(value) <> max(value)
), moved AS (
  SELECT DISTINCT x.rk, x.topic, x."partition", x."offset" FROM acks x
  JOIN drained d ON {_SAME_PART}
  WHERE x."offset" >= d.lso
    AND NOT EXISTS (SELECT 1 FROM reads r WHERE r.src = 'drain'
                      AND {_same("r", "x", "topic", "partition", "offset")})
    AND EXISTS ({_IN_DRAIN})
    AND NOT EXISTS (SELECT 1 FROM bad b WHERE {_same("b", "x", "topic", "partition", "offset")})
)
SELECT (SELECT count(*) FROM bad) + (SELECT count(*) FROM moved)
""",
    # one per acknowledged send no reader saw, of a partition with no drain-end, or
    # above a stuck last stable offset (where the drain could not read) and not drained
    "unseen": f"""
SELECT count(*) FROM sends x
WHERE x.outcome = 'ok'
  AND NOT EXISTS (SELECT 1 FROM reads r WHERE r.rk = x.rk AND r.value = x.value)
  AND (
    NOT EXISTS (SELECT 1 FROM drained d WHERE {_SAME_PART})
    OR EXISTS (SELECT 1 FROM drained d WHERE {_SAME_PART}
                 AND x."offset" >= d.lso AND x."offset" >= d.readable
                 AND x."offset" < d.hwm
                 AND NOT EXISTS ({_IN_DRAIN})))
""",
}

# A row's run: the run directory of the file it was read from (a history.jsonl, or a
# file of its history.parquet copy).
_RUN_KEY = r"regexp_replace(filename, '/history\.(jsonl|parquet)(/.*)?$', '')"


def _quoted(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _files(path: Path) -> tuple[bool, list[Path]]:
    """(is Parquet, the files to read) of one history: its Parquet copy (a file, or a
    copy's directory) or its JSON lines."""
    if path.is_dir():
        parts = part_files(path)
        if not parts:
            raise FileNotFoundError(f"{path}: no Parquet file in this directory")
        return True, parts
    return path.suffix == ".parquet", [path]


def _source(paths: Sequence[Path]) -> str:
    """The table function reading every history in ``paths``, all Parquet or all JSON
    lines, with the file each row came from (``filename``)."""
    found = [_files(Path(p)) for p in paths]
    kinds = {parquet for parquet, _ in found}
    if len(kinds) != 1:
        raise ValueError("histories to read together must all be Parquet or all JSON lines")
    files = "[" + ", ".join(_quoted(f) for _, fs in found for f in fs) + "]"
    if kinds == {True}:
        return f"read_parquet({files}, filename = true)"
    return (
        f"read_json({files}, format = 'newline_delimited', columns = {json_columns()},"
        " maximum_object_size = 268435456, filename = true)"
    )


def duckdb_kinds(path: Path | Sequence[Path], threads: int) -> dict[str, int]:
    """The count of every data kind of format v1 in the history at ``path``, or summed
    over the histories of several runs (see the module text), by DuckDB with ``threads``
    threads."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"SET threads = {max(1, threads)}")
        paths = [path] if isinstance(path, (str, Path)) else list(path)
        con.execute(f"CREATE VIEW h AS SELECT *, {_RUN_KEY} AS rk FROM {_source(paths)}")
        for name, sql in TABLES.items():
            con.execute(f"CREATE TEMP TABLE {name} AS {sql}")
        counts: dict[str, int] = {}
        for kind in KINDS:
            row = con.execute(QUERIES[kind]).fetchone()
            counts[kind] = int(row[0]) if row else 0
        return counts
    finally:
        con.close()
