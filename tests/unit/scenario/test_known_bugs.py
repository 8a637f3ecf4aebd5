"""Known-bug scenarios: the ticket section, its release range, --tag and the matrix's
per-ticket table (runs replaced by hand-made run directories)."""

from __future__ import annotations

import io
import json
from html import escape
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from sample_runs import LOST, VALID, make_run

from kchaos.cli import main as cli
from kchaos.harness.errors import ConfigError
from kchaos.harness.run import matrix
from kchaos.harness.run.orchestrate import RunResult
from kchaos.harness.scenario import library
from kchaos.harness.scenario.loader import load_scenario
from kchaos.reports.build import write_run_reports

TICKET = """ticket:
  id: KAFKA-99999
  title: a made-up bug for the tests
  commit: 0123456789abcdef
  fixed_in: ["3.5.0"]
  affected_from: "3.4.0"
  compare: ["3.4.1", "3.5.2"]
"""
EXPECT = """expect:
  valid: true
  before:
    "3.5.0": {valid: false, anomalies: [lost-write], allowed: [duplicate]}
"""


def ticket_scenario(tmp_path: Path, ticket: str = TICKET, tags: str = "[known-bug]") -> Path:
    text = library.resolve("smoke").read_text()
    assert "\ntags: [quick]\n" in text and "\nchecks:" in text
    text = text.replace("\ntags: [quick]\n", f"\ntags: {tags}\n{ticket}")
    # no SLO checks: the hand-made run directories only carry what the ticket is about
    text = text[: text.index("\nchecks:")] + "\n" + EXPECT
    path = tmp_path / "bug.yaml"
    path.write_text(text.replace("name: smoke", "name: bug"))
    return path


@pytest.fixture
def from_341(tmp_path: Path) -> str:
    """A ticket scenario whose range starts at 3.4.1, so 3.3.2 is before it."""
    return str(ticket_scenario(tmp_path, TICKET.replace('"3.4.0"', '"3.4.1"')))


def test_a_ticket_loads_and_round_trips(tmp_path: Path) -> None:
    sc = load_scenario(ticket_scenario(tmp_path), kafka_version="3.4.1")
    assert sc.ticket is not None and sc.ticket.id == "KAFKA-99999"
    assert sc.ticket.compare == ("3.4.1", "3.5.2")
    assert sc.to_dict()["ticket"]["fixed_in"] == ["3.5.0"]
    assert sc.expect.anomalies == ("lost-write",)  # the affected side's expect
    fixed = load_scenario(ticket_scenario(tmp_path), kafka_version="3.5.2")
    assert fixed.expect.valid is True and fixed.expect.anomalies == ()


def test_a_release_outside_the_range_is_refused_with_file_and_line(tmp_path: Path) -> None:
    path = ticket_scenario(tmp_path, TICKET.replace('"3.4.0"', '"3.4.1"'))
    with pytest.raises(ConfigError) as err:
        load_scenario(path, kafka_version="3.3.2")
    assert "KAFKA-99999 from Kafka 3.4.1 on" in str(err.value)
    assert "3.3.2 is outside that range" in str(err.value)
    assert err.value.field == "cluster.kafka_version"


