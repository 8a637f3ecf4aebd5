"""``--parallel P``: up to P cells of a batch at once on one host, each in a process of
its own with a cluster of its own.

Why processes and not threads: much of what one run keeps is per process. The faults
package tracks every started fault in one process-wide set (``faults.base``:
``abort_all`` before the final heal stops *every* duty cycle of the process, and the exit
path's ``refuse_new_faults`` refuses new faults process-wide); ``faults.safety`` installs
its SIGINT/SIGTERM handlers and its atexit heal once per process, from the main thread
only; the runner turns SIGTERM into an interrupt in the main thread only. Two runs in
one process would stop each other's duty cycles and only one of them would be healed on
a signal. In a process of its own, a cell is exactly a sequential run: the same
:func:`~kchaos.harness.run.orchestrate.run_scenario` with the same arguments, reading the
same scenario (handed over pickled on its stdin, so a YAML file, ``--set`` overrides and
the seed need no second parse), writing the same run directory.

What the cells of one host share, and why they do not collide, is in docs/ci.md
("Several clusters on one host"): each run's containers, network, Toxiproxy, loop
devices, mounts, cgroups and state directory carry its own run id, its /24 is one no
other network holds (Docker refuses an overlap and the next candidate is tried), and
``Cluster.start`` reserves the run id's state directory before it creates anything, so
two runs can never share an id, nor can one run's cleanup remove the other's objects.

The parent:

* starts a cell whenever fewer than P run, in plan order; a cell's console goes to
  ``OUT/console/LABEL.log`` (the run directories are the sequential run's);
* never stops because a cell failed: its outcome is recorded and the next starts;
* gives the results to the batch's page writer in plan order, not in the order the
  cells ended, so the page, junit.xml and summary.json are the sequential run's;
* on Ctrl-C or SIGTERM starts no more cells and sends SIGINT to each running cell's
  process group (as a terminal's Ctrl-C does to a sequential run: each run collects,
  heals, tears down and judges); it waits up to :data:`GRACE_S` for them. A second
  Ctrl-C, or the end of that wait, kills what is left (SIGKILL to the process group) and
  removes each killed run's cluster by its run id (``kchaos cleanup --run``'s work).
  Then the page is written with the runs so far and the batch ends interrupted.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from kchaos.harness.errors import ConfigError, KchaosError, RunInterrupted
from kchaos.harness.run.orchestrate import sigterm_as_interrupt
from kchaos.harness.rundir.files import write_json
from kchaos.harness.rundir.rundir import RunDir

# After the first Ctrl-C, how long the running cells get to end on their own (each
# collects its evidence, heals, tears its cluster down and writes its reports).
GRACE_S = 300.0
TICK_S = 0.5  # how often the parent looks at its cells
CELL_MODULE = "kchaos.harness.run.cell"


def check_parallel(value: object) -> int:
    """``--parallel``'s value as a positive integer; ConfigError naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            number = int(str(value).strip())
        except ValueError:
            raise ConfigError(
                f"expected a whole number of cells at once, got {value!r}", field="--parallel"
            ) from None
    else:
        number = value
    if number < 1:
        raise ConfigError(f"must be at least 1, got {number}", field="--parallel")
    return number


def check_environment(parallel: int, environ: Mapping[str, str] | None = None) -> None:
    """What cannot be shared by cells at once: KCHAOS_METRICS_PORT is one fixed host port
    for the harness's /metrics, which a second run could not bind."""
    env = os.environ if environ is None else environ
    if parallel > 1 and env.get("KCHAOS_METRICS_PORT"):
        raise ConfigError(
            "KCHAOS_METRICS_PORT is one host port and each of the cells at once would serve "
            "its metrics on it: unset it (--prometheus gives every run a server and a "
            "port of its own)",
            field="--parallel",
        )


@dataclass(frozen=True)
class Outcome:
    """How a cell ended. ``error``: it left no run to report, and why; ``interrupted``:
    Ctrl-C or SIGTERM cut it short."""

    exit_code: int
    error: str | None = None
    interrupted: bool = False


