"""Progress on the console: each phase with its duration, and a live line for the
workload (elapsed/remaining, sends ok/fail/info, active faults).

Long work (``suite``, ``matrix``, ``soak``, ``shrink``) runs many runs one after another;
it opens a :class:`Batch` with :func:`batch` and every run started inside shows, next to
its own line, where the batch stands: run n of N, the batch's elapsed time and an
estimate of what is left.

What is shown depends on the console:

* a terminal: while a phase runs, a transient line (phase, its elapsed time, the batch);
  during the workload a live bar per line (the batch, the run's workload with elapsed and
  remaining time), then the sends and active faults on a line of their own;
* no terminal (CI logs): plain lines only, a phase's start and end and one workload
  status line every :data:`LOG_EVERY_S` seconds, each naming the batch's position;
* quiet (``kchaos run --quiet``, the attempts of ``shrink``): no lines are printed; in a
  terminal a batch's live line is still shown and erased when the run ends.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from rich.console import Console, RenderableType
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn
from rich.text import Text

LOG_EVERY_S = 10.0  # without a terminal: one status line this often
# What a run costs besides its workload (images, cluster start, drain, independent
# reader, replica dumps, check, reports, teardown): the first guess of a batch's length,
# before any of its runs has finished. Measured 2026-11-23 on 2 cores, 3 brokers, 4.4.0.
RUN_OVERHEAD_S = 55.0
REFRESH_PER_S = 2.0

Clock = Callable[[], float]
T = TypeVar("T")


def clock_text(seconds: float) -> str:
    """``75`` -> ``1:15``; ``3725`` -> ``1:02:05``."""
    s = max(0, int(round(seconds)))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Batch:
    """Where a batch of runs stands: item n of N, elapsed, and an estimate of what is left.

    ``expected`` holds a guess of each item's seconds (e.g. its workload plus the measured
    overhead of a run); once items have finished, the guesses are scaled by how long the
    finished ones really took against their guesses. ``at_most`` says N is a budget that
    may not be used up (``shrink``): the remaining time is then the most it can take.
    """

    def __init__(
        self,
        total: int,
        *,
        noun: str = "run",
        expected: Sequence[float] = (),
        at_most: bool = False,
        clock: Clock = time.monotonic,
    ) -> None:
        self.total = total
        self.noun = noun
        self.expected = list(expected) or [1.0] * total
        self.guessed = bool(expected)
        self.at_most = at_most
        self.clock = clock
        self.started = clock()
        self.index = 0  # 1-based number of the current item; 0 before the first
        self.label = ""
        self.item_started = self.started
        self.took: list[tuple[float, float]] = []  # (expected, actual) of finished items

    def begin(self, index: int, label: str = "") -> None:
        self.index, self.label = index, label
        self.item_started = self.clock()

    def end(self) -> None:
        """The current item finished (whatever its outcome)."""
        if self.index:
            self.took.append((self._guess(self.index), self.clock() - self.item_started))

    def _guess(self, index: int) -> float:
        i = min(max(index, 1), len(self.expected)) - 1
        return self.expected[i] if self.expected else 1.0

    def elapsed(self) -> float:
        return self.clock() - self.started

    def remaining(self) -> float | None:
        """Seconds left (an estimate), None while nothing says how long an item takes."""
        if self.took:
            scale = sum(a for _, a in self.took) / max(sum(e for e, _ in self.took), 1e-9)
        elif self.guessed:
            scale = 1.0
        else:
            return None
        later = sum(self._guess(i) for i in range(self.index + 1, self.total + 1))
        current = 0.0
        if self.index:
            current = max(0.0, scale * self._guess(self.index) - (self.clock() - self.item_started))
        return scale * later + current

    def position(self) -> str:
        of = "of at most" if self.at_most else "of"
        return f"{self.noun} {self.index} {of} {self.total}"

    def left_text(self) -> str:
        """``about 22:00 left`` (``up to about`` for a budget that may not be used up)."""
        left = self.remaining()
        if left is None:
            return f"time left unknown until a {self.noun} has finished"
        return f"{'up to about' if self.at_most else 'about'} {clock_text(left)} left"

    def times(self) -> str:
        """``4:10 elapsed, about 22:00 left``."""
        return f"{clock_text(self.elapsed())} elapsed, {self.left_text()}"

    def status(self) -> str:
        """``run 3 of 20 (seed-3): 4:10 elapsed, about 22:00 left``."""
        label = f" ({self.label})" if self.label else ""
        return f"{self.position()}{label}: {self.times()}"


def run_guess(workload_s: float) -> float:
    """A first guess of one run's seconds."""
    return workload_s + RUN_OVERHEAD_S


_current: contextvars.ContextVar[Batch | None] = contextvars.ContextVar("batch", default=None)


def current_batch() -> Batch | None:
    return _current.get()


@contextlib.contextmanager
def batch(b: Batch) -> Iterator[Batch]:
    """Runs started in the block show ``b``'s position next to their own progress."""
    token = _current.set(b)
    try:
        yield b
    finally:
        _current.reset(token)


@contextlib.contextmanager
def item(b: Batch, index: int, label: str = "") -> Iterator[Batch]:
    """Item ``index`` of ``b`` runs in the block."""
    b.begin(index, label)
    try:
        yield b
    finally:
        b.end()


