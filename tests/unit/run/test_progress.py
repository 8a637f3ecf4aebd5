"""The progress display driven by a fake clock and a fake run: the batch's estimate, the
live lines in a terminal, plain lines without one, and quiet mode."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fakeclock import FakeClock
from rich.console import Console

from kchaos.harness.run import progress
from kchaos.harness.run.progress import Batch, RunProgress, clock_text, current_batch, each


@pytest.fixture
def clock(fake_clock: FakeClock) -> FakeClock:
    """The fake clock, at 1000 s, moved when the display sleeps (or the test moves it).

    Each display is given ``sleep=clock.sleep``: patching ``time.sleep`` instead patches
    it for the whole process, and py4j's finalizer thread, left by the Spark tests
    (``time.sleep(1)`` in a loop), went through the fake sleep 12,011 times and moved
    this clock on by as many seconds (unit phase of 2026-11-27 11:31, c731968: "run 1 of
    20, 3:20:11 elapsed"; the thread was found alive at this test, its stack in the sleep)."""
    fake_clock.now = 1000.0
    return fake_clock


def console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=200, color_system=None), out


def test_clock_text() -> None:
    assert (clock_text(0), clock_text(75), clock_text(3725)) == ("0:00", "1:15", "1:02:05")


def test_batch_estimate_starts_from_the_guesses_then_learns(clock: FakeClock) -> None:
    b = Batch(3, expected=[100, 100, 100], clock=clock.monotonic)
    b.begin(1, "seed-1")
    assert b.remaining() == 300
    clock.now += 50
    assert b.remaining() == 250
    assert b.status() == "run 1 of 3 (seed-1): 0:50 elapsed, about 4:10 left"
    clock.now += 150  # the first run took 200 s, twice its guess
    b.end()
    b.begin(2, "seed-2")
    assert b.remaining() == 400  # both runs left, each now guessed at 200 s
    clock.now += 60
    assert b.status() == "run 2 of 3 (seed-2): 4:20 elapsed, about 5:40 left"


def test_batch_without_guesses_and_a_budget(clock: FakeClock) -> None:
    b = Batch(12, noun="attempt", at_most=True, clock=clock.monotonic)
    b.begin(1)
    assert b.remaining() is None
    assert "time left unknown" in b.status() and "attempt 1 of at most 12" in b.status()
    clock.now += 30
    b.end()
    b.begin(2)
    assert b.left_text() == "up to about 5:30 left"  # 11 attempts of 30 s


def test_each_keeps_the_batch_current_and_counts(clock: FakeClock) -> None:
    b = Batch(2, clock=clock.monotonic)
    seen = []
    assert current_batch() is None
    for i, x in each(b, ["a", "b"]):
        seen.append((i, x, current_batch() is b, b.index, b.label))
        clock.now += 10
    assert seen == [(1, "a", True, 1, "a"), (2, "b", True, 2, "b")]
    assert current_batch() is None
    assert [t for _, t in b.took] == [10, 10]


def status() -> str:
    return "sends ok 12 fail 0 info 1  faults: pause(broker-2)"


def test_plain_lines_without_a_terminal_name_the_batch(clock: FakeClock) -> None:
    con, out = console(terminal=False)
    b = Batch(5, expected=[100] * 5, clock=clock.monotonic)
    b.begin(1)
    with progress.batch(b):
        p = RunProgress(con, clock=clock.monotonic, sleep=clock.sleep)
        with p.phase("drain"):
            clock.now += 3
        p.workload(30, status, lambda: False)
    lines = out.getvalue().splitlines()
    assert lines[0] == "drain ...  (run 1 of 5)"
    assert lines[1] == "drain: done in 3.0 s"
    work = [line for line in lines if line.startswith("  workload")]
    assert len(work) == 3  # at 0, 10 and 20 s: one every LOG_EVERY_S
    assert "workload    10/30 s  sends ok 12 fail 0 info 1  faults: pause(broker-2)" in work[1]
    assert "| run 1 of 5: " in work[1] and "elapsed, about" in work[1]


