"""`kchaos bench produce --transactional` without Kafka: its options, the clock and the
count of committed values, the rounds' order, the ratios and the printed table, all with
fakes. The figure itself needs a cluster and is not measured here."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kchaos.bench import produce, produce_txn
from kchaos.bench.produce import Case, parse_produce_args
from kchaos.cli.main import cli
from kchaos.harness.errors import ConfigError, WorkloadError
from kchaos.harness.rundir.history_writer import HistoryWriter, NullSink


def test_the_options_and_their_defaults() -> None:
    plain = parse_produce_args("100,1024", None, None)
    assert plain.libs == ("confluent-kafka", "kafka-python") and not plain.transactional
    assert plain.records == {100: 200_000, 1024: 60_000}
    txn = parse_produce_args("100", None, 5000, transactional=True, max_sends=8)
    assert txn.libs == ("confluent-kafka",) and txn.records == {100: 5000} and txn.max_sends == 8
    java = parse_produce_args("100", "java", 5000, transactional=True)
    assert java.libs == ("java",)
    # confluent, the option's old spelling of confluent-kafka, still reads
    old = parse_produce_args("100", "confluent,kafka-python", None)
    assert old.libs == ("confluent-kafka", "kafka-python")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"clients": "kafka-python"}, "--clients"),
        ({"clients": "confluent,java"}, "--clients"),
        ({"perf_props": "batch.size=1"}, "--perf-props"),
        ({"max_sends": 0}, "--max-sends"),
        ({"sizes": "1k"}, "--sizes"),
        ({"records": 0}, "--records"),
    ],
)
def test_bad_transactional_options_name_the_option(kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {"sizes": "100", "clients": None, "records": None}
    args.update(kwargs)
    with pytest.raises(ConfigError) as err:
        parse_produce_args(**args, transactional=True)
    assert err.value.field == field and err.value.exit_code == 3


class FakeWorker:
    """Commits transactions of ``per_txn`` values through the sink until stopped."""

    def __init__(self, config: Any, sink: Any, stop: threading.Event, per_txn: int) -> None:
        self.config, self.sink, self.stop, self.per_txn = config, sink, stop, per_txn

    def run(self) -> None:
        self.sink.append({"process": 1, "type": "invoke", "f": "txn-init"})
        self.sink.append({"process": 1, "type": "ok", "f": "txn-init"})
        n = 0
        while not self.stop.is_set():
            sends = [{"topic": "t", "value": f"1-{n}-{i}"} for i in range(self.per_txn)]
            self.sink.append({"process": 1, "type": "invoke", "f": "txn", "sends": sends})
            if n % 3 == 2:  # aborted ones do not count
                self.sink.append({"process": 1, "type": "fail", "f": "txn"})
            else:
                self.sink.append({"process": 1, "type": "ok", "f": "txn", "sends": sends})
            n += 1
            if self.per_txn == 0:
                self.stop.wait(0.01)


def test_only_committed_values_count_and_recording_decides_the_kind(tmp_path: Path) -> None:
    made: list[FakeWorker] = []

    def factory(config: Any, sink: Any, stop: threading.Event) -> FakeWorker:
        made.append(FakeWorker(config, sink, stop, 4))
        return made[-1]

    bare = produce_txn.run_txn("b:9092", "topic-1", 100, 30, NullSink(), 8, 2, factory=factory)
    assert (bare.kind, bare.client, bare.size) == ("txn-bare", "confluent-kafka", 100)
    assert bare.round == 2
    assert bare.records == 32 and bare.seconds > 0  # 8 committed transactions of 4
    spec = made[0].config.spec
    assert made[0].config.topics == ("topic-1",) and made[0].config.role == "producer"
    assert (spec.abort_ratio, spec.rate, spec.max_sends, spec.message_size) == (0.0, 0, 8, 100)
    path = tmp_path / "h.jsonl"
    with HistoryWriter(path) as writer:
        rec = produce_txn.run_txn("b:9092", "topic-2", 100, 30, writer, 8, factory=factory)
    assert rec.kind == "txn-recording" and rec.records == 32
    lines = path.read_bytes().splitlines()
    assert len(lines) == 2 + 2 * 11  # init, then 11 transactions (8 committed, 3 aborted)


def test_the_java_client_runs_the_same_worker_with_kafkas_producer() -> None:
    made: list[FakeWorker] = []

    def factory(config: Any, sink: Any, stop: threading.Event) -> FakeWorker:
        made.append(FakeWorker(config, sink, stop, 5))
        return made[-1]

    where = {"image": "kchaos/kafka:4.4.0", "run_id": "r1", "subnet": "10.1.2.0/24"}
    case = produce_txn.run_txn("b:9092", "t", 100, 20, NullSink(), 8, factory=factory, java=where)
    assert (case.kind, case.client, case.records) == ("txn-bare", "java", 20)
    assert made[0].config.lib == "java" and made[0].config.java == where
    rows = produce_txn.txn_ratios(
        [Case("idempotent", "confluent-kafka", 100, 1000, 1.0, 0),
         Case("txn-recording", "java", 100, 1000, 2.0, 0),
         Case("txn-bare", "java", 100, 1000, 2.0, 0)]
    )  # fmt: skip
    assert rows[0]["client"] == "java" and rows[0]["txn_recording_vs_bare"] == 1.0


def test_a_producer_that_commits_nothing_is_an_error() -> None:
    def factory(config: Any, sink: Any, stop: threading.Event) -> FakeWorker:
        return FakeWorker(config, sink, stop, 0)

    with pytest.raises(WorkloadError, match="only 0 of 10 values committed"):
        produce_txn.run_txn("b", "t", 100, 10, NullSink(), 4, factory=factory, deadline_s=0.2)


def test_rounds_warm_up_then_rotate_the_order() -> None:
    calls: list[tuple[str, int, int, int]] = []
    logged: list[Case] = []

    def run_case(kind: str, size: int, n: int, round_: int) -> Case:
        calls.append((kind, size, n, round_))
        return Case(kind, "confluent-kafka", size, n, 1.0, round_)

    cases = produce_txn.txn_rounds([100], {100: 50_000}, 3, run_case, logged.append)
    assert calls[:3] == [(k, 100, 5000, -1) for k in produce_txn.KINDS]
    assert [c.kind for c in cases] == [
        "idempotent", "txn-recording", "txn-bare",
        "txn-recording", "txn-bare", "idempotent",
        "txn-bare", "idempotent", "txn-recording",
    ]  # fmt: skip
    assert logged == cases and all(c.records == 50_000 for c in cases)


def rounds(*rates: tuple[float, float, float]) -> list[Case]:
    """Cases of 1000 values each: (idempotent, txn-recording, txn-bare) rates per round."""
    out = []
    for r, trio in enumerate(rates):
        for kind, rate in zip(produce_txn.KINDS, trio, strict=True):
            out.append(Case(kind, "confluent-kafka", 100, 1000, 1000 / rate, r))
    return out


def test_ratios_are_medians_of_each_rounds_pairs_and_the_table_says_the_goal() -> None:
    rows = produce_txn.txn_ratios(rounds((1000, 500, 600), (2000, 900, 1000), (1000, 400, 800)))
    (row,) = rows
    assert row["rounds"] == 3
    assert (row["idempotent_rps"], row["txn_recording_rps"], row["txn_bare_rps"]) == (
        1000,
        500,
        800,
    )
    assert row["txn_vs_idempotent"] == 0.45  # median of 0.5, 0.45, 0.4
    assert row["txn_recording_vs_bare"] == 0.833  # median of 0.833, 0.9, 0.5
    assert row["txn_recording_vs_bare_per_round"] == [0.833, 0.9, 0.5]
    table = produce_txn.report_lines(rows)
    assert table[1].split() == [
        "confluent-kafka", "100", "1000", "500", "800", "0.450", "0.833", "met"
    ]  # fmt: skip
    low = produce_txn.report_lines(produce_txn.txn_ratios(rounds((1000, 500, 1000))))
    assert low[1].endswith("NOT met") and "txn-recording / txn-bare >= 0.8" in low[-1]


def test_the_command_end_to_end_with_fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    class FakeCluster:
        run_id = "fake"
        bootstrap_servers = "fake:9092"

    seen: list[tuple[str, int, int, int]] = []

    @contextlib.contextmanager
    def fake_cluster(args: produce.ProduceArgs) -> Iterator[FakeCluster]:
        assert args.transactional and args.max_sends == 10
        yield FakeCluster()

    def fake_cases(
        bootstrap: str, max_sends: int, workdir: Path, java: Any = None
    ) -> produce_txn.RunCase:
        assert (bootstrap, max_sends, java) == ("fake:9092", 10, None)

        def run_case(kind: str, size: int, n: int, round_: int) -> Case:
            seen.append((kind, size, n, round_))
            rate = {"idempotent": 4000.0, "txn-recording": 1800.0, "txn-bare": 2000.0}[kind]
            return Case(kind, "confluent-kafka", size, n, n / rate, round_)

        return run_case

    monkeypatch.setattr(produce, "bench_cluster", fake_cluster)
    monkeypatch.setattr(produce_txn, "real_cases", fake_cases)
    out = tmp_path / "bench.json"
    args = ["bench", "produce", "--transactional", "--sizes", "100", "--records", "3000",
            "--repeat", "2", "--max-sends", "10", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(cli, args, standalone_mode=False)
    assert result.exception is None, result.output
    assert len(seen) == 3 + 6
    assert "txn-recording" in result.output and "0.450" in result.output
    assert "0.900  met" in result.output
    body = json.loads(out.read_text())
    assert body["transactional"] is True and body["max_sends"] == 10
    assert len(body["cases"]) == 6 and body["ratios"][0]["txn_recording_vs_bare"] == 0.9
    bad = CliRunner().invoke(
        cli, ["bench", "produce", "--transactional", "--clients", "kafka-python"],
        standalone_mode=False,
    )  # fmt: skip
    assert isinstance(bad.exception, ConfigError) and bad.exception.field == "--clients"
