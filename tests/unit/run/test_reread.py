"""The independent reader's command and the parsing of its output (no cluster)."""

from __future__ import annotations

from kchaos.harness.run.reread import command, expected_counts, parse_output


def test_command_reads_the_whole_topic_with_positions() -> None:
    cmd = command("10.0.0.2:19001", "t", 12)
    assert cmd[0].endswith("kafka-console-consumer.sh")
    assert "--from-beginning" in cmd and cmd[cmd.index("--max-messages") + 1] == "12"
    assert "print.partition=true" in cmd and "print.offset=true" in cmd
    assert "--max-messages" not in command("x:1", "t", 0)


def test_parse_output_skips_what_is_not_a_record() -> None:
    text = (
        "Partition:0\tOffset:0\t1-1|xxxx\n"
        "[2026-11-23 11:00:00,000] WARN something (org.apache.kafka)\n"
        "Partition:2\tOffset:17\tvalue\twith a tab\n"
        "Processed a total of 2 messages\n"
        "Partition:x\tOffset:1\tbad\n"
    )
    assert list(parse_output("t", text)) == [
        {"topic": "t", "partition": 0, "offset": 0, "value": "1-1", "size": 8},
        {"topic": "t", "partition": 2, "offset": 17, "value": "value\twith a tab", "size": 16},
    ]


def test_expected_counts_from_the_drain() -> None:
    class Drain:
        drained = {("t", 0): (5, 15, 10), ("t", 1): (0, 3, 3), ("u", 0): (0, 0, 0)}

    assert expected_counts(Drain()) == {"t": 13, "u": 0}


def test_a_transactional_run_waits_for_the_committed_records_the_drain_read() -> None:
    """Markers and aborted records fill the offsets' span of a transactional topic: the
    read_committed reader never returns that many, so it waits for what the read_committed
    drain read instead (a plain run keeps the span: a record the drain missed is read)."""

    class Drain:
        # 20 offsets, of which 12 committed records; 9 offsets with 6 records
        drained = {("t", 0): (0, 20, 12), ("t", 1): (0, 9, 6), ("u", 0): (4, 4, 0)}

    assert expected_counts(Drain(), committed=True) == {"t": 18, "u": 0}
    assert expected_counts(Drain(), committed=False) == {"t": 29, "u": 0}
