"""The Replicas section of report.html, from results.json's stats.replicas."""

from __future__ import annotations

from kchaos.reports import replicas


def test_no_comparison_no_section() -> None:
    assert replicas.render(None) == "" and replicas.render({"stats": {}}) == ""


def test_a_disagreement_and_a_duplicate_sequence_are_spelled_out() -> None:
    held = {"broker": 1, "offset": 4, "leader_epoch": 2, "producer_id": 7,
            "producer_epoch": 0, "sequence": 4, "value": "1-4"}  # fmt: skip
    part = {
        "topic": "t", "partition": 0, "replicas": [1, 2], "in_sync": [1, 2],
        "unavailable": [3], "high_watermark": 10, "offsets_compared": 10,
        "disagreements": 1, "duplicate_sequences": 1,
        "first_disagreements": [
            {"offset": 4, "replicas": [held, {"broker": 2, "offset": 4, "held": False}]}
        ],
        "first_duplicate_sequences": [
            {"producer_id": 7, "producer_epoch": 0, "sequence": 5, "offsets": [5, 6],
             "brokers": [1, 2]}
        ],
    }  # fmt: skip
    stats = {"partitions": [part], "brokers_unavailable": {"3": "container not running"},
             "offsets_compared": 10, "disagreements": 1, "duplicate_sequences": 1}  # fmt: skip
    html = replicas.render({"stats": {"replicas": stats}})
    assert "<h2>Replicas</h2>" in html and "<tr class='bad'><td>t/0</td>" in html
    assert "offset 4: broker 1: 1-4 (leader epoch 2, producer 7/0 seq 4); broker 2: nothing" in html
    assert "sequence 5 at offsets [5, 6] on brokers [1,2]" in html
    assert "broker 3: container not running" in html


def test_a_clean_partition_is_not_marked() -> None:
    part = {"topic": "t", "partition": 1, "replicas": [1, 2, 3], "in_sync": None,
            "high_watermark": 3, "offsets_compared": 3, "disagreements": 0,
            "duplicate_sequences": 0}  # fmt: skip
    html = replicas.render({"stats": {"replicas": {"partitions": [part]}}})
    assert "<tr><td>t/1</td><td>[1,2,3]</td><td>unknown</td>" in html
