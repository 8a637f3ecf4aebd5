"""Scenario keys for transactions: `workload.transactions` and `consumers.isolation`
become the plan's TxnSpec and read_committed readers; bad values name file, line
and field; the dumped form loads back the same."""

from __future__ import annotations

import pytest

from kchaos.harness.errors import ConfigError
from kchaos.harness.scenario import library, load_scenario
from kchaos.harness.scenario.dump import file_data, to_yaml

BASE = """\
name: t-txn
description: A scenario used by the transaction keys' unit tests, long enough.
cluster: {brokers: 3}
topics:
  - {name: a}
  - {name: b}
  - {name: out}
workload:
  duration: 30s
  producers: {count: 0}
  consumers: {count: 1, isolation: read_committed}
  transactions:
    producers: 2
    max_sends: 3
    abort_ratio: 0.5
    rate: 0
    timeout: 15s
    readers: {subscribe: 2, assign: 1, group: rc}
    copier: {input: a, output: out, max_batch: 7}
    configs: {linger.ms: 1}
"""


def load(text: str):
    return load_scenario("s.yaml", text=text)


def test_transactions_become_the_plans_transactional_workers_and_readers():
    sc = load(BASE)
    w = sc.plan.workload
    tx = w.transactions
    assert tx is not None
    assert (tx.producers, tx.max_sends, tx.abort_ratio, tx.max_rate, tx.timeout_ms) == (
        2, 3, 0.5, None, 15000,
    )  # fmt: skip
    assert tx.process and tx.configs == {"linger.ms": "1"}
    assert tx.copier is not None and (tx.copier.input, tx.copier.output) == ("a", "out")
    assert tx.copier.max_batch == 7
    assert tx.producer_topics(w.topics) == ("a", "b")  # not the copier's output
    c = w.consumers  # workload.consumers, as the file says
    assert (c.count, c.mode, c.isolation) == (1, "subscribe", "read_committed")
    # the transactional readers follow from transactions.readers
    assert [(c.count, c.mode, c.isolation) for c in w.txn_readers()] == [
        (2, "subscribe", "read_committed"), (1, "assign", "read_committed"),
    ]  # fmt: skip
    assert len(w.consumer_workers()) == 4
    assert [(c.mode, c.group) for c in w.consumer_workers()][1:3] == [("subscribe", "rc")] * 2


@pytest.mark.parametrize(
    ("old", "new", "line", "field", "words"),
    [
        ("input: a,", "input: nope,", 19, "workload.transactions.copier.input", "not a workload"),
        ("abort_ratio: 0.5", "abort_ratio: 2", 15, "workload.transactions.abort_ratio", "1"),
        ("isolation: read_committed", "isolation: serializable", 11,
         "workload.consumers.isolation", "not one of"),
        ("max_sends: 3", "max_sends: 0", 14, "workload.transactions.max_sends", "minimum"),
        ("timeout: 15s", "timeout: 500ms", 17, "workload.transactions.timeout", "at least 1 s"),
        ("    rate: 0\n", "    rate: 0\n    after_unfinished_commit: retry\n", 17,
         "workload.transactions.after_unfinished_commit", "not one of ['reinit', 'keep-going']"),
    ],
)  # fmt: skip
def test_bad_transaction_keys_name_file_line_and_field(old, new, line, field, words):
    assert old in BASE
    with pytest.raises(ConfigError) as err:
        load(BASE.replace(old, new))
    assert err.value.line == line, str(err.value)
    assert err.value.field == field, str(err.value)
    assert words in str(err.value)
    assert str(err.value).startswith(f"s.yaml:{line}: ")


def test_after_unfinished_commit_reaches_the_plan_and_defaults_to_reinit():
    assert load(BASE).plan.workload.transactions.after_unfinished_commit == "reinit"
    text = BASE.replace("    rate: 0\n", "    rate: 0\n    after_unfinished_commit: keep-going\n")
    sc = load(text)
    assert sc.workload.transactions.after_unfinished_commit == "keep-going"
    assert sc.plan.workload.transactions.after_unfinished_commit == "keep-going"
    assert sc.to_dict()["workload"]["transactions"]["after_unfinished_commit"] == "keep-going"


def test_the_workers_spec_refuses_an_unknown_mode_by_its_field():
    from kchaos.workloads.spec import TxnSpec

    with pytest.raises(ConfigError, match="reinit, keep-going") as err:
        TxnSpec(after_unfinished_commit="retry").validate(("a",))  # type: ignore[arg-type]
    assert err.value.field == "transactions.after_unfinished_commit"


def test_transactions_need_confluent_kafka():
    text = BASE.replace("  duration: 30s\n", "  duration: 30s\n  client: kafka-python\n")
    with pytest.raises(ConfigError, match="confluent-kafka") as err:
        load(text)
    assert err.value.field == "workload.transactions"


@pytest.mark.parametrize("mode", [None, "keep-going"])
def test_the_dumped_scenario_loads_back_the_same(mode):
    text = BASE
    if mode is not None:
        text = BASE.replace("    rate: 0\n", f"    rate: 0\n    after_unfinished_commit: {mode}\n")
    sc = load(text)
    again = load_scenario("again.yaml", text=to_yaml(file_data(sc.to_dict()), ""))
    assert again.workload == sc.workload


def test_txn_smoke_is_in_the_library_and_drains_read_committed():
    sc = library.load("txn-smoke")
    assert sc.expect.valid is True
    tx = sc.plan.workload.transactions
    assert tx is not None and tx.producers == 2 and tx.copier is not None
    assert len(sc.description.split()) > 60  # the library's explanatory paragraph