def test_quiet_without_a_terminal_prints_nothing(clock: FakeClock) -> None:
    con, out = console(terminal=False)
    with progress.batch(Batch(2, clock=clock.monotonic)):
        p = RunProgress(con, quiet=True, clock=clock.monotonic, sleep=clock.sleep)
        p.note("hello")
        with p.phase("drain"):
            pass
        p.workload(30, status, lambda: False)
    assert out.getvalue() == ""


def test_quiet_in_a_terminal_outside_a_batch_prints_nothing(clock: FakeClock) -> None:
    con, out = console(terminal=True)
    p = RunProgress(con, quiet=True, clock=clock.monotonic, sleep=clock.sleep)
    with p.phase("drain"):
        pass
    p.workload(30, status, lambda: False)
    assert out.getvalue() == ""


def test_live_lines_in_a_terminal_show_the_batch_and_the_run(clock: FakeClock) -> None:
    con, out = console(terminal=True)
    b = Batch(4, expected=[100] * 4, clock=clock.monotonic)
    for _ in each(b, ["seed-7"]):
        p = RunProgress(con, clock=clock.monotonic, sleep=clock.sleep)
        clock.now += 20
        p.workload(30, status, lambda: False)
    text = out.getvalue()
    last = text[text.rindex("runs") :]  # the final frame of the live display
    assert "run 1 of 4, 0:50 elapsed" in last
    assert "workload" in last and "0:30 elapsed, 0:00 left" in last
    assert "faults: pause(broker-2)" in last


def test_a_sleeping_thread_elsewhere_in_the_process_does_not_move_the_clock(
    clock: FakeClock,
) -> None:
    # py4j's finalizer thread sleeps 1 s in a loop for as long as the process lives
    stop = threading.Event()

    def neighbour() -> None:
        while not stop.is_set():
            time.sleep(0.01)

    other = threading.Thread(target=neighbour, daemon=True)
    other.start()
    try:
        con, out = console(terminal=True)
        b = Batch(4, expected=[100] * 4, clock=clock.monotonic)
        for _ in each(b, ["seed-7"]):
            RunProgress(con, clock=clock.monotonic, sleep=clock.sleep).workload(
                30, status, lambda: False
            )
    finally:
        stop.set()
        other.join(5)
    assert clock.now == 1030.0 and sum(clock.slept) == 30.0
    assert "run 1 of 4, 0:30 elapsed" in out.getvalue()


def test_an_80_column_terminal_shows_every_active_fault(clock: FakeClock) -> None:
    """The status has a line of its own under the bars: at 80 columns neither the labels
    nor the fault names are cut (beside the bars they were: ``workl…``, ``pause(broker-…``)."""
    out = io.StringIO()
    con = Console(file=out, force_terminal=True, width=80, color_system=None)
    faults = ["pause(broker-2)", "latency(broker-1,broker-3)", "isolate(broker-3)"]
    many = "sends ok 123456 fail 12 info 345  faults: " + " ".join(faults)
    b = Batch(20, expected=[100] * 20, clock=clock.monotonic)
    for _ in each(b, ["seed-7"]):
        RunProgress(con, clock=clock.monotonic, sleep=clock.sleep).workload(
            30, lambda: many, lambda: False
        )
    text = out.getvalue()
    last = text[text.rindex("runs") :]  # the final frame
    rows = [row for row in last.splitlines() if row.strip()]
    assert rows[0].startswith("runs ") and "run 1 of 20, 0:30 elapsed" in rows[0]
    assert rows[1].startswith("workload ") and "0:30 elapsed, 0:00 left" in rows[1]
    assert "sends ok 123456 fail 12 info 345" in rows[2]
    assert all(f in last for f in faults)
    assert "…" not in last
    assert max(len(row) for row in rows) <= 80


