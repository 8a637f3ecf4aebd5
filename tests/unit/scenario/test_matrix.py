"""kchaos matrix with the runs replaced by hand-made run directories, and its bad input."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from sample_runs import LOST, VALID, make_run

from kchaos.cli import main as cli
from kchaos.harness.errors import ClusterError, ConfigError
from kchaos.harness.run import matrix
from kchaos.harness.run.orchestrate import RunResult
from kchaos.harness.scenario import library
from kchaos.reports.build import write_run_reports

KNOWN = {"3.4.1", "3.5.2", "4.4.0"}


def resolver(version: str) -> str | None:
    return None if version in KNOWN else f"Maven Central has no kafka_2.13:{version}"


class FakeRuns:
    """Stands in for run_scenario: 3.4.1 loses writes, 3.5.2 seed 2 cannot start a cluster."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, int, Path]] = []

    def __call__(self, sc: Any, *, out: Path, **_: Any) -> RunResult:
        version = sc.cluster.kafka_version
        self.calls.append((sc.name, version, sc.seed, out))
        if version == "3.5.2" and sc.seed == 2:
            raise ClusterError("cluster did not start")
        make_run(out, results=LOST if version == "3.4.1" else VALID, name=sc.name)
        run = json.loads((out / "run.json").read_text())
        run.update(kafka_version=version, seed=sc.seed)
        (out / "run.json").write_text(json.dumps(run))
        rep = write_run_reports(out)
        return RunResult(out.name, out, rep.outcome.exit_code, rep.summary, rep.paths, rep)


def test_every_version_and_seed_runs_and_lands_on_one_page(tmp_path: Path) -> None:
    runs = FakeRuns()
    out = tmp_path / "m"
    code = matrix.run_matrix(
        ["smoke"], "3.4.1,3.5.2", seeds=2, out=out, run=runs, resolver=resolver
    )
    assert code == 4  # the worst: a run whose cluster did not start
    # smoke's own seed is 1: seeds 1 and 2, on each version, in that order
    assert [(v, s) for _, v, s, _ in runs.calls] == [
        ("3.4.1", 1),
        ("3.4.1", 2),
        ("3.5.2", 1),
        ("3.5.2", 2),
    ]
    assert runs.calls[1][3] == out / "smoke" / "kafka-3.4.1" / "seed-2"
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["passed"], summary["total"]) == (1, 4)
    assert [(r["kafka_version"], r["seed"], r["verdict"]) for r in summary["runs"]] == [
        ("3.4.1", 1, "invalid"),
        ("3.4.1", 2, "invalid"),
        ("3.5.2", 1, "valid"),
    ]
    assert summary["failures"][0]["kafka_version"] == "3.5.2"
    assert summary["failures"][0]["seed"] == 2
    page = (out / "report.html").read_text()
    grid = page[page.index("<table class='grid'>") :]
    grid = grid[: grid.index("</table>")]
    # a row per version, a column per seed, every cell linking to its run's report
    assert grid.count("<tr><th>Kafka") == 2 and "seed 1" in grid and "seed 2" in grid
    for seed in (1, 2):
        assert f"href='smoke/kafka-3.4.1/seed-{seed}/report.html'" in grid
    assert "href='smoke/kafka-3.5.2/seed-1/report.html'" in grid
    assert "lost-write 1" in grid and "cluster did not start" in grid
    assert "1/4 runs ended as expected" in page
    root = ET.parse(out / "junit.xml").getroot()
    names = [s.get("name") for s in root.findall("testsuite")]
    assert sorted(names) == [
        "kchaos.smoke.kafka-3.4.1.seed-1",
        "kchaos.smoke.kafka-3.4.1.seed-2",
        "kchaos.smoke.kafka-3.5.2.seed-1",
        "kchaos.smoke.kafka-3.5.2.seed-2",
    ]
    errored = [s for s in root.findall("testsuite") if s.get("errors") == "1"]
    assert [s.get("name") for s in errored] == ["kchaos.smoke.kafka-3.5.2.seed-2"]


def test_seeds_count_up_from_the_scenarios_own_seed(tmp_path: Path) -> None:
    text = library.resolve("smoke").read_text()
    assert "\nseed: 1\n" in text
    (tmp_path / "s.yaml").write_text(text.replace("\nseed: 1\n", "\nseed: 903\n"))
    entries = matrix.plan([str(tmp_path / "s.yaml")], ["3.4.1", "3.5.2"], 3).entries
    got = [(e.scenario.cluster.kafka_version, e.scenario.seed) for e in entries]
    assert got == [(v, s) for v in ("3.4.1", "3.5.2") for s in (903, 904, 905)]
    assert entries[0].label == "smoke/kafka-3.4.1/seed-903"


@pytest.mark.parametrize(
    ("versions", "message"),
    [
        ("3.5", "not a Kafka release number"),
        ("2.8.2", "too old"),
        ("3.5.2,,4.4.0", "an empty version"),
        ("3.5.2,3.5.2", "listed twice"),
        ("3.5.2,3.5.9", "Kafka 3.5.9 cannot be built: Maven Central has no"),
    ],
)
def test_bad_versions_are_rejected_before_any_run(
    versions: str, message: str, tmp_path: Path
) -> None:
    runs = FakeRuns()
    with pytest.raises(ConfigError, match=message) as err:
        matrix.run_matrix(["smoke"], versions, out=tmp_path / "m", run=runs, resolver=resolver)
    assert err.value.field == "kafka-version"
    assert runs.calls == [] and not (tmp_path / "m").exists()


