"""``kchaos matrix --parallel P`` without Docker: the scheduler with fake cells, the
batch against a sequential run of the same plan, the cell process's protocol, and bad
values of --parallel."""

from __future__ import annotations

import io
import json
import pickle
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sample_runs import LOST, VALID, make_run

from kchaos.cli import main as cli
from kchaos.harness.errors import ClusterError, ConfigError, KchaosError, RunInterrupted
from kchaos.harness.run import cell, matrix, parallel
from kchaos.harness.run.parallel import CellJob, CellProcess, Outcome, schedule
from kchaos.harness.scenario import library
from kchaos.reports.build import write_run_reports

KNOWN = {"3.4.1", "3.5.2", "4.4.0"}


def resolver(version: str) -> str | None:
    return None if version in KNOWN else f"Maven Central has no kafka_2.13:{version}"


class Clock:
    """A clock that moves only when the scheduler sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeWorker:
    """A cell that runs ``polls`` looks of the scheduler, then ends with ``outcome``."""

    def __init__(self, pool: Pool, i: int, polls: int, outcome: Outcome | None) -> None:
        self.pool, self.i, self.polls, self.outcome = pool, i, polls, outcome
        self.interrupted = self.killed = False

    def poll(self) -> Outcome | None:
        if self.interrupted and self.pool.obey_interrupt:
            return self._end(Outcome(130, "interrupted", interrupted=True))
        self.polls -= 1
        if self.polls > 0 or self.outcome is None:
            return None
        return self._end(self.outcome)

    def _end(self, outcome: Outcome) -> Outcome:
        self.pool.running.discard(self.i)
        self.pool.events.append(("end", self.i))
        return outcome

    def interrupt(self) -> None:
        self.interrupted = True
        self.pool.events.append(("interrupt", self.i))

    def kill(self) -> Outcome:
        self.killed = True
        self.pool.running.discard(self.i)
        self.pool.events.append(("kill", self.i))
        return Outcome(130, "killed", interrupted=True)


class Pool:
    """Starts FakeWorkers and keeps the most that ran at once."""

    def __init__(
        self,
        polls: list[int],
        outcomes: dict[int, Outcome | None] | None = None,
        fail_start: dict[int, Exception] | None = None,
    ) -> None:
        self.polls = polls
        self.outcomes = outcomes or {}
        self.fail_start = fail_start or {}
        self.running: set[int] = set()
        self.most = 0
        self.events: list[tuple[str, int]] = []
        self.workers: dict[int, FakeWorker] = {}
        self.obey_interrupt = True

    def start(self, i: int, entry: Any) -> FakeWorker:
        if i in self.fail_start:
            raise self.fail_start[i]
        self.events.append(("start", i))
        self.running.add(i)
        self.most = max(self.most, len(self.running))
        worker = FakeWorker(self, i, self.polls[i], self.outcomes.get(i, Outcome(0)))
        self.workers[i] = worker
        return worker


def run_schedule(entries: list[Any], p: int, pool: Pool, **kw: Any) -> parallel.Schedule:
    clock = Clock()
    return schedule(entries, p, pool.start, clock=clock, sleep=kw.pop("sleep", clock.sleep), **kw)


def test_at_most_p_cells_run_at_once_and_they_start_in_plan_order() -> None:
    pool = Pool([3, 1, 5, 2, 1, 4])
    done = run_schedule(list("abcdef"), 2, pool)
    assert pool.most == 2
    assert [i for what, i in pool.events if what == "start"] == [0, 1, 2, 3, 4, 5]
    assert sorted(done.outcomes) == [0, 1, 2, 3, 4, 5] and not done.interrupted
    # cell 1 (one look) ends before cell 0 (three): the next starts in its place
    ends = [i for what, i in pool.events if what == "end"]
    assert ends.index(1) < ends.index(0)


def test_parallel_1_runs_one_cell_after_the_other() -> None:
    pool = Pool([2, 1, 3])
    run_schedule(list("abc"), 1, pool)
    assert pool.most == 1
    assert pool.events == [
        ("start", 0),
        ("end", 0),
        ("start", 1),
        ("end", 1),
        ("start", 2),
        ("end", 2),
    ]


def test_a_failing_cell_does_not_stop_the_others() -> None:
    pool = Pool(
        [1, 2, 1, 1],
        outcomes={1: Outcome(4, "cluster did not start")},
        fail_start={2: OSError("no python")},
    )
    ended: list[int] = []
    done = run_schedule(list("abcd"), 2, pool, ended=lambda i, e, o: ended.append(i))
    assert done.outcomes[1] == Outcome(4, "cluster did not start")
    assert done.outcomes[2] == Outcome(KchaosError.exit_code, "OSError: no python")
    assert done.outcomes[0] == done.outcomes[3] == Outcome(0)
    assert sorted(ended) == [0, 1, 2, 3]


def test_ctrl_c_interrupts_every_running_cell_and_starts_no_more() -> None:
    pool = Pool([50, 50, 50, 50])
    clock = Clock()
    calls = {"n": 0}

    def sleep(seconds: float) -> None:
        calls["n"] += 1
        clock.sleep(seconds)
        if calls["n"] == 3:
            raise KeyboardInterrupt

    done = schedule(list("abcd"), 2, pool.start, clock=clock, sleep=sleep)
    assert done.interrupted
    assert [i for what, i in pool.events if what == "start"] == [0, 1]  # c and d never start
    assert ("interrupt", 0) in pool.events and ("interrupt", 1) in pool.events
    assert {i: o.interrupted for i, o in done.outcomes.items()} == {0: True, 1: True}
    assert not any(w.killed for w in pool.workers.values())


def test_a_cell_that_ignores_ctrl_c_is_killed_after_the_grace_period() -> None:
    pool = Pool([50, 1000])
    pool.obey_interrupt = False
    pool.outcomes[0] = None  # neither cell ends on its own before the grace runs out
    pool.outcomes[1] = None
    clock = Clock()
    first = {"done": False}

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if not first["done"]:
            first["done"] = True
            raise KeyboardInterrupt

    done = schedule(list("ab"), 2, pool.start, clock=clock, sleep=sleep, grace=10.0)
    assert done.interrupted and clock.now >= 10.0
    assert all(w.killed for w in pool.workers.values())
    assert all(o.interrupted for o in done.outcomes.values())


def test_a_second_ctrl_c_kills_at_once() -> None:
    pool = Pool([50, 50])
    pool.obey_interrupt = False
    clock = Clock()

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        raise KeyboardInterrupt  # the first in the loop, the second while winding down

    done = schedule(list("ab"), 2, pool.start, clock=clock, sleep=sleep, grace=300.0)
    assert done.interrupted and clock.now < 5
    assert [what for what, _ in pool.events].count("kill") == 2


@pytest.mark.parametrize("value", [0, -1, "two", "1.5", 2.5, True])
def test_bad_parallel_values_name_the_option(value: object) -> None:
    with pytest.raises(ConfigError, match="--parallel") as err:
        parallel.check_parallel(value)
    assert err.value.field == "--parallel"


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_the_cli_refuses_a_bad_parallel_before_any_run(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["matrix", "smoke", "--kafka-version", "3.5.2", "--parallel", value])
    assert exit_.value.code == 3
    err = capsys.readouterr().err
    assert "--parallel" in err and "Traceback" not in err


def test_a_fixed_metrics_port_cannot_be_shared_by_cells(tmp_path: Path) -> None:
    parallel.check_environment(1, {"KCHAOS_METRICS_PORT": "9400"})
    with pytest.raises(ConfigError, match="KCHAOS_METRICS_PORT"):
        parallel.check_environment(2, {"KCHAOS_METRICS_PORT": "9400"})


# ---------------------------------------------------------------- the batch's outputs


def fake_run(sc: Any, out: Path) -> Outcome:
    """What a cell does, by hand: 3.4.1 loses writes, 3.5.2 seed 2 cannot start."""
    version = sc.cluster.kafka_version
    if version == "3.5.2" and sc.seed == 2:
        return Outcome(ClusterError.exit_code, "cluster did not start")
    make_run(out, results=LOST if version == "3.4.1" else VALID, name=sc.name)
    run = json.loads((out / "run.json").read_text())
    run.update(kafka_version=version, seed=sc.seed, run_id=f"r-{version}-{sc.seed}")
    (out / "run.json").write_text(json.dumps(run))
    rep = write_run_reports(out)
    return Outcome(rep.outcome.exit_code)


class DirWorker:
    """A cell that writes its run directory when it ends, after ``polls`` looks."""

    def __init__(self, entry: Any, out: Path, polls: int) -> None:
        self.entry, self.out, self.polls = entry, out, polls

    def poll(self) -> Outcome | None:
        self.polls -= 1
        return None if self.polls > 0 else fake_run(self.entry.scenario, self.out)

    def interrupt(self) -> None:
        pass

    def kill(self) -> Outcome:
        return Outcome(130, "killed", interrupted=True)


def starter(out: Path, polls: list[int], order: list[int]) -> Callable[[int, Any], DirWorker]:
    def start(i: int, entry: Any) -> DirWorker:
        order.append(i)
        return DirWorker(entry, out / entry.label, polls[i])

    return start


def sequential_run(sc: Any, *, out: Path, **_: Any) -> Any:
    from kchaos.harness.run.orchestrate import RunResult

    outcome = fake_run(sc, out)
    if outcome.error:
        raise ClusterError(outcome.error)
    rep = write_run_reports(out)
    return RunResult(out.name, out, outcome.exit_code, rep.summary, rep.paths, rep)


def _page_facts(out: Path) -> tuple[Any, ...]:
    summary = json.loads((out / "summary.json").read_text())
    runs = [(r["kafka_version"], r["seed"], r["verdict"]) for r in summary["runs"]]
    fails = [(f["kafka_version"], f["seed"], f["error"]) for f in summary["failures"]]
    junit = (out / "junit.xml").read_text()
    names = [part.split('"')[0] for part in junit.split('testsuite name="')[1:]]
    page = (out / "report.html").read_text()
    grid = page[page.index("<table class='grid'>") :]
    return runs, fails, names, grid[: grid.index("</table>")], summary["passed"]


def test_the_parallel_page_is_the_sequential_one(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(parallel, "TICK_S", 0.0)
    seq = tmp_path / "seq"
    code = matrix.run_matrix(
        ["smoke"], "3.4.1,3.5.2", seeds=2, out=seq, run=sequential_run, resolver=resolver
    )
    par = tmp_path / "par"
    order: list[int] = []
    # the cells end in the reverse of plan order
    start = starter(par, [8, 6, 4, 2], order)
    console = io.StringIO()
    from rich.console import Console

    code_par = matrix.run_matrix(
        ["smoke"],
        "3.4.1,3.5.2",
        seeds=2,
        out=par,
        resolver=resolver,
        parallel=3,
        start=start,
        console=Console(file=console, width=200),
    )
    assert code == code_par == 4
    assert order == [0, 1, 2, 3]
    assert _page_facts(seq) == _page_facts(par)
    # the same run directories, and a shard.json complete with every cell done
    for label in ("smoke/kafka-3.4.1/seed-1", "smoke/kafka-3.5.2/seed-1"):
        assert (par / label / "run.json").is_file()
    shard = json.loads((par / "shard.json").read_text())
    assert shard["complete"] and shard["exit_code"] == 4 and len(shard["done"]) == 4
    text = console.getvalue()
    assert "up to 3 at once" in text and "cluster did not start" in text


def test_an_interrupted_parallel_batch_writes_its_page_then_says_so(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(parallel, "TICK_S", 0.0)
    out = tmp_path / "m"
    looks = {"n": 0}

    class Interrupting(DirWorker):
        def poll(self) -> Outcome | None:
            looks["n"] += 1
            if looks["n"] == 4:
                raise KeyboardInterrupt
            if self.polls < 0:
                return Outcome(130, "interrupted", interrupted=True)
            return super().poll()

        def interrupt(self) -> None:
            self.polls = -1

    def start(i: int, entry: Any) -> DirWorker:
        return Interrupting(entry, out / entry.label, [1, 50, 50, 50][i])

    with pytest.raises(RunInterrupted):
        matrix.run_matrix(
            ["smoke"], "4.4.0", seeds=4, out=out, resolver=resolver, parallel=2, start=start
        )
    summary = json.loads((out / "summary.json").read_text())
    assert [r["seed"] for r in summary["runs"]] == [1]
    assert {f["error"] for f in summary["failures"]} == {"interrupted"}
    shard = json.loads((out / "shard.json").read_text())
    assert not shard["complete"] and list(shard["done"]) == ["smoke/kafka-4.4.0/seed-1"]


def test_parallel_1_is_todays_sequential_batch(tmp_path: Path) -> None:
    def never(i: int, entry: Any) -> Any:
        raise AssertionError("--parallel 1 starts no cell process")

    calls: list[int] = []

    def run(sc: Any, *, out: Path, **kw: Any) -> Any:
        calls.append(sc.seed)
        assert "parallel" not in kw  # the run records parallel 1, its default
        return sequential_run(sc, out=out)

    code = matrix.run_matrix(
        ["smoke"], "4.4.0", seeds=3, out=tmp_path / "m", run=run, resolver=resolver, start=never
    )
    assert code == 0 and calls == [1, 2, 3]


# ---------------------------------------------------------------- the cell's process


class FakePopen:
    def __init__(self, args: list[str], **kw: Any) -> None:
        self.args, self.kw = args, kw
        self.stdin = io.BytesIO()
        self.stdin.close = lambda: None  # type: ignore[method-assign]
        self.pid = 4242
        self.code: int | None = None

    def poll(self) -> int | None:
        return self.code

    def wait(self) -> int:
        self.code = -9 if self.code is None else self.code
        return self.code


def test_a_cell_process_gets_its_job_and_reports_its_outcome(tmp_path: Path) -> None:
    sc = library.load("smoke")
    job = CellJob(sc, tmp_path / "out" / "smoke", tmp_path / "cell-0.json", ["kchaos"], True, 2)
    made: list[FakePopen] = []

    def popen(args: list[str], **kw: Any) -> FakePopen:
        made.append(FakePopen(args, **kw))
        return made[-1]

    proc = CellProcess(job, tmp_path / "console" / "smoke.log", popen=popen)
    child = made[0]
    assert child.args[1:] == ["-m", "kchaos.harness.run.cell"]
    assert child.kw["start_new_session"]  # a terminal's Ctrl-C reaches the parent only
    assert pickle.loads(child.stdin.getvalue()) == job
    assert proc.poll() is None
    parallel.write_outcome(job.result, Outcome(1))
    child.code = 1
    assert proc.poll() == Outcome(1)


def test_a_cell_that_died_without_an_outcome_is_an_error_naming_its_log(tmp_path: Path) -> None:
    job = CellJob(library.load("smoke"), tmp_path / "o", tmp_path / "r.json")
    proc = CellProcess(job, tmp_path / "c.log", popen=FakePopen)
    proc.proc.code = -11
    outcome = proc.poll()
    assert outcome is not None and outcome.exit_code == 130
    assert "without saying how the run ended" in str(outcome.error)
    assert str(tmp_path / "c.log") in str(outcome.error)


def test_ctrl_c_and_kill_reach_the_cells_process_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(parallel.os, "killpg", lambda pid, sig: sent.append((pid, sig)))
    removed: list[Path] = []
    job = CellJob(library.load("smoke"), tmp_path / "o", tmp_path / "r.json")
    proc = CellProcess(
        job, tmp_path / "c.log", popen=FakePopen, remove=lambda d: removed.append(d) or None
    )
    proc.interrupt()
    outcome = proc.kill()
    assert sent == [(4242, signal.SIGINT), (4242, signal.SIGKILL)]
    assert removed == [tmp_path / "o"]  # the killed run's cluster is removed by its run id
    assert outcome.interrupted and outcome.exit_code == 130


def test_the_cell_runs_the_scenario_as_a_sequential_batch_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kchaos.harness.run import orchestrate

    seen: dict[str, Any] = {}

    class Result:
        exit_code = 1

    def run_scenario(sc: Any, **kw: Any) -> Result:
        seen.update(kw, name=sc.name)
        return Result()

    monkeypatch.setattr(orchestrate, "run_scenario", run_scenario)
    job = CellJob(
        library.load("smoke"), tmp_path / "o", tmp_path / "r.json", ["kchaos", "matrix"], True, 2
    )
    monkeypatch.setattr(cell.sys, "stdin", io.TextIOWrapper(io.BytesIO(pickle.dumps(job))))
    assert cell.main() == 1
    assert parallel.read_outcome(job.result) == Outcome(1)
    assert seen["name"] == "smoke" and seen["out"] == tmp_path / "o"
    assert seen["parallel"] == 2 and seen["prometheus"] is True
    assert seen["command"] == ["kchaos", "matrix"]

    def fails(sc: Any, **kw: Any) -> Result:
        raise ClusterError("no free /24")

    monkeypatch.setattr(orchestrate, "run_scenario", fails)
    assert cell.run_cell(job) == Outcome(ClusterError.exit_code, "no free /24")

    def interrupted(sc: Any, **kw: Any) -> Result:
        raise RunInterrupted("interrupted")

    monkeypatch.setattr(orchestrate, "run_scenario", interrupted)
    assert cell.run_cell(job).interrupted


def test_each_cells_console_goes_beside_the_run_directories(tmp_path: Path) -> None:
    label = "smoke/kafka-4.4.0/seed-1"
    assert parallel.console_log(tmp_path, label) == tmp_path / "console" / f"{label}.log"


def test_a_real_cell_process_reads_its_job_and_leaves_its_outcome(tmp_path: Path) -> None:
    """`python -m kchaos.harness.run.cell` for real, with a job that fails before any
    Docker: the job arrives on stdin, the error is the cell's outcome, the traceback is in
    its console log."""
    import time

    job = CellJob(scenario=None, out=tmp_path / "out" / "x", result=tmp_path / "r.json")
    proc = CellProcess(job, tmp_path / "console" / "x.log")
    deadline = time.monotonic() + 60
    while (outcome := proc.poll()) is None:
        assert time.monotonic() < deadline, "the cell process did not end"
        time.sleep(0.1)
    assert outcome.exit_code == KchaosError.exit_code and not outcome.interrupted
    assert "AttributeError" in str(outcome.error)
    assert "Traceback" in (tmp_path / "console" / "x.log").read_text()