class Worker(Protocol):
    """One running cell, as the scheduler sees it."""

    def poll(self) -> Outcome | None:
        """The outcome once the cell has ended; None while it runs."""
        ...

    def interrupt(self) -> None:
        """Ask the cell to stop as a Ctrl-C would (it heals and cleans up itself)."""
        ...

    def kill(self) -> Outcome:
        """Stop the cell at once and remove what its run left; its outcome."""
        ...


# (plan index, 0-based; the entry) -> a started Worker
Start = Callable[[int, Any], Worker]
Clock = Callable[[], float]


@dataclass
class Schedule:
    """What :func:`schedule` ended with: the outcome of every cell that started, by plan
    index, and whether Ctrl-C or SIGTERM stopped it."""

    outcomes: dict[int, Outcome]
    interrupted: bool = False


def schedule(
    entries: Sequence[Any],
    parallel: int,
    start: Start,
    *,
    started: Callable[[int, Any], None] = lambda i, e: None,
    ended: Callable[[int, Any, Outcome], None] = lambda i, e, o: None,
    clock: Clock = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    grace: float = GRACE_S,
) -> Schedule:
    """Run every entry through ``start``, at most ``parallel`` at once, in plan order.

    ``started`` and ``ended`` hear of each cell (``ended`` in the order cells end). A
    ``start`` that raises is that cell's failure (exit code of the error), never the
    batch's. Ctrl-C (KeyboardInterrupt) or RunInterrupted while cells run: as the module
    says; the result then has ``interrupted``."""
    parallel = check_parallel(parallel)
    outcomes: dict[int, Outcome] = {}
    running: dict[int, Worker] = {}
    waiting = list(range(len(entries)))

    def finish(i: int, outcome: Outcome) -> None:
        outcomes[i] = outcome
        running.pop(i, None)
        ended(i, entries[i], outcome)

    def look() -> None:
        for i, worker in list(running.items()):
            outcome = worker.poll()
            if outcome is not None:
                finish(i, outcome)

    try:
        while waiting or running:
            while waiting and len(running) < parallel:
                i = waiting.pop(0)
                try:
                    running[i] = start(i, entries[i])
                except KchaosError as exc:
                    finish(i, Outcome(exc.exit_code, str(exc)))
                    continue
                except Exception as exc:  # noqa: BLE001 - one cell's problem, not the batch's
                    finish(i, Outcome(KchaosError.exit_code, f"{type(exc).__name__}: {exc}"))
                    continue
                started(i, entries[i])
            look()
            if running:
                sleep(TICK_S)
    except (KeyboardInterrupt, RunInterrupted):
        _wind_down(running, finish, clock, sleep, grace)
        return Schedule(outcomes, interrupted=True)
    return Schedule(outcomes)


def _wind_down(
    running: dict[int, Worker],
    finish: Callable[[int, Outcome], None],
    clock: Clock,
    sleep: Callable[[float], None],
    grace: float,
) -> None:
    """Interrupt every running cell, wait up to ``grace`` for them, kill the rest."""
    for worker in list(running.values()):
        with contextlib.suppress(Exception):
            worker.interrupt()
    deadline = clock() + grace
    try:
        while running and clock() < deadline:
            for i, worker in list(running.items()):
                outcome = worker.poll()
                if outcome is not None:  # the cell says itself whether it was cut short
                    finish(i, outcome)
            if running:
                sleep(TICK_S)
    except (KeyboardInterrupt, RunInterrupted):
        pass  # a second Ctrl-C: kill what is left now
    for i, worker in list(running.items()):
        try:
            outcome = worker.kill()
        except Exception as exc:  # noqa: BLE001 - the others must still be killed
            outcome = Outcome(RunInterrupted.exit_code, f"killed; its cleanup failed: {exc}")
        finish(i, _as_interrupted(outcome))


def _as_interrupted(outcome: Outcome) -> Outcome:
    return Outcome(outcome.exit_code, outcome.error, interrupted=True)


