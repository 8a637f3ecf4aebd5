"""``kchaos replay RUN_DIR``: the same run again, from its run.json alone.

run.json holds the resolved scenario (after ``--set`` and ``--broker-config``), the seed,
the Kafka version, the images and the nemesis ``schedule``: the concrete fault list the
run executed (each fault's id, start, length (``for``), target spec and params, with a random
schedule's draws already made). A replay rebuilds a scenario file from these, with the
stored schedule as its scripted steps (in the same vocabulary: a step's length is
``for`` in both), so the replay runs the same fault times, targets
and parameters rather than drawing them again; a seeded ``random`` target resolves the
same way because seed and fault ids are the same. A run.json without ``schedule`` (the run
ended before the nemesis started) replays the scenario's own nemesis section, which the
same seed expands the same way.

The rebuilt scenario data goes through the loader's checks (those of `kchaos validate`)
as data, without a YAML text in between (``load_scenario_data``), and the new run
directory's run.json names the run it replays (``replay_of``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kchaos.harness.errors import ConfigError, HistoryError, KchaosError, shown
from kchaos.harness.rundir.names import RUN_JSON
from kchaos.harness.rundir.runjson import RunJson, load_run
from kchaos.harness.rundir.scenario_model import LENGTH_KEY, Scenario
from kchaos.harness.scenario.dump import file_data
from kchaos.harness.scenario.loader import load_scenario_data


def read_run_json(run_dir: Path) -> RunJson:
    """RUN_DIR/run.json through the run-directory model; HistoryError (exit 3, one line)
    when it is missing, unreadable, of a newer format, or without format or scenario."""
    run = load_run(run_dir)
    if run.format is None:
        raise HistoryError("must be an integer, got None", file=run.source, field="format")
    if not run.described:
        stored = run.get("scenario")
        message = (
            "the stored scenario is incomplete (a part of one: no scenario to run)"
            if isinstance(stored, Mapping)
            else f"missing: {RUN_JSON} has no scenario"
        )
        raise HistoryError(message, file=run.source, field="scenario")
    return run


def schedule_steps(schedule: Any, file: str) -> list[dict[str, Any]]:
    """run.json's ``schedule`` (faults.schedule.Schedule.to_list()) as scenario steps."""
    if not isinstance(schedule, list):
        raise HistoryError(f"must be a list, got {shown(schedule)}", file=file, field="schedule")
    steps = []
    for i, entry in enumerate(schedule):
        if not isinstance(entry, Mapping) or "fault" not in entry or "at" not in entry:
            raise HistoryError(
                f"not a scheduled fault: {shown(entry)}", file=file, field=f"schedule.{i}"
            )
        step: dict[str, Any] = {"fault": entry["fault"], "at": entry["at"]}
        if entry.get(LENGTH_KEY):  # 0: an instantaneous fault, a step without a length
            step[LENGTH_KEY] = entry[LENGTH_KEY]
        for key in ("target", "when", "timeout", "on_timeout"):
            if entry.get(key) is not None:
                step[key] = entry[key]
        params = explicit_params(entry["fault"], entry.get("params"))
        if params:
            step["params"] = params
        steps.append(step)
    return steps


def explicit_params(fault: Any, params: Any) -> Any:
    """A scheduled fault's params without those equal to the fault's defaults: the
    schedule lists every param with its default filled in, and some defaults (an empty
    topic: "every topic") are not values a scenario may write."""
    from kchaos.faults.base import fault_class

    if not isinstance(params, Mapping):
        return params
    try:
        declared = {p.name: p.default for p in fault_class(str(fault)).params_spec}
    except KchaosError:
        return dict(params)  # an unknown fault: the loader names it
    return {k: v for k, v in params.items() if k not in declared or declared[k] != v}


def scenario_data(run: RunJson, file: str) -> dict[str, Any]:
    """Scenario-file data of a stored run: its scenario, Kafka version and schedule."""
    if run.scenario is None:
        raise HistoryError(f"missing: {RUN_JSON} has no scenario", file=file, field="scenario")
    data = file_data(run.scenario.to_dict())
    if run.kafka_version is not None:
        data["cluster"]["kafka_version"] = run.kafka_version
    if run.seed is not None:
        data["seed"] = run.seed
    if run.schedule is not None:
        steps = schedule_steps(list(run.schedule), file)
        data.pop("nemesis", None)
        if steps:
            data["nemesis"] = {"steps": steps}
    return data


def load_data(data: Mapping[str, Any], file: str, *, kafka_version: str | None = None) -> Scenario:
    """Build a scenario from stored scenario data with the loader's checks (no YAML on
    the way); a refusal of the stored data itself is reported against ``file``."""
    try:
        return load_scenario_data(data, file, kafka_version=kafka_version)
    except ConfigError as exc:
        if exc.file != file:  # e.g. --kafka-version
            raise
        raise HistoryError(
            f"the stored scenario does not load: {exc.detail}", file=file, field=exc.field
        ) from None


def replay_scenario(run_dir: Path, *, kafka_version: str | None = None) -> tuple[Scenario, RunJson]:
    """The scenario a replay of ``run_dir`` runs, and the original run.json."""
    run = read_run_json(run_dir)
    file = run.source
    sc = load_data(scenario_data(run, file), file, kafka_version=kafka_version)
    return sc, run


def replay_of(run_dir: Path, run: RunJson) -> dict[str, Any]:
    """What the replay's run.json says about the run it replays."""
    return {
        "run_dir": str(run_dir.resolve()),
        "run_id": run.run_id,
        "kafka_version": run.kafka_version,
        "image": run.get("image"),
    }


def replay_run(
    run_dir: Path,
    *,
    kafka_version: str | None = None,
    out: Path | None = None,
    quiet: bool = False,
    prometheus: bool = False,
    command: list[str] | None = None,
) -> int:
    """``kchaos replay``: run ``run_dir`` again from its run.json into a new run directory;
    the exit code is the new run's."""
    from kchaos.harness.run import run_scenario
    from kchaos.reports.console import make_console

    sc, run = replay_scenario(run_dir, kafka_version=kafka_version)
    console = make_console()
    console.print(f"replay of {run_dir} (run {run.run_id}, Kafka {run.kafka_version})")
    result = run_scenario(
        sc,
        out=out,
        console=console,
        quiet=quiet,
        command=command,
        extra={"replay_of": replay_of(run_dir, run)},
        prometheus=prometheus,
    )
    image = load_run(result.run_dir).kafka_image
    before = run.kafka_image
    if kafka_version is None and before and image and image != before:
        console.print(f"[yellow]note: the original ran on image {before}, this one on {image}[/]")
    return result.exit_code
