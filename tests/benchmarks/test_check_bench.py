"""Benchmark (small): the checker against json.loads of every line, side by side.

The full-size numbers come from ``kchaos bench check`` (1M events, and peak memory at
10M with ``--memory-events 10000000``); this keeps the comparison itself exercised.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kchaos.harness.checker.bench import compare, peak_memory
from kchaos.harness.histgen import generate


@pytest.mark.benchmark
def test_check_vs_json_parse_ratio(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    gen = generate(path, events=100_000, seed=2, partitions=6, producers=4, consumers=3)
    result = compare(path, repeat=3)
    print(
        f"\n{gen.events} events: json {result.json_cpu:.2f} s cpu, check "
        f"{result.check_cpu:.2f} s cpu, ratio {result.cpu_ratio:.2f} (wall {result.ratio:.2f})"
    )
    assert result.verdict is True
    # goal <= 1 at a million events; a small history pays fixed costs, so allow headroom
    assert result.cpu_ratio < 1.5


@pytest.mark.benchmark
def test_peak_memory_is_measured_in_a_child(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    generate(path, events=20_000, seed=3)
    seconds, mb, verdict = peak_memory(path)
    print(f"\n20k events: {seconds:.1f} s, peak RSS {mb:.0f} MB")
    assert verdict == "True"
    assert 10 < mb < 2048
