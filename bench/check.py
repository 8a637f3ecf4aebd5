"""``kchaos bench check``, the measuring: the full check against merely parsing with ``json``.

Both run side by side on the same generated history, alternately, ``--repeat`` times;
the best time of each is kept and the ratio check / json is printed (goal: <= 1).
``--memory-events N`` also checks an N-event history in a child process and prints its
peak resident memory (goal at 10 million events: <= 2 GB).

``--transactional``: the check of a transactional history (format 1.2, from
``histgen.generate_txn``) against the check of a plain one with as many lines (from
``histgen.generate``), side by side, alternately, best of ``--repeat``; the ratio is of
the cost per line (goal: <= 1.3), with the cost per MB and per value beside it.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kchaos.harness.checker.api import check_history
from kchaos.harness.histgen import GeneratedHistory, generate, generate_txn

#: issue 20: checking a transactional history costs at most this much more per line
TXN_GOAL = 1.3


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


@dataclass(frozen=True)
class Side:
    """One history of the transactional comparison: its size and its best check."""

    lines: int
    mb: float
    values: int  # sent values (a transaction's values one by one)
    seconds: float
    cpu: float
    verdict: object


@dataclass(frozen=True)
class TxnBenchResult:
    txn: Side
    plain: Side

    def _per(self, txn_size: float, plain_size: float) -> float:
        return (self.txn.seconds / txn_size) / (self.plain.seconds / plain_size)

    @property
    def ratio(self) -> float:
        """Seconds per line, transactional / plain: the goal's measure."""
        return self._per(self.txn.lines, self.plain.lines)

    @property
    def cpu_ratio(self) -> float:
        """CPU seconds per line, transactional / plain."""
        t, p = self.txn, self.plain
        return (t.cpu / t.lines) / (p.cpu / p.lines)

    @property
    def per_mb(self) -> float:
        return self._per(self.txn.mb, self.plain.mb)

    @property
    def per_value(self) -> float:
        return self._per(self.txn.values, self.plain.values)


def compare_txn(txn: GeneratedHistory, plain: GeneratedHistory, repeat: int = 3) -> TxnBenchResult:
    """Both checks alternately, ``repeat`` times each; the best wall and CPU time kept."""
    best = {"txn": [float("inf"), float("inf")], "plain": [float("inf"), float("inf")]}
    verdicts: dict[str, object] = {}
    lines: dict[str, int] = {}
    for _ in range(repeat):
        for name, gen in (("txn", txn), ("plain", plain)):
            w, c, res = _timed(check_history, gen.path)
            best[name] = [min(best[name][0], w), min(best[name][1], c)]
            verdicts[name] = res.valid  # type: ignore[attr-defined]
            lines[name] = res.stats["history"]["lines"]  # type: ignore[attr-defined]

    def side(name: str, gen: GeneratedHistory) -> Side:
        wall, cpu = best[name]
        mb = gen.path.stat().st_size / 1e6
        return Side(lines[name], mb, gen.sends, wall, cpu, verdicts[name])

    return TxnBenchResult(side("txn", txn), side("plain", plain))


def txn_report(r: TxnBenchResult) -> list[str]:
    """What ``kchaos bench check --transactional`` prints."""
    out = []
    for name, s in (("transactional", r.txn), ("plain", r.plain)):
        out.append(
            f"{name:13}: {s.lines} lines, {s.mb:.0f} MB, {s.values} values; "
            f"check {s.seconds:7.2f} s (cpu {s.cpu:.2f} s); verdict {s.verdict}"
        )
    met = "met" if r.ratio <= TXN_GOAL else "NOT met"
    out.append(
        f"ratio transactional/plain per line: {r.ratio:.2f} (cpu {r.cpu_ratio:.2f}); "
        f"goal <= {TXN_GOAL} {met}"
    )
    out.append(f"per MB: {r.per_mb:.2f}; per value: {r.per_value:.2f}")
    return out


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


def plain_history(path: Path, events: int, seed: int) -> GeneratedHistory:
    return generate(path, events=events, seed=seed, partitions=6, producers=4, consumers=3)


def txn_history(path: Path, events: int, seed: int) -> GeneratedHistory:
    return generate_txn(path, events=events, seed=seed, partitions=6, producers=4)


def wrong_verdict(what: str, got: object, expected: bool | str) -> str | None:
    """A message when the check of a generated history did not reach the verdict the
    generator promised (``expected``: True, False or "unknown"), else None.

    ``got`` is the checker's ``valid`` (a bool or "unknown"), or its printed form from
    :func:`peak_memory`'s child process.
    """
    if str(got) == str(expected):
        return None
    return f"wrong verdict: the check of {what} said {got}, the generated history is {expected}"
