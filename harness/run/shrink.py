"""``kchaos shrink RUN_DIR [--budget N] [--repeat K]``: a smaller schedule, same anomaly.

From a run whose verdict was invalid, search for a smaller fault schedule that still
produces an anomaly of the same kind, with at most N full runs (each on a fresh cluster):

* target: the invalidating anomaly kinds of the original run (results.json, kinds whose
  every occurrence the run's settings allowed excluded); a candidate *fails* (reproduces)
  when its run finds at least one of them;
* the candidates start from the run's concrete schedule (run.json ``schedule``, as
  ``kchaos replay`` runs it), with every seeded random target (``random``, ``random:K``,
  ``minority``, ``majority``) pinned to the nodes the original run's history says it hit,
  so that removing a step (which renumbers the fault ids the draw is seeded with) does not
  move another step's fault to a different broker;
* phase ``steps``: ddmin over the list of steps; phase ``durations``: each step's
  length (``for``) halved (not below 1 s) while the candidate still fails; phase ``targets``: a
  step's comma-separated node list one node shorter, ``random:K`` one fewer;
* every candidate is a scenario file the loader accepts (the checks of
  ``kchaos validate``); one it refuses is skipped without a run;
* flaky reproductions: a candidate counts as passing only after K clean runs
  (``--repeat``, default 1), see :mod:`kchaos.harness.run.ddmin`.

Writes OUT/shrunk.yaml (the smallest failing schedule as a scenario whose ``expect`` is
the reproduction: invalid, the target kinds required), OUT/report.html (every attempt
with its schedule and verdict, above the suite table of the attempts' runs, each linking
to its report), OUT/junit.xml, OUT/summary.json, OUT/shrink.json and OUT/attempt-NN/.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kchaos.harness.errors import BudgetExhausted, HistoryError, KchaosError, RunInterrupted
from kchaos.harness.run import progress
from kchaos.harness.run.ddmin import Prober, Trial, ddmin, greedy
from kchaos.harness.run.replay import load_data, read_run_json, scenario_data
from kchaos.harness.rundir.anomalies import INVALIDATING
from kchaos.harness.rundir.files import write_json
from kchaos.harness.rundir.history import F_FAULT, PHASE_START, read_events
from kchaos.harness.rundir.names import RESULTS_JSON
from kchaos.harness.rundir.rundir import RunDir
from kchaos.harness.rundir.runjson import RunJson
from kchaos.harness.rundir.scenario_model import LENGTH_KEY, Scenario
from kchaos.harness.scenario.dump import step_data, to_yaml

MIN_DURATION = 1.0  # seconds: durations are not halved below this
RANDOM_TARGETS = ("random", "minority", "majority")

Step = str  # one scenario step as canonical JSON (hashable, comparable)
Candidate = tuple[Step, ...]
RunFn = Callable[..., Any]  # run_scenario's signature


def _step(data: Mapping[str, Any]) -> Step:
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode()


def _data(step: Step) -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads(step)
    return loaded


def describe(step: Step) -> str:
    """``isolate broker-1 at 10s for 12s`` for the attempts table."""
    s = _data(step)
    text = f"{s['fault']} {s.get('target', 'random')} at {s['at']:g}s"
    if s.get(LENGTH_KEY):
        text += f" for {s[LENGTH_KEY]:g}s"
    if s.get("params"):
        text += " " + ",".join(f"{k}={v}" for k, v in sorted(s["params"].items()))
    if s.get("when"):
        text += " when " + orjson.dumps(s["when"]).decode()
    return text


# ------------------------------------------------------------------------ the original


def read_results(run_dir: RunDir) -> dict[str, Any]:
    data = run_dir.read_results()
    if data is None:
        raise HistoryError(
            f"no {RESULTS_JSON}: judge the run first (kchaos check {run_dir})", file=str(run_dir)
        )
    return data


def invalidating_kinds(results: Mapping[str, Any]) -> tuple[str, ...]:
    """Kinds found that make the run invalid (occurrences the settings allow excluded)."""
    out = []
    for kind, value in (results.get("anomalies") or {}).items():
        if kind not in INVALIDATING or not isinstance(value, Mapping):
            continue
        count, allowed = value.get("count", 0), value.get("allowed", 0)
        if isinstance(count, int) and count > (allowed if isinstance(allowed, int) else 0):
            out.append(kind)
    return tuple(sorted(out))


def fault_targets(run_dir: RunDir) -> dict[str, list[str]]:
    """Fault id -> the nodes its start line in history.jsonl names."""
    path = run_dir.history
    out: dict[str, list[str]] = {}
    if not path.is_file():
        return out
    for event in read_events(path):
        if (
            isinstance(event, dict)
            and event.get("f") == F_FAULT
            and event.get("phase") == PHASE_START
            and isinstance(event.get("targets"), list)
            and event["targets"]
        ):
            out.setdefault(str(event.get("id")), [str(t) for t in event["targets"]])
    return out


def _randomly_drawn(target: Any) -> bool:
    text = str(target or "random")
    return text in RANDOM_TARGETS or text.startswith("random:")


@dataclass(frozen=True)
class Original:
    run_dir: Path
    run: RunJson
    data: dict[str, Any]  # scenario-file data, steps taken out
    steps: Candidate
    kinds: tuple[str, ...]  # the target
    found: tuple[str, ...]  # every kind the original found


def read_original(run_dir: RunDir | Path) -> Original:
    """The run to shrink; HistoryError (exit 3) when it cannot be shrunk."""
    rd = RunDir.of(run_dir)
    run = read_run_json(rd.path)
    results = read_results(rd)
    file = run.source
    if results.get("valid") is not False:
        verdict = {True: "valid", "unknown": "unknown"}.get(results.get("valid"), "missing")
        raise HistoryError(
            f"the run's verdict is {verdict}: shrink needs a run whose verdict was invalid",
            file=str(rd.results),
            field="valid",
        )
    kinds = invalidating_kinds(results)
    if not kinds:
        raise HistoryError(
            "the run is invalid but lists no invalidating anomaly kind to reproduce",
            file=str(rd.results),
            field="anomalies",
        )
    data = scenario_data(run, file)
    raw_steps = (data.pop("nemesis", None) or {}).get("steps") or []
    if not raw_steps:
        raise HistoryError(
            "the run has no concrete fault schedule to shrink", file=file, field="schedule"
        )
    drawn = fault_targets(rd)
    schedule = run.schedule or ()
    steps = []
    for i, step in enumerate(raw_steps):
        fid = schedule[i].get("id") if i < len(schedule) else None
        if _randomly_drawn(step.get("target")) and fid in drawn:
            step = {**step, "target": ",".join(drawn[fid])}
        steps.append(_step(step))
    load_data({**data, "nemesis": {"steps": [_data(s) for s in steps]}}, file)
    found = tuple(sorted((results.get("anomalies") or {}).keys()))
    return Original(rd.path, run, data, tuple(steps), kinds, found)


# ------------------------------------------------------------------------ candidates


def shorter(current: Candidate) -> list[Candidate]:
    """Each step with a duration above MIN_DURATION, halved (0.1 s resolution)."""
    out = []
    for i, step in enumerate(current):
        s = _data(step)
        d = s.get(LENGTH_KEY)
        if isinstance(d, int | float) and d > MIN_DURATION:
            s[LENGTH_KEY] = max(MIN_DURATION, round(d / 2, 1))
            out.append((*current[:i], _step(s), *current[i + 1 :]))
    return out


def fewer_targets(current: Candidate) -> list[Candidate]:
    """Each step's node list one node shorter; ``random:K`` as ``random:K-1``."""
    out = []
    for i, step in enumerate(current):
        s = _data(step)
        target = str(s.get("target", "random"))
        options: list[str] = []
        if "," in target:
            names = target.split(",")
            options = [",".join(names[:j] + names[j + 1 :]) for j in range(len(names))]
        elif target.startswith("random:") and target[7:].isdigit() and int(target[7:]) > 1:
            options = [f"random:{int(target[7:]) - 1}"]
        for option in options:
            out.append((*current[:i], _step({**s, "target": option}), *current[i + 1 :]))
    return out