# ------------------------------------------------------------------ the cell processes


@dataclass(frozen=True)
class CellJob:
    """What a cell's process is handed on its stdin (pickled): run_scenario's arguments
    and where to leave its :class:`Outcome`."""

    scenario: Any  # Scenario
    out: Path
    result: Path
    command: list[str] | None = None
    prometheus: bool = False
    parallel: int = 1
    extra: Mapping[str, Any] | None = None


def write_outcome(path: Path, outcome: Outcome) -> None:
    fields = {"exit_code": outcome.exit_code, "error": outcome.error}
    write_json(path, {**fields, "interrupted": outcome.interrupted})


def read_outcome(path: Path) -> Outcome | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("exit_code"), int):
        return None
    error = None if data.get("error") is None else str(data["error"])
    return Outcome(data["exit_code"], error, bool(data.get("interrupted")))


def remove_run(run_dir: Path) -> str | None:
    """Heal and remove what the run in ``run_dir`` left (its run id from its run.json),
    as ``kchaos cleanup --run RUN_ID`` does; a line saying what went wrong, or None."""
    from kchaos.faults.heal import heal_everything
    from kchaos.harness.cluster.cleanup import cleanup_run
    from kchaos.harness.cluster.containers import docker_client
    from kchaos.harness.rundir.runjson import load_run

    try:
        run_id = load_run(run_dir, missing_ok=True).run_id
    except KchaosError as exc:
        return f"its run id is unknown ({exc}): run `kchaos cleanup`"
    if not run_id:
        return None  # it never got as far as a run id: nothing was created
    try:
        client = docker_client()
    except Exception:  # noqa: BLE001 - without an engine, host-side leftovers still go
        client = None
    try:
        cleanup_run(run_id, client=client, healer=heal_everything)
    except Exception as exc:  # noqa: BLE001 - said, and the batch goes on ending
        return f"cleanup of run {run_id} failed: {exc}: run `kchaos cleanup --run {run_id}`"
    return None


