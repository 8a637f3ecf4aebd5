"""One quiet Spark session per invocation, and JVM errors turned into kchaos errors.

The session is embedded (``local[*]``) unless a master URL is given, or unless the job
runs under ``spark-submit``, which has already chosen the master. The JVM's own logging
goes to a file, never to the console: a failing job prints one line, not a stack trace.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kchaos.harness.errors import AnalysisError, KchaosError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
#: Up to this many input paths are listed by the driver, not by a Spark job.
LIST_ON_DRIVER = 100_000
JAVA17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")

_LOG4J = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss.SSS}} %p %c{{1}}: %m%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
"""


def under_spark_submit() -> bool:
    """True when spark-submit started this Python process (it then owns the master)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def log_path() -> Path:
    """Where the JVM of this process logs (one file per process)."""
    return Path(tempfile.gettempdir()) / f"kchaos-spark-{os.getpid()}.log"


def _log4j_file() -> Path:
    conf = Path(tempfile.gettempdir()) / f"kchaos-spark-log4j2-{os.getpid()}.properties"
    conf.write_text(_LOG4J.format(log=log_path()))
    return conf


def _ensure_java() -> None:
    if os.environ.get("JAVA_HOME"):
        return
    if JAVA17.is_dir():
        os.environ["JAVA_HOME"] = str(JAVA17)
    elif shutil.which("java") is None:
        raise AnalysisError("Spark needs Java 17: set JAVA_HOME or install openjdk-17")


def start_session(
    master: str | None = None,
    *,
    app_name: str = "kchaos-analyze",
    shuffle_partitions: int = 4,
    driver_memory: str = "2g",
) -> SparkSession:
    """Start (or join) the Spark session of this invocation.

    ``master`` None means: the master spark-submit chose, or ``local[*]`` otherwise.
    """
    _ensure_java()
    from pyspark.sql import SparkSession

    # The parallel collector: a batch job wants throughput, not G1's short pauses
    # (10M-event job 63 s against 69 s with G1 on two cores).
    java_opts = f"-Dlog4j2.configurationFile=file:{_log4j_file()} -XX:+UseParallelGC"
    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.sql.pyspark.jvmStacktrace.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # The SQL status store keeps each finished query's plan for the UI (1000 by
        # default), even with the UI off; the analysis's plans are large, so one process
        # running many jobs (the analysis unit tests) filled a 1 GB driver with them
        # (measured 2026-11-26: 18 errors with OutOfMemoryError at 1 GB, none with 20).
        .config("spark.sql.ui.retainedExecutions", "20")
        # Spark lists more than 32 input paths with a job of one task per path: 200 run
        # directories meant two such jobs of 200 tasks (schema merge and read), 5 s of
        # the load on two cores (2026-12-07). The paths are files the driver has listed
        # already, so it stats them itself.
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", str(LIST_ON_DRIVER))
    )
    if master is not None:
        builder = builder.master(master)
    elif not under_spark_submit():
        builder = builder.master(DEFAULT_MASTER)
    if not under_spark_submit():
        builder = builder.config("spark.driver.memory", driver_memory)
        # The Python workers of the per-partition pass import kchaos and pyarrow: they must
        # run this interpreter, not whatever "python3" is first on PATH (PySpark's
        # default). Under spark-submit the cluster's own PYSPARK_PYTHON decides.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        with _stderr_to(log_path()):  # the JVM it may start inherits this stderr
            spark = builder.getOrCreate()
    except Exception as exc:  # the JVM could not start or reach the master
        raise AnalysisError(
            f"cannot start Spark (master {master or 'default'}): {_short(exc)}"
        ) from exc
    spark.sparkContext.setLogLevel("ERROR")
    _python_side_logs_to_file()
    return spark


# PySpark's own loggers that print a failed query's context, as JSON, to the console.
_QUERY_CONTEXT_LOGGERS = ("DataFrameQueryContextLogger", "SQLQueryContextLogger")


def _python_side_logs_to_file() -> None:
    """Send the query-context records PySpark logs on every failed query to the Spark
    log file: the console gets kchaos's one-line error only."""
    from pyspark.logger import PySparkLogger

    for name in _QUERY_CONTEXT_LOGGERS:
        logger = PySparkLogger.getLogger(name)
        for handler in list(logger.handlers):  # the console one, or a previous session's
            logger.removeHandler(handler)
            handler.close()
        logger.addHandler(logging.FileHandler(log_path()))
        logger.propagate = False


@contextlib.contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` for the block: a JVM started inside it writes
    its own console output (e.g. Java's "Using incubator modules" warning) to Spark's
    log file for its whole life, not to the user's terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


def _short(exc: BaseException) -> str:
    """The first meaningful line of a (possibly JVM) exception, never its stack trace."""
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "...", "JVM stacktrace")):
            return line[:500]
    return type(exc).__name__


@contextlib.contextmanager
def spark_errors(what: str) -> Iterator[None]:
    """Turn any Spark, Py4J or JVM failure inside the block into one AnalysisError."""
    try:
        yield
    except KchaosError:
        raise
    except Exception as exc:
        module = type(exc).__module__
        if module.startswith(("pyspark", "py4j")) or "Java" in type(exc).__name__:
            raise AnalysisError(f"{what} failed: {_short(exc)} (Spark log: {log_path()})") from exc
        raise