# ------------------------------------------------------------------------ the search


@dataclass
class Attempt:
    number: int
    phase: str
    steps: Candidate
    reproduced: bool | None
    kinds: dict[str, int] = field(default_factory=dict)  # every kind its run found
    run_dir: str | None = None
    error: str | None = None
    report: Any = None  # reports.build.RunReport

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "phase": self.phase,
            "steps": [_data(s) for s in self.steps],
            "reproduced": self.reproduced,
            "anomalies": self.kinds,
            "run_dir": self.run_dir,
            "error": self.error,
        }


@dataclass
class Search:
    """The state of one shrink: the candidates' scenarios, the attempts, the phase."""

    original: Original
    out: Path
    run: RunFn
    console: Any
    command: list[str] | None = None
    prometheus: bool = False  # a Prometheus server for each trial run
    phase: str = "steps"
    batch: progress.Batch = field(default_factory=lambda: progress.Batch(1, noun="attempt"))
    attempts: list[Attempt] = field(default_factory=list)
    loaded: dict[Candidate, Scenario | None] = field(default_factory=dict)

    def scenario(self, candidate: Candidate) -> Scenario | None:
        """The candidate as a loaded scenario; None when the loader refuses it."""
        if candidate not in self.loaded:
            data = {**self.original.data, "nemesis": {"steps": [_data(s) for s in candidate]}}
            data["expect"] = reproducer_expect(self.original)
            try:
                self.loaded[candidate] = load_data(data, f"candidate {len(self.loaded) + 1}")
            except KchaosError as exc:
                self.console.print(f"[dim]skipped (not a valid schedule): {exc}[/]")
                self.loaded[candidate] = None
        return self.loaded[candidate]

    def admissible(self, candidate: Candidate) -> bool:
        return bool(candidate) and self.scenario(candidate) is not None

    def probe(self, candidate: Candidate) -> Trial:
        sc = self.scenario(candidate)
        assert sc is not None  # admissible() ran first
        number = len(self.attempts) + 1
        run_dir = RunDir(self.out / f"attempt-{number:02d}")
        self.console.rule(
            f"attempt {number} ({self.phase}): {len(candidate)} step(s): {self.batch.times()}"
        )
        for step in candidate:
            self.console.print(f"  {describe(step)}")
        attempt = Attempt(number, self.phase, candidate, None, run_dir=str(run_dir))
        self.attempts.append(attempt)
        try:
            with progress.item(self.batch, number, f"{self.phase}, {len(candidate)} step(s)"):
                result = self.run(
                    sc,
                    out=run_dir.path,
                    console=self.console,
                    quiet=True,
                    command=self.command,
                    extra={"shrink_of": str(self.original.run_dir.resolve())},
                    prometheus=self.prometheus,
                )
        except RunInterrupted:
            attempt.error = "interrupted"
            raise
        except KchaosError as exc:
            attempt.error = str(exc)
            self.console.print(f"[red]attempt {number}: {exc} (counted as not reproduced)[/]")
            return Trial(None)
        attempt.report = getattr(result, "report", None)
        try:
            results = read_results(run_dir)
        except HistoryError as exc:
            attempt.error = str(exc)
            return Trial(None)
        anomalies = results.get("anomalies") or {}
        attempt.kinds = {
            k: int(v.get("count", 0)) for k, v in anomalies.items() if isinstance(v, Mapping)
        }
        attempt.reproduced = bool(set(invalidating_kinds(results)) & set(self.original.kinds))
        verdict = "REPRODUCED" if attempt.reproduced else "not reproduced"
        self.console.print(f"attempt {number}: {verdict} {attempt.kinds or ''}")
        return Trial(attempt.reproduced, attempt)


