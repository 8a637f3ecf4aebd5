"""Running build tools: every step prints what it does and how long it took, and a
failing tool becomes an ImageBuildError carrying the tail of its output."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TextIO

from kchaos.harness.errors import ImageBuildError

TAIL_LINES = 25


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    output: str  # stdout and stderr, interleaved


class Runner(Protocol):
    """Runs one command to completion. Unit tests pass a fake."""

    def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Completed: ...


def subprocess_runner(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> Completed:
    """The real runner: output captured (not streamed), a missing program is rc 127."""
    try:
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        return Completed(tuple(argv), 127, f"{argv[0]}: not found ({exc})")
    except subprocess.TimeoutExpired as exc:
        out = exc.output.decode(errors="replace") if isinstance(exc.output, bytes) else ""
        return Completed(tuple(argv), 124, out + f"\n(timed out after {timeout} s)")
    return Completed(tuple(argv), proc.returncode, proc.stdout.decode(errors="replace"))


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


@dataclass
class Reporter:
    """Prints ``[images] step ... result (1.2s)`` lines; keeps them for tests."""

    out: TextIO | None = None
    lines: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        line = f"[images] {text}"
        self.lines.append(line)
        stream = self.out if self.out is not None else sys.stdout
        print(line, file=stream, flush=True)

    @contextmanager
    def step(self, what: str) -> Iterator[StepResult]:
        """Announce ``what``, run the body, then print its result and duration."""
        result = StepResult()
        start = time.monotonic()
        self.say(f"{what} ...")
        try:
            yield result
        except BaseException:
            self.say(f"{what}: FAILED ({time.monotonic() - start:.1f}s)")
            raise
        self.say(f"{what}: {result.text} ({time.monotonic() - start:.1f}s)")


@dataclass
class StepResult:
    text: str = "done"


def check(done: Completed, what: str, log: Path | None = None) -> Completed:
    """Raise ImageBuildError (message + output tail) unless the command succeeded."""
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(" ".join(done.argv) + "\n" + done.output)
    if done.returncode != 0:
        where = f" (full output: {log})" if log is not None else ""
        raise ImageBuildError(
            f"{what} failed: `{' '.join(done.argv)}` exited with {done.returncode}{where}\n"
            f"--- last lines ---\n{tail(done.output)}"
        )
    return done