def each(b: Batch, items: Iterable[T], label: Callable[[T], str] = str) -> Iterator[tuple[int, T]]:
    """``enumerate(items, 1)`` that keeps ``b`` current and marks each item's start and
    end: ``for i, entry in each(b, entries): run(...)``."""
    previous = _current.get()
    _current.set(b)
    try:
        for i, x in enumerate(items, 1):
            b.begin(i, label(x))
            try:
                yield i, x
            finally:
                b.end()
    finally:
        _current.set(previous)


class _Line:
    """A renderable computed afresh at every refresh (times move on their own)."""

    def __init__(self, text: Callable[[], str]) -> None:
        self.text = text

    def __rich__(self) -> Text:
        return Text(self.text(), style="dim", no_wrap=True, overflow="ellipsis")


class _Bars(Progress):
    """The bars, then the workload's status (sends, active faults) on a line of its own.

    Beside the bars, a status naming faults outgrew an 80-column terminal and Rich cut
    every column to fit: the labels, the times and the fault names (``workl… 0:06
    elapsed, 0:19 le… ... faults: pause(broker-…``). On its own line the status has the
    whole width and wraps when even that is too little."""

    status = ""  # set by the loop that updates the bars, read when the display refreshes

    def get_renderables(self) -> Iterable[RenderableType]:
        yield self.make_tasks_table(self.tasks)
        yield Text(f"  {self.status}", overflow="fold")


class RunProgress:
    def __init__(
        self,
        console: Console,
        *,
        quiet: bool = False,
        clock: Clock = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.console = console
        self.quiet = quiet
        self.clock = clock
        self.sleep = sleep  # the workload wait's pause between two frames (or lines)
        self.started = clock()
        self.batch = current_batch()
        self._live_active = False

    @property
    def live(self) -> bool:
        """Live (redrawn, transient) lines: a terminal, and not quiet unless in a batch."""
        return self.console.is_terminal and (not self.quiet or self.batch is not None)

    def note(self, text: str) -> None:
        if not self.quiet:
            self.console.print(text)

    def _batch_suffix(self) -> str:
        return f"  [{self.batch.status()}]" if self.batch is not None else ""

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        began = self.clock()
        if not self.quiet:
            head = f"[bold]{name}[/] ..."
            if not self.console.is_terminal and self.batch is not None:
                head += f"  ({self.batch.position()})"
            self.console.print(head)
        try:
            with self._phase_line(name, began):
                yield
        except BaseException:
            self.note(f"[red]{name} failed after {self.clock() - began:.1f} s[/]")
            raise
        self.note(f"{name}: done in {self.clock() - began:.1f} s")

    @contextlib.contextmanager
    def _phase_line(self, name: str, began: float) -> Iterator[None]:
        """In a terminal: a transient line with the phase's elapsed time and the batch."""
        if not self.live or self._live_active:
            yield
            return

        def text() -> str:
            return f"  {name} {clock_text(self.clock() - began)}{self._batch_suffix()}"

        self._live_active = True
        try:
            with Live(
                _Line(text),
                console=self.console,
                transient=True,
                refresh_per_second=REFRESH_PER_S,
            ):
                yield
        finally:
            self._live_active = False

    def status_line(self, elapsed: float, duration: float, status: str) -> str:
        """The plain workload line (no terminal), with the batch's position."""
        line = f"  workload {elapsed:5.0f}/{duration:.0f} s  {status}"
        if self.batch is not None:
            line += f"  | {self.batch.status()}"
        return line

    def workload(
        self, duration: float, status: Callable[[], str], done: Callable[[], bool]
    ) -> None:
        """Wait ``duration`` seconds (or until ``done()``), showing ``status()``."""
        began = self.clock()
        end = began + duration
        if not self.live:
            last: float | None = None
            while (now := self.clock()) < end and not done():
                if not self.quiet and (last is None or now - last >= LOG_EVERY_S):
                    last = now
                    self.console.print(
                        self.status_line(now - began, duration, status()),
                        highlight=False,
                        soft_wrap=True,  # one line in a log, however long
                    )
                self.sleep(0.25)
            return
        columns = (
            TextColumn("[bold]{task.fields[name]:<8}"),
            BarColumn(bar_width=24),
            TextColumn("{task.fields[times]}"),
            TextColumn("{task.description}"),
        )

        def times(now: float) -> str:
            return f"{clock_text(now - began)} elapsed, {clock_text(end - now)} left"

        with _Bars(
            *columns,
            console=self.console,
            transient=self.quiet,
            refresh_per_second=REFRESH_PER_S * 2,
        ) as bar:
            outer = None
            if self.batch is not None:
                b = self.batch
                outer = bar.add_task("", total=b.total, name=b.noun + "s", times="")
            bar.status = status()
            task = bar.add_task("", total=duration, name="workload", times=times(began))
            while True:
                now = self.clock()
                finished = now >= end or done()
                if outer is not None and self.batch is not None:
                    b = self.batch
                    part = min(1.0, (now - began) / max(duration, 1e-9))
                    bar.update(
                        outer,
                        completed=b.index - 1 + part,
                        times=f"{b.position()}, {clock_text(b.elapsed())} elapsed,",
                        description=b.left_text(),
                    )
                bar.status = status()
                bar.update(task, completed=min(now - began, duration), times=times(min(now, end)))
                if finished:
                    break
                self.sleep(0.25)