class CellProcess:
    """A cell as a child process: ``python -m kchaos.harness.run.cell`` in a session of
    its own (a terminal's Ctrl-C reaches the parent alone, which passes it on once)."""

    def __init__(
        self,
        job: CellJob,
        log: Path,
        *,
        remove: Callable[[Path], str | None] = remove_run,
        popen: Callable[..., Any] = subprocess.Popen,
    ) -> None:
        self.job = job
        self.log = log
        self.remove = remove
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log_file: IO[bytes] = open(log, "ab")  # noqa: SIM115 - closed when it ends
        try:
            self.proc = popen(
                [sys.executable, "-m", CELL_MODULE],
                stdin=subprocess.PIPE,
                stdout=self._log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            assert self.proc.stdin is not None
            self.proc.stdin.write(pickle.dumps(job))
            self.proc.stdin.close()
        except BaseException:
            self._log_file.close()
            raise

    def poll(self) -> Outcome | None:
        code = self.proc.poll()
        if code is None:
            return None
        return self._ended(code)

    def _ended(self, code: int) -> Outcome:
        self._log_file.close()
        found = read_outcome(self.job.result)
        if found is not None:
            return found
        return Outcome(
            KchaosError.exit_code if code >= 0 else RunInterrupted.exit_code,
            f"its process ended (exit code {code}) without saying how the run ended; "
            f"see {self.log}",
        )

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def interrupt(self) -> None:
        self._signal_group(signal.SIGINT)

    def kill(self) -> Outcome:
        self._signal_group(signal.SIGKILL)
        self.proc.wait()
        self._log_file.close()
        problem = self.remove(self.job.out)
        error = "killed after Ctrl-C (it did not end in time)" + (f"; {problem}" if problem else "")
        return Outcome(RunInterrupted.exit_code, error, interrupted=True)


def console_log(suite_dir: Path, label: str) -> Path:
    return RunDir(suite_dir).cell_console(label)


# ------------------------------------------------------------------ the batch


def run_entries_parallel(
    suite_dir: Path,
    entries: Sequence[Any],
    write: Callable[[list[Any], list[Any]], None],
    *,
    console: Any,
    command: list[str] | None = None,
    prometheus: bool = False,
    log: Any = None,
    parallel: int = 2,
    start: Start | None = None,
) -> int:
    """:func:`kchaos.harness.run.suite.run_entries` with up to ``parallel`` cells at once
    (``start``: instead of a :class:`CellProcess` per cell, for tests). The reports and
    failures go to ``write`` in plan order; shard.json and the durations file (``log``)
    hear of each cell as it ends. 0 when every run ended as expected, else the worst exit
    code; RunInterrupted, after the page is written, when Ctrl-C or SIGTERM stopped it."""
    from kchaos.harness.run.suite import failure
    from kchaos.harness.rundir.expect import worst_exit
    from kchaos.reports.build import read_run_report

    parallel = check_parallel(parallel)
    check_environment(parallel)
    if log is not None:
        log.begin()
    total = len(entries)
    reports: dict[int, Any] = {}
    failures: dict[int, Any] = {}
    codes: list[int] = []
    began: dict[int, float] = {}
    running: set[int] = set()
    console.print(
        f"{total} runs, at most {parallel} at once on {os.cpu_count()} CPUs; each run's "
        f"console: {console_log(suite_dir, 'LABEL')}"
    )

    def started(i: int, entry: Any) -> None:
        began[i] = time.monotonic()
        running.add(i)
        console.print(f"[{i + 1}/{total}] {entry.label}: started ({len(running)} running)")

    def ended(i: int, entry: Any, outcome: Outcome) -> None:
        seconds = time.monotonic() - began.get(i, time.monotonic())
        running.discard(i)
        sc, run_dir = entry.scenario, suite_dir / entry.label
        error = outcome.error
        if outcome.interrupted:
            failures[i] = failure(sc, run_dir, error or "interrupted")
        elif error is not None:
            failures[i] = failure(sc, run_dir, error)
            codes.append(outcome.exit_code)
        else:
            codes.append(outcome.exit_code)
            try:
                reports[i] = read_run_report(run_dir)
            except KchaosError as exc:
                error = "the run's reports could not be written"
                console.print(f"[red]{entry.label}: {exc}[/]")
                failures[i] = failure(sc, run_dir, error)
        said = "interrupted" if outcome.interrupted else f"exit code {outcome.exit_code}"
        console.print(
            f"[{i + 1}/{total}] {entry.label}: {said} after {seconds:.0f} s"
            + (f": {error}" if error else "")
            + f" ({len(running)} running, {total - len(began)} waiting)"
        )
        if log is not None and not outcome.interrupted:
            log.ran(entry, seconds, outcome.exit_code, error)

    results = Path(tempfile.mkdtemp(prefix="kchaos-cells-"))
    try:
        if start is None:
            start = _process_starter(suite_dir, results, command, prometheus, parallel)
        with sigterm_as_interrupt():
            done = schedule(entries, parallel, start, started=started, ended=ended)
    finally:
        shutil.rmtree(results, ignore_errors=True)
    order = sorted(set(reports) | set(failures))
    write(
        [reports[i] for i in order if i in reports],
        [failures[i] for i in order if i in failures],
    )
    if done.interrupted:
        raise RunInterrupted("interrupted")
    code = worst_exit(codes)
    if log is not None:
        log.end(code)
    return code


def _process_starter(
    suite_dir: Path, results: Path, command: list[str] | None, prometheus: bool, parallel: int
) -> Start:
    def start(i: int, entry: Any) -> Worker:
        job = CellJob(
            scenario=entry.scenario,
            out=suite_dir / entry.label,
            result=results / f"cell-{i}.json",
            command=command,
            prometheus=prometheus,
            parallel=parallel,
            extra=entry.extra,
        )
        return CellProcess(job, console_log(suite_dir, entry.label))

    return start
