"""RunDir: each file's path, and what its writer writes its reader reads back."""

from __future__ import annotations

import dataclasses
import datetime
import enum
from pathlib import Path

import orjson
import pytest

from kchaos.harness.errors import HistoryError
from kchaos.harness.rundir import RunDir, names
from kchaos.harness.rundir.controller import PartitionLine
from kchaos.harness.rundir.files import (
    atomic_write,
    json_lines,
    jsonable,
    write_bytes,
    write_json,
)
from kchaos.harness.rundir.files import (
    tmp_path as tmp_of,
)
from kchaos.harness.rundir.history_writer import line_template
from kchaos.harness.rundir.prometheus import FORMAT, document


def test_paths_are_the_names_under_the_directory(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    assert rd == RunDir(str(tmp_path)) and str(rd) == str(tmp_path)
    expected = {
        rd.run_json: names.RUN_JSON,
        rd.history: names.HISTORY_JSONL,
        rd.history_parquet: names.HISTORY_PARQUET,
        rd.controller: names.CONTROLLER_JSONL,
        rd.results: names.RESULTS_JSON,
        rd.replicas: names.REPLICAS_JSONL,
        rd.reread: names.REREAD_JSONL,
        rd.broker_metrics: names.BROKER_METRICS_JSONL,
        rd.prometheus_yml: names.PROMETHEUS_YML,
        rd.prometheus_json: names.PROMETHEUS_JSON,
        rd.analysis_summary: f"{names.ANALYSIS_DIR}/{names.SUMMARY_JSON}",
        rd.analysis_windows_json: f"{names.ANALYSIS_DIR}/{names.WINDOWS_JSON}",
        rd.analysis_windows_parquet: f"{names.ANALYSIS_DIR}/{names.WINDOWS_PARQUET}",
        rd.metadata_dump: f"{names.LOGS_DIR}/{names.METADATA_DUMP_TXT}",
        rd.librdkafka_log: f"{names.LOGS_DIR}/{names.LIBRDKAFKA_LOG}",
        rd.node_logs_dir("kchaos-x-broker-1"): f"{names.LOGS_DIR}/kchaos-x-broker-1",
        rd.txn_log(4): f"{names.LOGS_DIR}/txn-4.log",
        rd.java_clients_dir: names.JAVA_CLIENTS_DIR,
        rd.java_client_out("producer-1"): f"{names.JAVA_CLIENTS_DIR}/producer-1.out",
        rd.summary_json: names.SUMMARY_JSON,
        rd.report_html: names.REPORT_HTML,
        rd.junit_xml: names.JUNIT_XML,
        rd.soak_json: names.SOAK_JSON,
        rd.shrink_json: names.SHRINK_JSON,
        rd.shrunk_yaml: names.SHRUNK_YAML,
    }
    for path, rel in expected.items():
        assert path == tmp_path / rel
    # the on-disk names of the format are unchanged
    assert (names.RUN_JSON, names.HISTORY_JSONL, names.RESULTS_JSON) == (
        "run.json",
        "history.jsonl",
        "results.json",
    )
    # and so are the workers' own outputs, where they were before RunDir named them
    assert rd.txn_log(4) == tmp_path / "logs" / "txn-4.log"
    assert rd.java_client_out("consumer-2") == tmp_path / "java-clients" / "consumer-2.out"


def test_create_makes_the_directory(tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "a" / "b").create()
    assert rd.path.is_dir()


def test_run_json_round_trip(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    assert not rd.load_run(missing_ok=True).present
    rd.write_run({"format": 1, "run_id": "r1", "seed": 4, "topics": {("t", 0): {1, 2}}})
    run = rd.load_run()
    assert (run.run_id, run.seed, run.source) == ("r1", 4, str(rd.run_json))
    assert run.get("topics") == {"t/0": [1, 2]}
    assert not tmp_of(rd.run_json).exists()


def test_history_round_trip(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    with rd.history_writer() as writer:
        writer.append({"process": 0, "type": "invoke", "f": "send", "value": "0-1"})
        writer.record(line_template('"process":0,"type":"ok","f":"send","offset":%d'), 7)
    lines = list(rd.history_lines(strict=True))
    assert [no for no, _ in lines] == [1, 2]
    assert lines[0][1]["value"] == "0-1" and lines[1][1]["offset"] == 7
    with pytest.raises(HistoryError, match="not empty"):
        rd.history_writer()  # a history is never appended to by a second writer


def test_controller_round_trip(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    assert rd.read_controller() is None
    line = PartitionLine(
        offset=3,
        time=10,
        topic="t",
        partition=0,
        leader=1,
        leader_epoch=2,
        partition_epoch=4,
        isr=(1, 2),
        elr=(),
        last_known_elr=(),
        replicas=(1, 2, 3),
        recovering=False,
    )
    rd.write_controller(orjson.dumps(line.to_json()) + b"\n")
    read = rd.read_controller()
    assert read is not None and read.lines == [dataclasses.replace(line, line=1)]


def test_results_round_trip(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    assert rd.load_results() is None and rd.read_results() is None
    rd.write_results({"valid": False, "anomalies": {"lost-write": {"count": 1}}})
    assert rd.read_results() == {"valid": False, "anomalies": {"lost-write": {"count": 1}}}
    loaded = rd.load_results()
    assert loaded is not None and loaded.valid is False
    assert loaded.anomalies == {"lost-write": {"count": 1}}


@pytest.mark.parametrize("which", ["replicas", "reread"])
def test_json_lines_files_round_trip(tmp_path: Path, which: str) -> None:
    rd = RunDir(tmp_path)
    writer = rd.write_replicas if which == "replicas" else rd.write_reread
    reader = rd.replicas_lines if which == "replicas" else rd.reread_lines
    with writer() as put:
        put({"type": "reader", "reader": "tool"})
        put(b'{"type":"batch","offset":1}')  # a line serialised already
        put({"topics": {"a", "b"} - {"b"}, ("t", 0): 1})  # not orjson's own: made plain
    assert list(reader()) == [
        (1, {"type": "reader", "reader": "tool"}),
        (2, {"type": "batch", "offset": 1}),
        (3, {"topics": ["a"], "t/0": 1}),
    ]
    assert [p.name for p in tmp_path.iterdir()] == [getattr(rd, which).name]


def test_a_json_lines_writer_that_fails_leaves_the_old_file(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    rd.replicas.write_bytes(b'{"type":"reader"}\n')
    with pytest.raises(RuntimeError), rd.write_replicas() as put:
        put({"type": "broker"})
        raise RuntimeError("the dump failed half way")
    assert rd.replicas.read_bytes() == b'{"type":"reader"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == [names.REPLICAS_JSONL]


def test_json_lines_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / names.REREAD_JSONL
    path.write_bytes(b'{"a":1}\n[1]\n')
    with pytest.raises(HistoryError) as err:
        list(json_lines(path))
    assert f"{path}:2" in str(err.value) and "expected a JSON object" in str(err.value)
    path.write_bytes(b'{"a":1}\n{"a":\n')
    with pytest.raises(HistoryError) as err:
        list(json_lines(path))
    assert f"{path}:2" in str(err.value) and "not JSON" in str(err.value)


def test_prometheus_round_trip(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    assert rd.load_prometheus() is None
    rd.write_prometheus_config("scrape_configs: []\n")
    assert rd.prometheus_yml.read_text() == "scrape_configs: []\n"
    doc = document(
        url="http://127.0.0.1:9",
        start_unix=1.23456,
        end_unix=2.0,
        time0_unix=1.0000001,
        step_s=2,
        series=[{"name": "urp", "labels": {"node": "b1"}, "points": [[0.0, 1.0]]}],
        errors=["isr: timeout"],
    )
    rd.write_prometheus(doc)
    loaded = rd.load_prometheus()
    assert loaded == {**doc, "start_unix": 1.235, "time0_unix": 1.0}
    assert loaded["format"] == FORMAT and list(loaded)[:2] == ["format", "url"]
    rd.prometheus_json.write_text("{not json")
    assert rd.load_prometheus() == {"series": [], "errors": ["prometheus.json is not valid JSON"]}


def test_analysis_summary_and_reports_summary_round_trip(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    assert rd.read_analysis_summary() is None and rd.read_summary() is None
    rd.write_analysis_json(rd.analysis_summary, {"kinds": {1: 2}})
    rd.write_summary({"passed": 1})
    assert rd.read_analysis_summary() == {"kinds": {"1": 2}}
    assert rd.read_summary() == {"passed": 1}


def test_logs_are_written_under_logs(tmp_path: Path) -> None:
    rd = RunDir(tmp_path)
    rd.write_metadata_dump("| offset: 0\n")
    folder = rd.write_node_logs("c1", {names.SERVER_LOG: "s\n", names.CONTROLLER_LOG: ""})
    assert rd.metadata_dump.read_text() == "| offset: 0\n"
    assert folder == rd.node_logs_dir("c1")
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [names.SERVER_LOG, names.CONTROLLER_LOG]
    )


# ------------------------------------------------------------------------ atomic write


def test_atomic_write_replaces_whole(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    target.write_bytes(b"old")
    write_bytes(target, b"new")
    assert target.read_bytes() == b"new" and not tmp_of(target).exists()


def test_atomic_write_on_an_exception_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    with pytest.raises(ValueError), atomic_write(target) as fh:
        fh.write(b'{"half":')
        assert tmp_of(target).exists()  # the content goes to the side first
        raise ValueError("boom")
    assert list(tmp_path.iterdir()) == []  # neither the file nor its temporary copy

    target.write_bytes(b"old")
    with pytest.raises(TypeError):
        write_json(target, {"x": object.__new__(_Unserialisable)})
    assert target.read_bytes() == b"old" and not tmp_of(target).exists()


def test_atomic_write_whose_temporary_file_cannot_be_made(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    tmp_of(target).mkdir()  # in the way
    with pytest.raises(OSError):
        write_bytes(target, b"x")
    assert not target.exists()


class _Unserialisable:
    """jsonable makes it a string; orjson cannot write a string that is not UTF-8."""

    def __str__(self) -> str:
        return "\ud800"


# ------------------------------------------------------------------------ jsonable


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class FancyFloat(float):
    """A YAML loader's scalar type."""


@dataclasses.dataclass(frozen=True)
class Inner:
    path: Path
    tags: frozenset[str]


@dataclasses.dataclass(frozen=True)
class Outer:
    name: str
    inner: Inner
    pairs: tuple[tuple[int, int], ...]


def test_jsonable_makes_plain_json() -> None:
    value = {
        "dc": Outer("o", Inner(Path("/tmp/x"), frozenset({"a"})), ((1, 2),)),
        ("t", 0): {3},
        5: None,
        "enum": [Colour.RED, Level.HIGH],
        Colour.RED: FancyFloat(1.5),
        "when": datetime.date(2026, 11, 25),
        "flag": True,
    }
    out = jsonable(value)
    assert out == {
        "dc": {"name": "o", "inner": {"path": "/tmp/x", "tags": ["a"]}, "pairs": [[1, 2]]},
        "t/0": [3],
        "5": None,
        "enum": ["red", 3],
        "red": 1.5,
        "when": "2026-11-25",
        "flag": True,
    }
    assert type(out["red"]) is float and type(out["enum"][1]) is int
    assert orjson.loads(orjson.dumps(out)) == out


def test_jsonable_leaves_plain_values_alone() -> None:
    for value in (None, True, 0, -1.5, "s", [], {}):
        assert jsonable(value) == value
    assert jsonable(Outer) == str(Outer)  # a class is not a dataclass instance
