"""The name of every file and folder a run directory (and a batch directory) holds.

One constant per name; :class:`kchaos.harness.rundir.rundir.RunDir` turns them into
paths, and no module outside this package spells them (``tests/unit/rundir/
test_no_run_file_names.py`` fails naming ``file:line`` where one does). What each file
holds and who writes it: docs/run-directory.md.
"""

from __future__ import annotations

# -- the history format's files (../shared/docs/history-format.md)
RUN_JSON = "run.json"
HISTORY_JSONL = "history.jsonl"
CONTROLLER_JSONL = "controller.jsonl"
RESULTS_JSON = "results.json"
ANALYSIS_DIR = "analysis"
#: ``analysis/summary.json`` (and the reports' own summary.json at the top level).
SUMMARY_JSON = "summary.json"
#: ``analysis/windows.json`` and ``analysis/windows.parquet``: one run's time windows.
WINDOWS_JSON = "windows.json"
WINDOWS_PARQUET = "windows.parquet"

# -- kchaos's other evidence
REPLICAS_JSONL = "replicas.jsonl"
REREAD_JSONL = "reread.jsonl"
BROKER_METRICS_JSONL = "broker-metrics.jsonl"
#: the monitor's last stable offsets and high watermarks during a transactional run
STABLE_OFFSETS_JSONL = "stable-offsets.jsonl"
PROMETHEUS_YML = "prometheus.yml"
PROMETHEUS_JSON = "prometheus.json"
#: history.jsonl in Parquet: a directory, either ``kchaos export``'s ``f=...`` folders or
#: the run-end copy's one file, ``HISTORY_PARQUET_PART`` (kchaos.harness.rundir.parquet)
HISTORY_PARQUET = "history.parquet"
HISTORY_PARQUET_PART = "part-0.parquet"

# -- logs/: each node's container log split by logger, and the clients' own log
LOGS_DIR = "logs"
METADATA_DUMP_TXT = "metadata-dump.txt"
LIBRDKAFKA_LOG = "librdkafka.log"
SERVER_LOG = "server.log"
CONTROLLER_LOG = "controller.log"
STATE_CHANGE_LOG = "state-change.log"
#: A node's log files, in ``logs/<container>/``.
NODE_LOGS: tuple[str, ...] = (SERVER_LOG, CONTROLLER_LOG, STATE_CHANGE_LOG)
#: ``logs/txn-<process>.log``: the stderr of a transactional worker's child process
#: (``transactions.process``), one file per process id, appended to across restarts.
TXN_LOG = "txn-{process}.log"

# -- java-clients/: the raw stdout of each Java client container (``client: java``)
JAVA_CLIENTS_DIR = "java-clients"
#: ``java-clients/<worker>.out``, the worker's name being e.g. ``producer-1``.
JAVA_CLIENT_OUT = "{worker}.out"

# -- the reports' outputs (a run directory's and a batch directory's)
REPORT_HTML = "report.html"
JUNIT_XML = "junit.xml"

# -- batch directories' own files
SOAK_JSON = "soak.json"
SHARD_JSON = "shard.json"
DURATIONS_JSON = "durations.json"
SHRINK_JSON = "shrink.json"
SHRUNK_YAML = "shrunk.yaml"
#: ``kchaos analyze``'s cross-run trend directory: one row per run (Parquet and CSV) and
#: the plot (kchaos.harness.analysis.trend)
TREND_RUNS_PARQUET = "runs.parquet"
TREND_RUNS_CSV = "runs.csv"
TREND_HTML = "trend.html"
#: ``kchaos bench analyze``'s generated history directory: what the generator made
#: (events, the injected anomalies), kept beside it for the next bench run
GENERATED_JSON = "generated.json"
#: ``console/LABEL.log``: each cell's console in a ``--parallel`` batch (a common word,
#: so not in FILE_NAMES)
CONSOLE_DIR = "console"

#: The names a scan of the code looks for: every file, and the folders whose name is no
#: common word (``logs`` and ``analysis`` are: see RUN_DIR_FOLDERS).
FILE_NAMES: tuple[str, ...] = (
    RUN_JSON,
    HISTORY_JSONL,
    CONTROLLER_JSONL,
    RESULTS_JSON,
    SUMMARY_JSON,
    WINDOWS_JSON,
    WINDOWS_PARQUET,
    REPLICAS_JSONL,
    REREAD_JSONL,
    BROKER_METRICS_JSONL,
    STABLE_OFFSETS_JSONL,
    PROMETHEUS_YML,
    PROMETHEUS_JSON,
    HISTORY_PARQUET,
    HISTORY_PARQUET_PART,
    METADATA_DUMP_TXT,
    LIBRDKAFKA_LOG,
    *NODE_LOGS,
    REPORT_HTML,
    JUNIT_XML,
    SOAK_JSON,
    SHARD_JSON,
    DURATIONS_JSON,
    SHRINK_JSON,
    SHRUNK_YAML,
    TREND_RUNS_PARQUET,
    TREND_RUNS_CSV,
    TREND_HTML,
    GENERATED_JSON,
    JAVA_CLIENTS_DIR,
)
#: The names with a part that varies (``{field}``, filled in by ``str.format``): the scan
#: looks for them in f-strings and format strings, the varying parts left out.
NAME_PATTERNS: tuple[str, ...] = (TXN_LOG, JAVA_CLIENT_OUT)
#: The run directory's folders: the scan looks for them joined to a run directory's path
#: (``run_dir / "logs"``), where their name alone is too common a word to look for.
RUN_DIR_FOLDERS: tuple[str, ...] = (LOGS_DIR, ANALYSIS_DIR, JAVA_CLIENTS_DIR)