@pytest.mark.parametrize(
    ("ticket", "tags", "field", "needle"),
    [
        (TICKET.replace("KAFKA-99999", "KAFKA-x"), "[known-bug]", "ticket.id", "KAFKA-"),
        (TICKET, "[quick]", "tags", "tagged known-bug"),
        (
            TICKET.replace('["3.5.0"]', '["3.5.0", "3.5.1"]'),
            "[known-bug]",
            "ticket.fixed_in.1",
            "same release line",
        ),
        (
            TICKET.replace('"3.4.0"', '"3.6.0"'),
            "[known-bug]",
            "ticket.affected_from",
            "not older than the first fix",
        ),
        (
            TICKET.replace('"3.4.1", "3.5.2"', '"3.3.2", "3.5.2"'),
            "[known-bug]",
            "ticket.compare.0",
            "older than affected_from",
        ),
    ],
)
def test_bad_tickets_name_the_field(
    tmp_path: Path, ticket: str, tags: str, field: str, needle: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_scenario(ticket_scenario(tmp_path, ticket, tags), kafka_version="3.4.1")
    assert err.value.field == field and needle in str(err.value)
    assert err.value.line is not None


def test_names_with_tag(tmp_path: Path) -> None:
    assert "smoke" in library.names_with_tag("quick")
    with pytest.raises(ConfigError, match="no library scenario is tagged 'nope'"):
        library.names_with_tag("nope")


def test_scenarios_tag_filter_and_no_match(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["scenarios", "--tag", "quick"])
    assert exit_.value.code == 0
    assert "smoke" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        cli.main(["scenarios", "--tag", "no-such-tag"])
    assert exit_.value.code == 3
    err = capsys.readouterr().err
    assert "no library scenario is tagged 'no-such-tag'" in err and "Traceback" not in err


# the sample's lost run, within its offline SLO: only the ticket's anomaly is at stake
LOST_IN_SLO = {**LOST, "stats": VALID["stats"]}


class TicketRuns:
    """3.4.1 loses writes in seed 1 only; 3.5.2 is valid."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def __call__(self, sc: Any, *, out: Path, **_: Any) -> RunResult:
        version = sc.cluster.kafka_version
        self.calls.append((version, sc.seed))
        lost = version == "3.4.1" and sc.seed == 1
        make_run(out, results=LOST_IN_SLO if lost else VALID, name=sc.name)
        run = json.loads((out / "run.json").read_text())
        run.update(kafka_version=version, seed=sc.seed, scenario=sc.to_dict())
        (out / "run.json").write_text(json.dumps(run))
        rep = write_run_reports(out)
        return RunResult(out.name, out, rep.outcome.exit_code, rep.summary, rep.paths, rep)


def test_matrix_without_versions_runs_each_tickets_compare_releases(tmp_path: Path) -> None:
    runs = TicketRuns()
    out = tmp_path / "m"
    matrix.run_matrix(
        [str(ticket_scenario(tmp_path))], None, seeds=2, out=out, run=runs,
        resolver=lambda v: None,
    )  # fmt: skip
    assert runs.calls == [("3.4.1", 1), ("3.4.1", 2), ("3.5.2", 1), ("3.5.2", 2)]
    page = (out / "report.html").read_text()
    table = page[page.index("<h2>KAFKA-99999") :]
    table = table[: table.index("</table>")]
    # 3.4.1 showed the bug in one seed of two: it is affected; 3.5.2 never: not affected
    assert "Kafka 3.4.1</th><td>affected</td><td class='ok'><b>affected</b>" in table
    assert "1 of 2 seeds as expected" in table
    assert "Kafka 3.5.2</th><td>fixed</td><td class='ok'><b>not affected</b>" in table


def test_matrix_refuses_a_release_outside_the_range_before_any_run(tmp_path: Path) -> None:
    runs = TicketRuns()
    path = ticket_scenario(tmp_path, TICKET.replace('"3.4.0"', '"3.4.1"'))
    with pytest.raises(ConfigError, match="outside that range"):
        matrix.run_matrix(
            [str(path)], "3.3.2,3.5.2", out=tmp_path / "m", run=runs, resolver=lambda v: None
        )
    assert runs.calls == [] and not (tmp_path / "m").exists()


def test_matrix_lists_a_tagged_scenarios_release_outside_its_range(
    tmp_path: Path, from_341: str
) -> None:
    # chosen by --tag, the scenario is not run on 3.3.2 (older than its affected_from) and
    # its ticket's table says so, while 3.5.2 runs as usual
    runs = TicketRuns()
    out = tmp_path / "m"
    console = Console(file=io.StringIO(), width=200)
    matrix.run_matrix(
        [from_341], "3.3.2,3.5.2", out=out, run=runs, resolver=lambda v: None, tagged=[from_341],
        console=console,
    )  # fmt: skip
    assert runs.calls == [("3.5.2", 1)]
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert "not run: bug on Kafka 3.3.2 (KAFKA-99999: the scenario runs from Kafka 3.4.1" in printed
    page = (out / "report.html").read_text()
    table = page[page.index("<h2>KAFKA-99999") :]
    table = table[: table.index("</table>")]
    assert "Kafka 3.3.2</th><td>before the range</td><td><b>outside the scenario's range" in table
    assert "not run: the scenario runs from Kafka 3.4.1 on" in table
    assert "Kafka 3.5.2</th><td>fixed</td><td class='ok'><b>not affected</b>" in table


def test_matrix_refuses_when_no_tagged_scenario_covers_the_release(
    tmp_path: Path, from_341: str
) -> None:
    runs = TicketRuns()
    with pytest.raises(ConfigError, match=r"no scenario covers Kafka 3\.3\.2: .*3\.4\.1 on"):
        matrix.run_matrix(
            [from_341], "3.3.2", out=tmp_path / "m", run=runs, resolver=lambda v: None,
            tagged=[from_341],
        )  # fmt: skip
    assert runs.calls == [] and not (tmp_path / "m").exists()


@pytest.mark.parametrize("versions", [None, ["3.3.2", "3.5.2"]])
def test_the_plan_reads_a_tagged_scenario_without_a_release_once(
    from_341: str, versions: list[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # once for its ticket (range and compare list), then once per release it runs on
    loads: list[str | None] = []
    real = library.load

    def counting(ref: str, **kw: Any) -> Any:
        loads.append(kw.get("kafka_version"))
        return real(ref, **kw)

    monkeypatch.setattr(library, "load", counting)
    planned = matrix.plan([from_341], versions, 1, tagged=[from_341])
    ran = [e.label.split("/")[1] for e in planned.entries]
    assert ran == (["kafka-3.4.1", "kafka-3.5.2"] if versions is None else ["kafka-3.5.2"])
    assert loads == [None, *(r.removeprefix("kafka-") for r in ran)]


class FixedReleaseMisses:
    """3.4.1 shows the bug; on 3.5.2 seed 1 ends not as expected: with the bug's own kind
    (``lost``) or only through its offline SLO (``slo``)."""

    def __init__(self, miss: str) -> None:
        self.miss = miss

    def __call__(self, sc: Any, *, out: Path, **_: Any) -> RunResult:
        version = sc.cluster.kafka_version
        if version == "3.4.1" or (sc.seed == 1 and self.miss == "lost"):
            results = LOST_IN_SLO
        elif sc.seed == 1:  # valid, but the offline SLO failed
            results = {**VALID, "stats": LOST["stats"]}
        else:
            results = VALID
        make_run(out, results=results, name=sc.name)
        run = json.loads((out / "run.json").read_text())
        run.update(kafka_version=version, seed=sc.seed, scenario=sc.to_dict())
        (out / "run.json").write_text(json.dumps(run))
        rep = write_run_reports(out)
        return RunResult(out.name, out, rep.outcome.exit_code, rep.summary, rep.paths, rep)


@pytest.mark.parametrize(
    ("miss", "status"),
    [
        ("lost", "seen on a fixed release"),
        ("slo", "not as expected on a fixed release (not the bug)"),
    ],
)
def test_seen_on_a_fixed_release_only_with_the_tickets_kind(
    tmp_path: Path, miss: str, status: str
) -> None:
    path = ticket_scenario(tmp_path, TICKET + "  kind: lost-write\n")
    out = tmp_path / "m"
    matrix.run_matrix(
        [str(path)], None, seeds=2, out=out, run=FixedReleaseMisses(miss),
        resolver=lambda v: None,
    )  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    fixed_runs = [r for r in summary["runs"] if r.get("kafka_version") == "3.5.2"]
    assert [r["expected"] for r in sorted(fixed_runs, key=lambda r: r["seed"])] == [False, True]
    page = (out / "report.html").read_text()
    table = page[page.index("<h2>KAFKA-99999") :]
    table = table[: table.index("</table>")]
    assert f"Kafka 3.5.2</th><td>fixed</td><td class='bad'><b>{escape(status)}</b>" in table
    assert "1 of 2 seeds as expected" in table
