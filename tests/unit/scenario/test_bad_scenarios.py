"""Issue 16 on the scenario side: every impossible scenario is refused by ``kchaos
validate`` (exit 3, file, line and field), before any container starts.

Loaded with the faults package's own validation (the default), as ``kchaos validate``
and ``kchaos run`` do: schedule checks need the fault families' targets and params.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scenario_variants import BASE

from kchaos.cli.main import main
from kchaos.harness.errors import ConfigError
from kchaos.harness.scenario import load_scenario

RANDOM = BASE.replace(
    """  steps:
    - fault: pause
      at: 10s
      for: 5s
      target: random
""",
    """  random:
    faults: [pause, kill]
    start: 10s
    quiet: 5s
    min_duration: 2s
    max_duration: 4s
""",
)


def load(text: str = BASE, **kw: object):  # type: ignore[no-untyped-def]
    return load_scenario("s.yaml", text=text, **kw)  # type: ignore[arg-type]


def refused(text: str = BASE, **kw: object) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load(text, **kw)
    assert err.value.exit_code == 3
    return err.value


def test_the_base_scenarios_are_fine() -> None:
    assert load().nemesis.steps[0].fault == "pause"
    assert load(RANDOM).nemesis.random is not None


# -- impossible values ---------------------------------------------------------------


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", ".NaN"])
def test_non_finite_durations_in_the_file(value: str) -> None:
    err = refused(BASE.replace("duration: 60s", f"duration: {value}"))
    assert (err.file, err.line, err.field) == ("s.yaml", 14, "workload.duration")
    assert "finite" in str(err)


@pytest.mark.parametrize(
    "override",
    [
        "workload.duration=.nan",
        "nemesis.steps.0.at=.inf",
        "nemesis.steps.0.for=.nan",
        "nemesis.steps.0.duration=.nan",  # the old spelling of for, on a file saying for
    ],
)
def test_non_finite_times_through_set(override: str) -> None:
    err = refused(overrides=[override])
    assert err.file == "--set" and err.field == override.split("=")[0]


def test_a_duration_too_long_to_wait_for() -> None:
    err = refused(BASE.replace("duration: 60s", "duration: " + "9" * 400 + "s"))
    assert err.field == "workload.duration"
    err = refused(BASE.replace("duration: 60s", "duration: " + "9" * 5000))
    assert err.line == 14 and "out of range" in str(err)


@pytest.mark.parametrize("value", ["zero", "0", "1.5", "-1", "true"])
def test_min_insync_replicas_must_be_a_positive_integer(value: str) -> None:
    err = refused(BASE.replace("min.insync.replicas: 2", f"min.insync.replicas: {value}"))
    assert (err.line, err.field) == (12, "topics.0.configs.min.insync.replicas")
    err = refused(overrides=[f"cluster.server_properties.min.insync.replicas={value}"])
    assert err.field == "cluster.server_properties.min.insync.replicas"


def test_min_insync_replicas_from_a_broker_config_names_its_line(tmp_path: Path) -> None:
    props = tmp_path / "broker.properties"
    props.write_text("# comment\nlog.flush.interval.messages=1\nmin.insync.replicas=zero\n")
    err = refused(broker_config=props)
    assert (err.file, err.line) == (str(props), 3)


def test_broker_ids_that_collide_after_normalising() -> None:
    text = BASE.replace(
        "  server_properties:\n",
        '  broker_properties:\n    "0002": {broker.rack: a}\n    "2": {broker.rack: b}\n'
        "  server_properties:\n",
    )
    err = refused(text)
    assert (err.line, err.field) == (7, "cluster.broker_properties.2")
    assert "'0002'" in str(err) and "twice" in str(err)


# -- schedules the faults package would refuse at run time ------------------------------


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("random:4", "only 3 brokers"),
        ("controller-1", "no such node"),  # no dedicated controllers in this cluster
        ("broker-7", "no node"),
        ("none", "at least 1 target"),
    ],
)
def test_step_targets_this_cluster_cannot_resolve(target: str, words: str) -> None:
    err = refused(BASE.replace("target: random", f"target: {target}"))
    assert (err.line, err.field) == (20, "nemesis.steps.0.target")
    assert words in str(err)


def test_a_crash_fault_without_a_target() -> None:
    err = refused(BASE.replace("fault: pause", "fault: kill").replace("random", "none"))
    assert err.field == "nemesis.steps.0.target" and "at least 1 target" in str(err)


def test_targets_of_dedicated_controllers() -> None:
    with_controllers = BASE.replace("brokers: 3\n", "brokers: 3\n  controllers: 3\n")
    assert load(with_controllers.replace("target: random", "target: controller-101"))
    err = refused(with_controllers.replace("target: random", "target: broker-101"))
    assert "no such node" in str(err)
    toxic = with_controllers.replace("fault: pause", "fault: latency").replace(
        "target: random", "target: controller\n      params: {link: client}"
    )
    err = refused(toxic)
    assert "no client proxy" in str(err)


@pytest.mark.parametrize(("topic", "words"), [("''", "non-empty"), ("nope", "unknown topic")])
def test_reassign_needs_a_known_topic(topic: str, words: str) -> None:
    text = BASE.replace("fault: pause", "fault: reassign").replace(
        "target: random", f"target: none\n      params: {{topic: {topic}}}"
    )
    err = refused(text)
    assert err.field == "nemesis.steps.0.params.topic" and words in str(err)


def test_reassign_without_params_at_all() -> None:
    text = BASE.replace("fault: pause", "fault: reassign").replace("target: random", "target: none")
    assert "needs the topic" in str(refused(text))


def test_random_targets_are_checked_against_the_cluster() -> None:
    err = refused(RANDOM.replace("quiet: 5s", "quiet: 5s\n    targets: [random, random:9]"))
    assert err.field == "nemesis.random.targets.1" and "only 3 brokers" in str(err)


def test_a_random_schedule_that_starts_after_the_workload() -> None:
    err = refused(RANDOM.replace("start: 10s", "start: 90s"))
    assert (err.line, err.field) == (18, "nemesis.random.start")


def test_a_random_schedule_whose_faults_cannot_fit() -> None:
    err = refused(RANDOM.replace("min_duration: 2s", "min_duration: 50s").replace("4s", "55s"))
    assert err.field == "nemesis.random.min_duration" and "fits" in str(err)


def test_a_random_schedule_that_draws_nothing_for_its_seed() -> None:
    # 5 s of room, faults of 2 to 8 s: some seeds draw one that fits, some do not
    text = RANDOM.replace("start: 10s", "start: 50s").replace(
        "max_duration: 4s", "max_duration: 8s"
    )
    errors = []
    for seed in range(40):
        try:
            load(text, seed=seed)
        except ConfigError as exc:
            errors.append(exc)
    assert 0 < len(errors) < 40, "the seed should decide"
    assert all("places no fault" in str(e) for e in errors)


# -- tracebacks become errors ------------------------------------------------------------


@pytest.mark.parametrize("style", ["flow", "block"])
def test_deeply_nested_yaml(style: str) -> None:
    if style == "flow":
        text = BASE + "tags: " + "[" * 400 + "]" * 400 + "\n"
    else:
        text = BASE + "x:\n" + "".join("  " * i + "a:\n" for i in range(1, 400))
    err = refused(text)
    assert err.line is not None and "nested" in str(err)


def test_deeply_nested_set_value() -> None:
    err = refused(overrides=["tags=" + "[" * 400 + "]" * 400])
    assert err.file == "--set"


def test_a_recursive_alias() -> None:
    err = refused(BASE + "tags: &a [*a]\n")
    assert err.line == 21 and "recursive alias" in str(err) and "None" not in str(err)


def test_aliases_that_expand_without_bound() -> None:
    laughs = ["laughs:", "  a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    laughs += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 6)]
    err = refused(BASE + "\n".join(laughs) + "\n")
    assert "aliases are expanded" in str(err) and err.field is not None


def test_a_nul_byte_is_named_by_its_line() -> None:
    err = refused(BASE.replace("name: t\n", "name: t\x00\n"))
    assert err.line == 8 and "#x0000" in str(err)


# -- clear messages ----------------------------------------------------------------------


def test_a_binary_broker_config_is_not_echoed(tmp_path: Path) -> None:
    props = tmp_path / "broker.properties"
    props.write_bytes(
        b"log.flush.interval.messages=1\n\x7fELF\x02\x01\x01\x00\x00garbage\xff\xfe\n"
    )
    err = refused(broker_config=props)
    assert (err.file, err.line) == (str(props), 2)
    assert "\x00" not in str(err) and "ELF" not in str(err)


def test_a_bad_property_name_in_a_broker_config_names_that_file_and_line(tmp_path: Path) -> None:
    props = tmp_path / "broker.properties"
    props.write_text("log.flush.interval.messages=1\n\nnum$partitions=3\n")
    err = refused(broker_config=props)
    assert (err.file, err.line) == (str(props), 3)


def test_paths_of_the_wrong_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args, words in (
        (["validate", str(tmp_path)], "is a directory"),
        (["validate", str(tmp_path) + "/"], "is a directory"),
    ):
        with pytest.raises(SystemExit) as done:
            main(args)
        assert done.value.code == 3
        assert words in capsys.readouterr().err
