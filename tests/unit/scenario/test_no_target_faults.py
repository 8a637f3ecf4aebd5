"""A fault that takes no target (preferred-election, reassign) refuses a target class.

Its only target spec is ``none``: a random schedule or a step that gives it ``random``,
a node or any other class is refused, with the scenario file, line and field named.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kchaos.harness.errors import ConfigError
from kchaos.harness.scenario.loader import load_scenario

HEAD = """\
name: no-target
description: A scenario of planned leadership moves for the validation tests.
cluster:
  brokers: 3
topics:
  - name: t
    partitions: 2
    replication_factor: 3
workload:
  duration: 60s
nemesis:
"""

RANDOM = """\
  random:
    faults: [preferred-election]
    start: 10s
    quiet: 5s
    min_duration: 1s
    max_duration: 3s
"""


def write(tmp_path: Path, nemesis: str) -> Path:
    path = tmp_path / "moves.yaml"
    path.write_text(HEAD + nemesis)
    return path


def refused(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_scenario(path)
    assert info.value.exit_code == 3
    return info.value


def line_of(path: Path, text: str) -> int:
    """1-based line of the first line of ``path`` holding ``text``."""
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def test_a_random_schedule_giving_preferred_election_a_target_class_is_refused(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, RANDOM + "    targets: [random]\n")
    err = refused(path)
    assert (err.file, err.line, err.field) == (
        str(path),
        line_of(path, "targets: [random]"),
        "nemesis.random.targets.0",
    )
    assert "preferred-election takes no target" in str(err) and "'random'" in str(err)
    assert str(err).startswith(f"{path}:{err.line}: nemesis.random.targets.0: ")


def test_the_second_target_of_the_list_is_the_one_named(tmp_path: Path) -> None:
    path = write(tmp_path, RANDOM + "    targets:\n      - none\n      - broker-2\n")
    err = refused(path)
    assert (err.line, err.field) == (line_of(path, "- broker-2"), "nemesis.random.targets.1")


def test_reassign_in_a_random_mix_is_refused_a_node(tmp_path: Path) -> None:
    text = RANDOM.replace("[preferred-election]", "[preferred-election, reassign]")
    path = write(tmp_path, text + "    targets: [controller]\n    params: {reassign: {topic: t}}\n")
    err = refused(path)
    assert err.field == "nemesis.random.targets.0" and "takes no target" in str(err)


def test_none_written_or_left_out_is_accepted(tmp_path: Path) -> None:
    explicit = load_scenario(write(tmp_path, RANDOM + "    targets: [none]\n"))
    assert explicit.nemesis.random is not None
    assert explicit.nemesis.random.targets == ("none",)
    (tmp_path / "moves.yaml").unlink()
    left_out = load_scenario(write(tmp_path, RANDOM))
    assert left_out.nemesis.random is not None and left_out.nemesis.random.targets == ("none",)
    assert left_out.plan is not None and left_out.plan.schedule is not None
    assert {f.spec.target for f in left_out.plan.schedule.faults} == {"none"}


def test_a_mix_with_a_targeted_fault_needs_the_targets_written(tmp_path: Path) -> None:
    # pause needs a node, preferred-election takes none: the default targets (random)
    # cannot fit both, so the mix is refused where the targets would go.
    path = write(tmp_path, RANDOM.replace("[preferred-election]", "[pause, preferred-election]"))
    err = refused(path)
    assert err.field == "nemesis.random.targets.0"
    assert err.line == line_of(path, "random:")
    assert "preferred-election takes no target" in str(err)


def test_a_scripted_step_giving_it_a_node_is_refused(tmp_path: Path) -> None:
    steps = "  steps:\n    - fault: preferred-election\n      at: 10s\n      target: broker-1\n"
    path = write(tmp_path, steps)
    err = refused(path)
    assert (err.line, err.field) == (line_of(path, "target: broker-1"), "nemesis.steps.0.target")
    (tmp_path / "moves.yaml").unlink()
    ok = load_scenario(write(tmp_path, steps.replace("      target: broker-1\n", "")))
    assert ok.nemesis.steps[0].target == "none"
