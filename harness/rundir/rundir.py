"""``RunDir``: every file of one run directory, its path, its reader and its writer.

A run directory is written by the runner (and the pytest plugin, the history generator,
``kchaos check``, the reports, ``kchaos analyze``) and read by the checker, the reports,
the analysis, replay and shrink. Each of them asks a :class:`RunDir` for a file instead
of joining a name to a path: the names are in :mod:`kchaos.harness.rundir.names`, the
formats in the modules this one delegates to, and docs/run-directory.md lists them all.

Writers of whole files are atomic (:func:`kchaos.harness.rundir.files.atomic_write`): a
reader never sees half a run.json, results.json, controller.jsonl, replicas.jsonl,
reread.jsonl, prometheus.json or analysis summary. history.jsonl is the exception by
design: it is appended to while the run goes (:mod:`kchaos.harness.rundir.history_writer`).
history.parquet, a directory, is built beside its final name and renamed into place.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kchaos.harness.rundir import names
from kchaos.harness.rundir.controller import ControllerFile, read_controller_lines
from kchaos.harness.rundir.files import (
    atomic_write,
    json_lines,
    line_writer,
    read_object,
    write_bytes,
    write_json,
)
from kchaos.harness.rundir.history import numbered
from kchaos.harness.rundir.history_writer import HistoryWriter
from kchaos.harness.rundir.nodelogs import NodeLog, node_logs
from kchaos.harness.rundir.parquet import write_copy
from kchaos.harness.rundir.prometheus import load_prometheus
from kchaos.harness.rundir.results import Results, load_results
from kchaos.harness.rundir.runjson import RunJson, load_run, write_run
from kchaos.harness.rundir.stable_offsets import (
    StableOffsetSample,
    StableOffsetsWriter,
    read_stable_offsets,
)


@dataclass(frozen=True)
class RunDir:
    """One run directory (it need not exist yet: :meth:`create` makes it)."""

    path: Path

    def __init__(self, path: str | Path) -> None:
        object.__setattr__(self, "path", Path(path))

    def __str__(self) -> str:
        return str(self.path)

    @classmethod
    def of(cls, where: RunDir | str | Path) -> RunDir:
        """``where`` itself when it is a RunDir, else a RunDir on that path: for entry
        points that users and tests call with a path, converting once at the boundary
        (inside, a run's RunDir is handed down, not rebuilt)."""
        return where if isinstance(where, RunDir) else cls(where)

    def create(self) -> RunDir:
        """Make the directory (and its parents); returns self."""
        self.path.mkdir(parents=True, exist_ok=True)
        return self

    def _file(self, name: str) -> Path:
        return self.path / name

    # -- paths ----------------------------------------------------------------------------
    @property
    def run_json(self) -> Path:
        return self._file(names.RUN_JSON)

    @property
    def history(self) -> Path:
        return self._file(names.HISTORY_JSONL)

    @property
    def history_parquet(self) -> Path:
        """The history in Parquet, a directory: the run-end copy (one file, written by
        :meth:`write_history_parquet`) or ``kchaos export``'s (partitioned by ``f``)."""
        return self._file(names.HISTORY_PARQUET)

    @property
    def controller(self) -> Path:
        return self._file(names.CONTROLLER_JSONL)

    @property
    def results(self) -> Path:
        return self._file(names.RESULTS_JSON)

    @property
    def replicas(self) -> Path:
        return self._file(names.REPLICAS_JSONL)

    @property
    def reread(self) -> Path:
        return self._file(names.REREAD_JSONL)

    @property
    def broker_metrics(self) -> Path:
        return self._file(names.BROKER_METRICS_JSONL)

    @property
    def stable_offsets(self) -> Path:
        return self._file(names.STABLE_OFFSETS_JSONL)

    @property
    def prometheus_yml(self) -> Path:
        return self._file(names.PROMETHEUS_YML)

    @property
    def prometheus_json(self) -> Path:
        return self._file(names.PROMETHEUS_JSON)

    @property
    def analysis_dir(self) -> Path:
        return self._file(names.ANALYSIS_DIR)

    @property
    def analysis_summary(self) -> Path:
        return self.analysis_dir / names.SUMMARY_JSON

    @property
    def analysis_windows_json(self) -> Path:
        return self.analysis_dir / names.WINDOWS_JSON

    @property
    def analysis_windows_parquet(self) -> Path:
        return self.analysis_dir / names.WINDOWS_PARQUET

    @property
    def logs_dir(self) -> Path:
        return self._file(names.LOGS_DIR)

    @property
    def metadata_dump(self) -> Path:
        """``kafka-dump-log.sh --cluster-metadata-decoder`` output behind controller.jsonl."""
        return self.logs_dir / names.METADATA_DUMP_TXT

    @property
    def librdkafka_log(self) -> Path:
        return self.logs_dir / names.LIBRDKAFKA_LOG

    def node_logs_dir(self, container: str) -> Path:
        """``logs/<container>/``: a node's server.log, controller.log, state-change.log."""
        return self.logs_dir / container

    def server_log(self, container: str) -> Path:
        """``logs/<container>/server.log``: the node's whole container log."""
        return self.node_logs_dir(container) / names.SERVER_LOG

    def txn_log(self, process: int | str) -> Path:
        """``logs/txn-<process>.log``: the stderr of transactional worker ``process``'s
        child process (its writer opens it for appending; the folder may not exist yet)."""
        return self.logs_dir / names.TXN_LOG.format(process=process)

    @property
    def java_clients_dir(self) -> Path:
        """``java-clients/``: the raw stdout of each Java client container."""
        return self._file(names.JAVA_CLIENTS_DIR)

    def java_client_out(self, worker: str) -> Path:
        """``java-clients/<worker>.out``: one Java client's raw stdout (its reader writes
        it as the container prints; the folder may not exist yet)."""
        return self.java_clients_dir / names.JAVA_CLIENT_OUT.format(worker=worker)

    def node_logs(self) -> list[NodeLog]:
        """Every node's ``server.log`` the run kept, with the node each belongs to
        (:mod:`kchaos.harness.rundir.nodelogs`); empty when the run kept none."""
        return node_logs(self.logs_dir)

    # the reports' outputs: a run directory's and a batch directory's alike
    @property
    def summary_json(self) -> Path:
        return self._file(names.SUMMARY_JSON)

    @property
    def report_html(self) -> Path:
        return self._file(names.REPORT_HTML)

    @property
    def junit_xml(self) -> Path:
        return self._file(names.JUNIT_XML)

    # batch directories' own files
    @property
    def soak_json(self) -> Path:
        return self._file(names.SOAK_JSON)

    @property
    def shard_json(self) -> Path:
        return self._file(names.SHARD_JSON)

    def cell_console(self, label: str) -> Path:
        """A ``--parallel`` batch's ``console/LABEL.log``: what the cell whose run
        directory is ``LABEL`` printed."""
        return self.path / names.CONSOLE_DIR / f"{label}.log"

    @property
    def generated_json(self) -> Path:
        """A generated history's own record (``kchaos bench analyze``)."""
        return self._file(names.GENERATED_JSON)

    @property
    def shrink_json(self) -> Path:
        return self._file(names.SHRINK_JSON)

    @property
    def shrunk_yaml(self) -> Path:
        return self._file(names.SHRUNK_YAML)

    # -- run.json -------------------------------------------------------------------------
    def load_run(self, *, missing_ok: bool = False) -> RunJson:
        """run.json typed (:func:`kchaos.harness.rundir.runjson.load_run`)."""
        return load_run(self.path, missing_ok=missing_ok)

    def write_run(self, data: Mapping[str, Any]) -> None:
        write_run(self.run_json, data)

    # -- history.jsonl --------------------------------------------------------------------
    def history_writer(self, **options: Any) -> HistoryWriter:
        """The one writer of history.jsonl (refuses a non-empty existing file)."""
        return HistoryWriter(self.history, **options)

    def history_lines(
        self, *, strict: bool = False, on_torn: Callable[[str], None] | None = None
    ) -> Iterator[tuple[int, Any]]:
        """history.jsonl's lines with their numbers (:func:`rundir.history.numbered`)."""
        return numbered(self.history, strict=strict, on_torn=on_torn)

    def write_history_parquet(self, threads: int = 2) -> bool:
        """history.parquet from history.jsonl, by DuckDB, atomically (a directory holding
        one Parquet file: :func:`kchaos.harness.rundir.parquet.write_copy`). False, and no
        copy, when the history is empty, has a torn last line or a line DuckDB cannot
        read strictly: the analysis then reads the JSON lines."""
        return write_copy(self.history, self.history_parquet, threads)

    # -- controller.jsonl -----------------------------------------------------------------
    def read_controller(self) -> ControllerFile | None:
        """controller.jsonl's lines; None when the run has none."""
        if not self.controller.exists():
            return None
        return read_controller_lines(self.controller)

    def write_controller(self, data: bytes) -> None:
        """controller.jsonl's whole content (lines already serialised), atomically."""
        write_bytes(self.controller, data)

    # -- results.json ---------------------------------------------------------------------
    def load_results(self) -> Results | None:
        """results.json typed; None when the run has not been checked."""
        return load_results(self.path)

    def read_results(self) -> dict[str, Any] | None:
        """results.json as written; None when absent."""
        return read_object(self.results)

    def write_results(self, data: Mapping[str, Any]) -> None:
        write_json(self.results, data)

    # -- replicas.jsonl, reread.jsonl: JSON lines, every line an object -------------------
    def replicas_lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return json_lines(self.replicas)

    def reread_lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return json_lines(self.reread)

    @contextlib.contextmanager
    def write_lines(self, path: Path) -> Iterator[Callable[[Any], None]]:
        """Write a JSON-lines file of this directory atomically: the block gets a
        function taking one line (an object, or bytes already serialised)."""
        with atomic_write(path) as fh:
            yield line_writer(fh)

    def write_replicas(self) -> contextlib.AbstractContextManager[Callable[[Any], None]]:
        return self.write_lines(self.replicas)

    def write_reread(self) -> contextlib.AbstractContextManager[Callable[[Any], None]]:
        return self.write_lines(self.reread)

    # -- stable-offsets.jsonl: the monitor's LSO samples (rundir.stable_offsets) --------
    def stable_offsets_writer(self) -> StableOffsetsWriter:
        """The appending writer of the monitor's last-stable-offset samples."""
        return StableOffsetsWriter(self.stable_offsets)

    def read_stable_offsets(
        self, *, on_torn: Callable[[str], None] | None = None
    ) -> tuple[StableOffsetSample, ...]:
        """The samples in file order; () when the run has none (no transactions, or a
        run from before the file existed)."""
        return read_stable_offsets(self.stable_offsets, on_torn=on_torn)

    # -- prometheus.yml, prometheus.json --------------------------------------------------
    def write_prometheus_config(self, text: str) -> None:
        self.prometheus_yml.write_text(text, encoding="utf-8")

    def load_prometheus(self) -> dict[str, Any] | None:
        return load_prometheus(self.prometheus_json)

    def write_prometheus(self, doc: Mapping[str, Any]) -> None:
        """prometheus.json (build ``doc`` with :func:`rundir.prometheus.document`)."""
        write_json(self.prometheus_json, doc)

    # -- analysis/ ------------------------------------------------------------------------
    def read_analysis_summary(self) -> dict[str, Any] | None:
        return read_object(self.analysis_summary)

    def write_analysis_json(self, path: Path, data: Any) -> None:
        """One of analysis/'s JSON files (summary.json, windows.json), atomically."""
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, data)

    # -- logs/ ----------------------------------------------------------------------------
    def write_metadata_dump(self, text: str) -> None:
        self.logs_dir.mkdir(exist_ok=True)
        self.metadata_dump.write_text(text)

    def write_node_logs(self, container: str, logs: Mapping[str, str]) -> Path:
        """A node's log files (names from :data:`names.NODE_LOGS`) in ``logs/<container>/``."""
        folder = self.node_logs_dir(container)
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in logs.items():
            (folder / name).write_text(text)
        return folder

    # -- the reports' summary.json --------------------------------------------------------
    def read_summary(self) -> dict[str, Any] | None:
        return read_object(self.summary_json)

    def write_summary(self, data: Any) -> None:
        write_json(self.summary_json, data)


def durations_file(runs: Path) -> Path:
    """``runs/durations.json``: the measured run times sharded batches split by, kept in
    the folder of runs (no run directory of its own)."""
    return runs / names.DURATIONS_JSON


@dataclass(frozen=True)
class TrendDir:
    """``kchaos analyze``'s cross-run output directory (not a run's, so not a
    :class:`RunDir`): the paths of what it holds (kchaos.harness.analysis.trend)."""

    path: Path

    @property
    def runs_parquet(self) -> Path:
        return self.path / names.TREND_RUNS_PARQUET

    @property
    def runs_csv(self) -> Path:
        return self.path / names.TREND_RUNS_CSV

    @property
    def windows_parquet(self) -> Path:
        return self.path / names.WINDOWS_PARQUET

    @property
    def html(self) -> Path:
        return self.path / names.TREND_HTML