class FrozenDocker:
    """A cluster whose ``pause`` takes as long as the test wants, as a docker pause does
    while the cgroup freezer waits for every task of the container to stop."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def pause(self, node: Any) -> None:
        self.entered.set()
        self.release.wait(30)

    def unpause(self, node: Any) -> None:
        pass


def test_the_display_moves_on_while_a_freezer_pause_takes_effect(clock: FakeClock) -> None:
    """The live display's only reads during the workload are the run's status (counts and
    the registry of active faults): a freezer pause still in its docker call, holding
    its fault's lock, delays none of them; the times move on and the fault is named."""
    from kchaos.faults.pause import Pause
    from kchaos.harness.cluster.api import NodeHandle
    from kchaos.harness.run.orchestrate import _Live

    cluster = FrozenDocker()
    node = NodeHandle(
        2, "broker-2", ("broker",), "c-2", "10.0.0.2", Path("/m"), "/dev/l", Path("/i")
    )
    fault = Pause(cluster, [node], {"mode": "freezer", "pause_s": 0.0, "run_s": 1.0})
    starting = threading.Thread(target=fault.start, daemon=True)
    starting.start()
    seen: list[tuple[float, str]] = []
    con, out = console(terminal=True)
    try:
        assert cluster.entered.wait(10)
        live = _Live()
        live.workload = SimpleNamespace(producers=[SimpleNamespace(counts={"ok": 7, "info": 1})])

        def read() -> str:
            seen.append((clock.now, live.status()))
            return seen[-1][1]

        shown = threading.Thread(
            target=RunProgress(con, clock=clock.monotonic, sleep=clock.sleep).workload,
            args=(30, read, lambda: False),
        )
        shown.start()
        shown.join(10)
        assert not shown.is_alive(), "the display waited for the pause's docker call"
        assert not cluster.release.is_set() and starting.is_alive()  # still in that call
    finally:
        cluster.release.set()
        starting.join(10)
        fault.stop()
    # (the registry of active faults is the process's: faults other unit tests left
    # started may be listed too, so look for this one, not for the whole line)
    named = [now for now, text in seen if "faults: " in text and "pause(broker-2)" in text]
    assert len(named) == len(seen) and max(named) - min(named) >= 30
    assert "0:30 elapsed, 0:00 left" in out.getvalue()
    assert "sends ok 7 fail 0 info 1  faults: " in out.getvalue()
    assert "pause(broker-2)" in out.getvalue()


def test_suite_rules_and_runs_see_their_batch(tmp_path: Path) -> None:
    from kchaos.harness.run.suite import SuiteEntry, run_entries
    from kchaos.harness.scenario import library

    sc = library.load("smoke")
    seen: list[str] = []

    def run(sc: Any, *, out: Path, **_: Any) -> Any:
        b = current_batch()
        assert b is not None
        seen.append(b.position())
        raise progress_error()

    con, out = console(terminal=False)
    entries = [SuiteEntry("a", sc), SuiteEntry("b", sc)]
    run_entries(tmp_path, entries, lambda r, f: None, console=con, run=run)
    assert seen == ["run 1 of 2", "run 2 of 2"]
    text = out.getvalue()
    assert "[1/2] a: 0:00 elapsed, about 2:50 left" in text  # smoke: 30 s + the overhead
    assert "[2/2] b: " in text
    assert current_batch() is None


def progress_error() -> Exception:
    from kchaos.harness.errors import ClusterError

    return ClusterError("no cluster in a unit test")


def test_the_live_line_counts_transactions_when_the_run_has_them() -> None:
    from kchaos.harness.run.orchestrate import _Live

    live = _Live()
    live.workload = SimpleNamespace(producers=[], transactional=[])
    assert "txns" not in live.status()
    live.workload = SimpleNamespace(
        producers=[],
        transactional=[SimpleNamespace(counts={"ok": 3, "fail": 1}),
                       SimpleNamespace(counts={"ok": 2, "info": 1})],
    )  # fmt: skip
    assert "sends ok 0 fail 0 info 0  txns ok 5 fail 1 info 1" in live.status()