def test_bad_scenarios_are_rejected_before_any_run(tmp_path: Path) -> None:
    runs = FakeRuns()
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\n")
    for refs in (["smoke", str(bad)], ["smoke", "no-such-scenario"], ["smoke", "smoke"]):
        with pytest.raises(ConfigError):
            matrix.run_matrix(refs, "3.5.2", out=tmp_path / "m", run=runs, resolver=resolver)
    assert runs.calls == []


def test_the_image_builders_resolver_is_asked_only_for_offline_images(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    asked: list[str] = []

    def asking(version: str) -> str | None:
        asked.append(version)
        return None

    monkeypatch.setenv("KCHAOS_IMAGE_SOURCE", "registry")
    matrix.run_matrix(["smoke"], "3.5.2", out=tmp_path / "a", run=FakeRuns(), resolver=asking)
    assert asked == []
    monkeypatch.setenv("KCHAOS_IMAGE_SOURCE", "offline")
    matrix.run_matrix(["smoke"], "3.5.2", out=tmp_path / "b", run=FakeRuns(), resolver=asking)
    assert asked == ["3.5.2"]


def test_maven_resolver_uses_the_local_repository_first(tmp_path: Path) -> None:
    pom = tmp_path / "m2/org/apache/kafka/kafka_2.13/3.5.2/kafka_2.13-3.5.2.pom"
    pom.parent.mkdir(parents=True)
    pom.write_text("<project/>")
    assert matrix.maven_resolver(tmp_path)("3.5.2") is None


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["matrix", "smoke"], "names no releases to compare (ticket.compare): give --kafka"),
        (["matrix", "--kafka-version", "3.5.2"], "name at least one scenario"),
        (["matrix", "--tag", "no-such-tag"], "no library scenario is tagged 'no-such-tag'"),
        (["matrix", "smoke", "--kafka-version", "3.5.2", "--seeds", "0"], "--seeds"),
        (["matrix", "smoke", "--kafka-version", "banana"], "'banana' is not a Kafka release"),
        (["matrix", "smoke", "--kafka-version", "3.2.3"], "too old"),
        (["matrix", "nope", "--kafka-version", "3.5.2"], "no scenario named 'nope'"),
    ],
)
def test_cli_bad_input_exits_3_with_one_line(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 3
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


@pytest.mark.parametrize("flag", [[], ["--prometheus"]])
def test_prometheus_reaches_every_run_of_the_matrix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flag: list[str]
) -> None:
    from click.testing import CliRunner

    from kchaos.cli import batch
    from kchaos.harness.run import suite

    asked: list[object] = []
    runs = FakeRuns()

    def run(sc: Any, *, out: Path, **kw: Any) -> RunResult:
        asked.append(kw.get("prometheus"))
        return runs(sc, out=out)

    monkeypatch.setattr(suite, "run_scenario", run)
    monkeypatch.setattr(matrix, "maven_resolver", lambda: resolver)
    args = ["smoke", "--kafka-version", "3.5.2,4.4.0", "--out", str(tmp_path / "m"), *flag]
    result = CliRunner().invoke(batch.matrix_cmd, args, standalone_mode=False)
    assert result.exception is None, result.output
    assert asked == [bool(flag)] * 2


def test_all_plans_the_library_and_skips_releases_outside_a_ticket(tmp_path: Path) -> None:
    """`make incidents`: every library scenario on four releases; a known-bug scenario on
    a release its ticket does not cover is left out (KAFKA-16541 needs 3.7.0 or later),
    not an error, while naming it explicitly on such a release is bad input."""
    from click.testing import CliRunner

    from kchaos.cli.main import cli as group

    argv = ["matrix", "--all", "--kafka-version", "3.4.1,4.4.0", "--dry-run"]
    result = CliRunner().invoke(group, [*argv, "--durations", str(tmp_path / "d.json")])
    assert result.exit_code == 0, result.output
    cells = {x.split()[0] for x in result.output.splitlines() if x.startswith("  ")}
    names = {c.split("/")[0] for c in cells}
    # 16541 covers neither release (3.7.0 to before 4.1.0): on neither, and no error
    assert names == set(library.library_names()) - {"kafka-16541-epoch-checkpoint-os-crash"}
    assert "smoke/kafka-3.4.1/seed-1" in cells and "smoke/kafka-4.4.0/seed-1" in cells
    # 15046 runs before 4.1.0 only (Kafka 4's minimum segment size)
    assert "kafka-15046-fsync-under-log-lock/kafka-3.4.1/seed-15046" in cells
    assert not any(c.startswith("kafka-15046-fsync-under-log-lock/kafka-4.4.0") for c in cells)
    named = ["matrix", "kafka-16541-epoch-checkpoint-os-crash", "--kafka-version", "3.4.1"]
    with pytest.raises(SystemExit) as exit_:
        cli.main([*named, "--dry-run"])
    assert exit_.value.code == 3
