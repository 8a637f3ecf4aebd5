"""Progress on the console: each phase with its duration, and a live line for the
workload (elapsed/remaining, sends ok/fail/info, active faults)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

LOG_EVERY_S = 10.0  # without a terminal: one status line this often


class RunProgress:
    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self.started = time.monotonic()

    def note(self, text: str) -> None:
        if not self.quiet:
            self.console.print(text)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        if not self.quiet:
            self.console.print(f"[bold]{name}[/] ...")
        try:
            yield
        except BaseException:
            self.note(f"[red]{name} failed after {time.monotonic() - began:.1f} s[/]")
            raise
        self.note(f"{name}: done in {time.monotonic() - began:.1f} s")

    def workload(
        self, duration: float, status: Callable[[], str], done: Callable[[], bool]
    ) -> None:
        """Wait ``duration`` seconds (or until ``done()``), showing ``status()``."""
        began = time.monotonic()
        end = began + duration
        if self.quiet or not self.console.is_terminal:
            last = 0.0
            while (now := time.monotonic()) < end and not done():
                if not self.quiet and now - last >= LOG_EVERY_S:
                    last = now
                    self.console.print(
                        f"  workload {now - began:5.0f}/{duration:.0f} s  {status()}",
                        highlight=False,
                    )
                time.sleep(0.25)
            return
        columns = (
            TextColumn("[bold]workload"),
            BarColumn(),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            TextColumn("{task.description}"),
        )
        with Progress(*columns, console=self.console, transient=False) as bar:
            task = bar.add_task(status(), total=duration)
            while (now := time.monotonic()) < end and not done():
                bar.update(task, completed=now - began, description=status())
                time.sleep(0.25)
            bar.update(task, completed=duration, description=status())
