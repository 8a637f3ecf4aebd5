"""``kchaos bench check``: the full check against merely parsing the file with ``json``.

Both run side by side on the same generated history, alternately, ``--repeat`` times;
the best time of each is kept and the ratio check / json is printed (goal: <= 1).
``--memory-events N`` also checks an N-event history in a child process and prints its
peak resident memory (goal at 10 million events: <= 2 GB).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import click

from kchaos.harness.checker.api import check_history
from kchaos.harness.histgen import generate


@dataclass(frozen=True)
class BenchResult:
    events: int
    file_mb: float
    json_seconds: float
    check_seconds: float
    json_cpu: float
    check_cpu: float
    verdict: object

    @property
    def ratio(self) -> float:
        return self.check_seconds / self.json_seconds

    @property
    def cpu_ratio(self) -> float:
        return self.check_cpu / self.json_cpu


def json_baseline(path: Path) -> None:
    """What the check is measured against: json.loads of every line, nothing else."""
    loads = json.loads
    with path.open("rb") as fh:
        for line in fh:
            loads(line)


def _timed(fn: object, *args: object) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(*args)  # type: ignore[operator]
    return time.perf_counter() - wall, time.process_time() - cpu, result


def compare(path: Path, repeat: int = 3) -> BenchResult:
    best_j = best_c = best_jc = best_cc = float("inf")
    verdict: object = None
    events = 0
    for _ in range(repeat):
        w, c, _r = _timed(json_baseline, path)
        best_j, best_jc = min(best_j, w), min(best_jc, c)
        w, c, res = _timed(check_history, path)
        best_c, best_cc = min(best_c, w), min(best_cc, c)
        verdict = res.valid  # type: ignore[attr-defined]
        events = res.stats["history"]["lines"]  # type: ignore[attr-defined]
    size = path.stat().st_size / 1e6
    return BenchResult(events, size, best_j, best_c, best_jc, best_cc, verdict)


def peak_memory(path: Path) -> tuple[float, float, str]:
    """Check ``path`` in a child process: (seconds, peak RSS in MB, verdict)."""
    code = (
        "import sys; from kchaos.harness.checker.api import check_history; "
        "r = check_history(sys.argv[1]); print(r.valid)"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak_kb <= before:
        peak_kb = before  # an earlier child was bigger; still an upper bound
    return seconds, peak_kb / 1024, proc.stdout.strip()


@click.command("check")
@click.option("--events", default=1_000_000, show_default=True, help="History size.")
@click.option("--repeat", default=3, show_default=True, help="Runs of each side.")
@click.option("--seed", default=1, show_default=True)
@click.option("--memory-events", default=0, help="Also measure peak RSS at this size.")
@click.option(
    "--dir",
    "workdir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to write the generated histories (default: a temp dir).",
)
def bench_check_cmd(
    events: int, repeat: int, seed: int, memory_events: int, workdir: Path | None
) -> int:
    """Checker speed vs json.loads of every line (ratio), and peak memory."""
    with tempfile.TemporaryDirectory(prefix="kchaos-bench-check-") as tmp:
        base = workdir or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        path = base / "bench-history.jsonl"
        t0 = time.perf_counter()
        gen = generate(path, events=events, seed=seed, partitions=6, producers=4, consumers=3)
        click.echo(f"generated {gen.events} events in {time.perf_counter() - t0:.1f} s")
        r = compare(path, repeat)
        click.echo(f"history: {r.events} lines, {r.file_mb:.0f} MB; verdict {r.verdict}")
        click.echo(f"json.loads every line: {r.json_seconds:7.2f} s  (cpu {r.json_cpu:.2f} s)")
        click.echo(f"kchaos check         : {r.check_seconds:7.2f} s  (cpu {r.check_cpu:.2f} s)")
        met = "met" if r.ratio <= 1.0 else "NOT met"
        click.echo(f"ratio check/json: {r.ratio:.2f} (cpu {r.cpu_ratio:.2f}); goal <= 1.0 {met}")
        if memory_events:
            big = base / "bench-history-big.jsonl"
            t0 = time.perf_counter()
            generate(big, events=memory_events, seed=seed, partitions=6, producers=4, consumers=3)
            click.echo(f"generated {memory_events} events in {time.perf_counter() - t0:.1f} s")
            seconds, mb, verdict = peak_memory(big)
            click.echo(
                f"check of {memory_events} events: {seconds:.1f} s, peak RSS {mb:.0f} MB, "
                f"verdict {verdict}; goal <= 2048 MB "
                f"{'met' if mb <= 2048 else 'NOT met'}"
            )
            big.unlink()
    return 0