def reproducer_expect(original: Original, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """``expect`` of a reproduction: invalid, ``required`` kinds found, whatever else the
    original found or allowed allowed (the attempts' runs require nothing: a candidate
    reproduces when any one target kind shows up)."""
    allowed = set(original.found) | set(original.data.get("expect", {}).get("allowed") or ())
    return {
        "valid": False,
        "anomalies": list(required),
        "allowed": sorted(allowed - set(required)),
    }


def search(prober: Prober[Candidate], start: Candidate, set_phase: Callable[[str], None]) -> None:
    """ddmin over the steps, then shorter durations, then fewer targets; stops when the
    budget is spent (``prober.last_failing`` is the answer either way)."""
    prober.known_failing(start)
    try:
        set_phase("steps")
        current = ddmin(start, prober.fails)
        set_phase("durations")
        current = greedy(current, shorter, prober.fails)
        set_phase("targets")
        greedy(current, fewer_targets, prober.fails)
    except BudgetExhausted:
        pass


def _workload_seconds(data: Mapping[str, Any]) -> float:
    """The scenario data's workload duration (for the progress estimate only)."""
    from kchaos.harness.scenario.loader import parse_duration

    try:
        return parse_duration((data.get("workload") or {}).get("duration", 60))
    except (ValueError, TypeError, KchaosError):
        return 60.0


def shrink_run(
    run_dir: RunDir | Path,
    *,
    budget: int,
    repeats: int = 1,
    out: Path | None = None,
    console: Any = None,
    command: list[str] | None = None,
    run: RunFn | None = None,
    prometheus: bool = False,
) -> dict[str, Any]:
    """Shrink the schedule of ``run_dir``; returns what shrink.json says.
    ``prometheus``: a Prometheus server for each trial run."""
    from kchaos.harness.run.suite import suite_dir_for
    from kchaos.reports.console import make_console

    original = read_original(run_dir)
    console = console or make_console()
    if run is None:
        from kchaos.harness.run.orchestrate import run_scenario

        run = run_scenario
    out_dir = suite_dir_for(str(original.run.run_id or original.run_dir.name), out, "shrink")
    out_dir.mkdir(parents=True, exist_ok=True)
    guess = progress.run_guess(_workload_seconds(original.data))
    runs = progress.Batch(budget, noun="attempt", expected=[guess] * budget, at_most=True)
    state = Search(original, out_dir, run, console, command, prometheus, batch=runs)
    prober: Prober[Candidate] = Prober(
        state.probe, budget=budget, repeats=repeats, admissible=state.admissible
    )

    def set_phase(name: str) -> None:
        state.phase = name

    console.print(
        f"shrinking {len(original.steps)} step(s) of {run_dir} (reproduce: "
        f"{', '.join(original.kinds)}), budget {budget} run(s), repeat {repeats}"
    )
    try:
        with progress.batch(runs):
            search(prober, original.steps, set_phase)
    finally:
        best = prober.last_failing or original.steps
        summary = _write(state, best, budget, repeats)
    return summary


def _required(state: Search, best: Candidate) -> tuple[str, ...]:
    """The target kinds the last run of ``best`` found (all of them if it never ran)."""
    runs = [a for a in state.attempts if a.steps == best and a.reproduced]
    if not runs:
        return state.original.kinds
    return tuple(k for k in state.original.kinds if runs[-1].kinds.get(k))


def _write(state: Search, best: Candidate, budget: int, repeats: int) -> dict[str, Any]:
    from kchaos.reports.console import print_suite
    from kchaos.reports.shrink import attempts_section
    from kchaos.reports.suite import SuiteFailure, write_suite_reports

    original = state.original
    name = str(original.data["name"])
    run_id = original.run.run_id
    data = {
        **original.data,
        "name": name if name.endswith("-shrunk") else f"{name}-shrunk",
        "description": (
            f"Shrunk by kchaos shrink from run {run_id} of {name}: the smallest schedule "
            f"found in {len(state.attempts)} run(s) that still produces "
            f"{', '.join(original.kinds)}. {original.data['description']}"
        ),
        "nemesis": {"steps": [step_data(_data(s)) for s in best]},
        "expect": reproducer_expect(original, _required(state, best)),
    }
    order = ("name", "description", "tags", "seed", "cluster", "topics", "workload", "nemesis")
    data = {**{k: data[k] for k in order if k in data}, **data}  # the file's usual order
    out = RunDir(state.out)
    shrunk = out.shrunk_yaml
    header = (
        f"kchaos shrink {original.run_dir} (budget {budget}, repeat {repeats}): "
        f"{len(original.steps)} -> {len(best)} step(s)"
    )
    shrunk.write_text(to_yaml(data, header), encoding="utf-8")
    reports = [a.report for a in state.attempts if a.report is not None]
    failures = [
        SuiteFailure(f"attempt {a.number}", a.error or "no report", a.run_dir)
        for a in state.attempts
        if a.report is None
    ]
    title = f"kchaos shrink {run_id}"
    section = attempts_section(
        state.attempts, original.steps, best, original.kinds, state.out, describe, repeats
    )
    paths = write_suite_reports(
        state.out, reports, failures, title=title, sections=[section], unit="attempts"
    )
    summary = {
        "original": str(original.run_dir),
        "run_id": run_id,
        "kinds": list(original.kinds),
        "budget": budget,
        "repeat": repeats,
        "runs": len(state.attempts),
        "original_steps": [_data(s) for s in original.steps],
        "shrunk_steps": [_data(s) for s in best],
        "scenario": str(shrunk),
        "report": paths["html"],
        "attempts": [a.to_json() for a in state.attempts],
    }
    write_json(out.shrink_json, summary)
    rows = [
        {
            "scenario": f"attempt {a.number} ({a.phase}, {len(a.steps)} steps)",
            "verdict": {True: "reproduced", False: "clean", None: "error"}[a.reproduced],
            "anomalies": a.kinds,
            "expected": bool(a.reproduced),
            "run_id": Path(a.run_dir or "").name,
        }
        for a in state.attempts
    ]
    print_suite(rows, state.console, title)
    state.console.print(
        f"{len(original.steps)} -> {len(best)} step(s) in {len(state.attempts)} run(s):"
    )
    for step in best:
        state.console.print(f"  {describe(step)}")
    state.console.print(f"scenario: {shrunk}\nreport: {paths['html']}")
    return summary
