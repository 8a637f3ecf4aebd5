"""kchaos pytest plugin (entry point ``pytest11``): fixtures for your own chaos tests.

Loaded by every pytest run in an environment where kchaos is installed, so importing it
costs nothing: Docker, Kafka clients and the faults package load only inside a fixture
that needs them. Fixtures:

``kchaos_cluster``       a real cluster (session scope, started on first use, removed at the
                         end); ``--kchaos-brokers``, ``--kchaos-kafka-version`` and the
                         overridable ``kchaos_cluster_spec`` fixture shape it;
                         ``--kchaos-cluster-factory module:callable`` swaps in your own
                         (e.g. a fake for unit tests of your test code).
``kchaos_run_dir``       this test's run directory (holds history.jsonl, run.json, results).
``kchaos_rundir``        the same directory as a ``RunDir`` (its files by name).
``kchaos_history``       a history writer (format v1) into that directory.
``kchaos_nemesis``       ``kchaos_nemesis(schedule)`` -> a started Nemesis on the cluster
                         recording into the history; stopped and healed after the test.
``kchaos_workload``      ``kchaos_workload(topics=..., producers=..., ...)`` -> a Workload
                         (not started) on the cluster, recording into the history.
``kchaos_check``         ``kchaos_check(expect_valid=True)`` closes the history, runs the
                         checkers, writes results.json and history.parquet (as
                         ``kchaos run`` does) and asserts the verdict.

Example::

    def test_pause_leader(kchaos_cluster, kchaos_workload, kchaos_nemesis, kchaos_check):
        workload = kchaos_workload(topics=["t"], duration=30)
        workload.start()
        kchaos_nemesis([{"at": 5, "for": 10, "fault": "pause", "target": "leader:t:0"}])
        time.sleep(30)
        workload.stop()
        workload.drain()
        kchaos_check(expect_valid=True)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kchaos.harness.rundir.rundir import RunDir


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kchaos", "kchaos chaos tests")
    group.addoption(
        "--kchaos-kafka-version",
        default=None,
        help="Kafka release of kchaos_cluster (default: kchaos's default).",
    )
    group.addoption("--kchaos-brokers", type=int, default=3, help="Brokers in kchaos_cluster.")
    group.addoption(
        "--kchaos-image-source",
        default="offline",
        choices=("offline", "registry"),
        help="Build images offline or pull the official ones.",
    )
    group.addoption(
        "--kchaos-cluster-factory",
        default=None,
        metavar="MODULE:CALLABLE",
        help="Build kchaos_cluster with this callable(spec_kwargs) instead.",
    )
    group.addoption(
        "--kchaos-keep-cluster",
        action="store_true",
        help="Do not remove kchaos_cluster at the end (kchaos cleanup does).",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kchaos: a chaos test that uses the kchaos fixtures")


def _load(target: str) -> Callable[..., Any]:
    module, _, attr = target.partition(":")
    if not module or not attr:
        raise pytest.UsageError(
            f"--kchaos-cluster-factory: expected MODULE:CALLABLE, got {target!r}"
        )
    fn = getattr(importlib.import_module(module), attr, None)
    if not callable(fn):
        raise pytest.UsageError(f"--kchaos-cluster-factory: {target} is not callable")
    return fn


@pytest.fixture(scope="session")
def kchaos_cluster_spec(pytestconfig: pytest.Config) -> dict[str, Any]:
    """Keyword arguments of harness.cluster.ClusterSpec; override it to shape the cluster."""
    spec: dict[str, Any] = {
        "brokers": pytestconfig.getoption("kchaos_brokers"),
        "server_properties": {
            "replica.lag.time.max.ms": "5000",
            "group.initial.rebalance.delay.ms": "0",
        },
    }
    version = pytestconfig.getoption("kchaos_kafka_version")
    if version:
        spec["kafka_version"] = version
    return spec


@pytest.fixture(scope="session")
def kchaos_cluster(
    pytestconfig: pytest.Config, kchaos_cluster_spec: dict[str, Any]
) -> Iterator[Any]:
    factory = pytestconfig.getoption("kchaos_cluster_factory")
    if factory:
        cluster = _load(factory)(dict(kchaos_cluster_spec))
        yield cluster
        close = getattr(cluster, "cleanup", None)
        if callable(close) and not pytestconfig.getoption("kchaos_keep_cluster"):
            close()
        return
    from kchaos.harness.cluster import Cluster, ClusterSpec
    from kchaos.harness.cluster.spec import default_kafka_version
    from kchaos.harness.images import ensure_images

    fields = dict(kchaos_cluster_spec)
    fields["kafka_version"] = fields.get("kafka_version") or default_kafka_version()
    source = pytestconfig.getoption("kchaos_image_source")
    images = ensure_images(fields["kafka_version"], source=source)
    cluster = Cluster(ClusterSpec(**fields, images=images))
    cluster.start()
    try:
        yield cluster
    finally:
        if not pytestconfig.getoption("kchaos_keep_cluster"):
            cluster.cleanup()


@pytest.fixture
def kchaos_run_dir(tmp_path: Path) -> Path:
    run_dir = tmp_path / "kchaos-run"
    run_dir.mkdir()
    return run_dir


@pytest.fixture
def kchaos_rundir(kchaos_run_dir: Path) -> RunDir:
    """``kchaos_run_dir`` as a :class:`~kchaos.harness.rundir.rundir.RunDir`, the one the
    other fixtures hand down."""
    from kchaos.harness.rundir.rundir import RunDir

    return RunDir(kchaos_run_dir)


@pytest.fixture
def kchaos_history(kchaos_rundir: RunDir) -> Iterator[Any]:
    writer = kchaos_rundir.history_writer()
    try:
        yield writer
    finally:
        writer.close()


@pytest.fixture
def kchaos_nemesis(kchaos_cluster: Any, kchaos_history: Any) -> Iterator[Callable[..., Any]]:
    """``kchaos_nemesis(schedule, seed=0, **options)``: schedule is a faults.schedule spec
    mapping or a list of scripted entries (``{"at", "for", "fault", "target", "params"}``)."""
    started: list[Any] = []

    def start(
        schedule: Mapping[str, Any] | Sequence[Mapping[str, Any]], seed: int = 0, **options: Any
    ) -> Any:
        from kchaos.faults.nemesis import build_nemesis

        spec = (
            schedule
            if isinstance(schedule, Mapping)
            else {"type": "scripted", "faults": list(schedule)}
        )
        nemesis = build_nemesis(kchaos_cluster, spec, kchaos_history, seed=seed, **options)
        started.append(nemesis)
        return nemesis.start()

    yield start
    for nemesis in started:
        nemesis.stop()
    if started and getattr(started[0], "final_heal", True):
        from kchaos.faults.heal import heal_everything

        heal_everything(kchaos_cluster)


@pytest.fixture
def kchaos_workload(
    kchaos_cluster: Any, kchaos_history: Any, kchaos_rundir: RunDir
) -> Iterator[Callable[..., Any]]:
    """``kchaos_workload(**WorkloadSpec fields)`` -> a Workload (start it yourself). What
    a test leaves out is a minute of two producers and one reader on topic ``kchaos``;
    the fields' old names (``duration_s``, ...), client ``confluent`` and a one-entry
    ``consumers`` sequence are still read (:func:`kchaos.workloads.spec.workload_spec_of`)."""
    made: list[Any] = []

    def build(**fields: Any) -> Any:
        from kchaos.workloads.spec import workload_spec_of
        from kchaos.workloads.workload import Workload

        workload = Workload.for_cluster(
            workload_spec_of(fields), kchaos_cluster, kchaos_history, run_dir=kchaos_rundir
        )
        made.append(workload)
        return workload

    yield build
    for workload in made:
        workload.close()


@pytest.fixture
def kchaos_check(kchaos_history: Any, kchaos_rundir: RunDir) -> Callable[..., Any]:
    """``kchaos_check(expect_valid=True, run_json=None)`` -> checker Results (asserted)."""

    def check(
        expect_valid: bool | str | None = True, run_json: Mapping[str, Any] | None = None
    ) -> Any:
        from kchaos.harness.checker import check_run
        from kchaos.harness.run.orchestrate import write_history_parquet

        kchaos_history.close()
        if run_json is not None:
            kchaos_rundir.write_run(run_json)
        results = check_run(kchaos_rundir)
        # the columnar copy a `kchaos run` leaves too (never fails the test)
        write_history_parquet(kchaos_rundir)
        if expect_valid is not None and results.valid != expect_valid:
            found = {k: a.count for k, a in results.anomalies.items()}
            pytest.fail(
                f"kchaos verdict {results.valid!r}, expected {expect_valid!r}; anomalies {found}; "
                f"run directory {kchaos_rundir}",
                pytrace=False,
            )
        return results

    return check
