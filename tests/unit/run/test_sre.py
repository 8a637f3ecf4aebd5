"""SRE validation without Docker: the rebuilt scenarios, the configs' bad input, and the
go/no-go page from hand-made run directories."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sample_runs import LOST, VALID, make_run

from kchaos.harness.errors import ConfigError
from kchaos.harness.run import sre
from kchaos.harness.run.orchestrate import RunResult
from kchaos.harness.rundir.expect import EXIT_NOT_JUDGED
from kchaos.harness.scenario import library
from kchaos.reports.build import write_run_reports
from kchaos.reports.sre import decision

SAFE = "min.insync.replicas=2\nunclean.leader.election.enable=false\n"
UNSAFE = "min.insync.replicas=1\nunclean.leader.election.enable=true\n"


def config(tmp_path: Path, name: str, text: str) -> sre.SreConfig:
    path = tmp_path / f"{name}.properties"
    path.write_text(text)
    return sre.load_configs([path])[0]


def overridden(items: tuple[sre.Override, ...]) -> dict[tuple[str, str], tuple[str, Any, str]]:
    return {(o.where, o.key): (o.scenario, o.now, o.by) for o in items}


def test_the_sre_settings_replace_the_scenarios_own(tmp_path: Path) -> None:
    cfg = config(tmp_path, "safe", SAFE)
    original = library.load("unsafe-acks1-unclean-election")
    sc, items = sre.sre_scenario(original, cfg, sre.PROFILES["safe"])
    props = sc.cluster.server_properties
    assert props["unclean.leader.election.enable"] == "false"
    assert props["min.insync.replicas"] == "2"
    assert props["replica.lag.time.max.ms"] == "5000"  # not the config's business: kept
    assert sc.topics[0].configs == {}  # both topic overrides dropped: the broker's apply
    p = sc.workload.producers
    assert p.acks == "all" and p.configs["enable.idempotence"] == "true"
    assert "retries" not in p.configs and p.configs["delivery.timeout.ms"] == "120000"
    assert p.configs["request.timeout.ms"] == "3000"  # not the profile's: kept
    assert sc.expect.valid is True and sc.expect.anomalies == ()
    assert set(sc.expect.allowed) == {"offline", "unclean-election"}
    assert sc.expect.allowed_causes == ("producer-epoch-bump",)  # a client's re-send
    assert asdict(sc.checks) == {**{k: None for k in asdict(sc.checks)}, "min_ok_sends": 1}
    got = overridden(items)
    assert got[("server", "unclean.leader.election.enable")] == ("true", "false", str(cfg.path))
    assert got[("topic unsafe", "min.insync.replicas")] == ("1", "2", str(cfg.path))
    assert got[("producer", "acks")] == ("1", "all", "profile safe")
    assert got[("producer", "retries")] == ("0", None, "profile safe")
    assert got[("producer", "enable.idempotence")] == ("false", "true", "profile safe")
    # recorded for run.json
    extra = sre.run_extra(cfg, sre.PROFILES["safe"], items)
    assert extra["sre"]["label"] == "safe" and extra["sre"]["profile"] == "safe"
    assert {
        "where": "producer",
        "key": "acks",
        "scenario": "1",
        "now": "all",
        "by": "profile safe",
    } in extra["sre"]["overridden"]


def test_durability_settings_the_config_leaves_out_fall_back_to_kafkas_default(
    tmp_path: Path,
) -> None:
    cfg = config(tmp_path, "bare", "replica.lag.time.max.ms=10000\n")
    original = library.load("whole-cluster-power-loss-flush-every-message")
    assert "log.flush.interval.messages" in original.cluster.server_properties
    sc, items = sre.sre_scenario(original, cfg, sre.PROFILES["acks1"])
    assert "log.flush.interval.messages" not in sc.cluster.server_properties
    assert sc.cluster.server_properties["replica.lag.time.max.ms"] == "10000"
    got = overridden(items)
    assert got[("server", "log.flush.interval.messages")][1:] == (None, "default")
    assert got[("server", "replica.lag.time.max.ms")] == ("5000", "10000", str(cfg.path))
    assert got[("topic power", "min.insync.replicas")][1:] == (None, "default")
    assert sc.workload.producers.acks == "1" and "duplicate" in sc.expect.allowed


def test_a_topic_config_gives_way_to_its_broker_synonym(tmp_path: Path) -> None:
    cfg = config(tmp_path, "flush", "log.flush.interval.messages=1\n")
    original = library.load("smoke", overrides=["topics.0.configs.flush.messages=1000"])
    sc, items = sre.sre_scenario(original, cfg, sre.PROFILES["safe"])
    assert "flush.messages" not in sc.topics[0].configs
    assert overridden(items)[(f"topic {sc.topics[0].name}", "flush.messages")][1] == "1"


@pytest.mark.parametrize(
    ("text", "line", "field", "what"),
    [
        (
            "min.insync.replicas=2\nunclean.leader.election.enable\n",
            2,
            "unclean.leader.election.enable",
            "not a key=value line",
        ),
        ("# only a comment\n", None, None, "no property"),
    ],
)
def test_bad_config_files_are_named_with_their_line(
    tmp_path: Path, text: str, line: int | None, field: str | None, what: str
) -> None:
    path = tmp_path / "bad.properties"
    path.write_text(text)
    with pytest.raises(ConfigError, match=what) as err:
        sre.load_configs([path])
    assert err.value.exit_code == 3
    assert (err.value.file, err.value.line, err.value.field) == (str(path), line, field)


def test_an_explicitly_empty_value_is_a_property(tmp_path: Path) -> None:
    cfg = config(tmp_path, "empty", "ssl.endpoint.identification.algorithm=\n")
    assert cfg.properties == {"ssl.endpoint.identification.algorithm": ""}


def test_a_missing_config_and_a_repeated_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read broker config") as err:
        sre.load_configs([tmp_path / "nope.properties"])
    assert err.value.file == str(tmp_path / "nope.properties")
    (tmp_path / "a.properties").write_text(SAFE)
    with pytest.raises(ConfigError, match="given twice"):
        sre.load_configs([tmp_path / "a.properties", tmp_path / "a.properties"])
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.properties").write_text(UNSAFE)
    labels = [
        c.label
        for c in sre.load_configs([tmp_path / "a.properties", tmp_path / "x" / "a.properties"])
    ]
    assert len(set(labels)) == 2


def test_an_unknown_profile_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown profile 'yolo'"):
        sre.profile("yolo")


seen: dict[str, Any] = {}


def finished(
    out: Path, name: str, results: Any, expect: dict[str, Any], extra: dict[str, Any]
) -> RunResult:
    """A hand-made run directory with these results, its run.json carrying the
    validation's ``extra``, and its reports: what a fake ``run`` of run_validation returns."""
    make_run(out, results=results, expect=expect, name=name)
    run = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**run, **extra}))
    rep = write_run_reports(out)
    return RunResult(out.name, out, rep.outcome.exit_code, rep.summary, rep.paths, rep)


def fake_run(sc: Any, *, out: Path, extra: dict[str, Any], **_: Any) -> RunResult:
    """Lost writes under the config labelled ``unsafe``, valid under the others."""
    seen[str(out)] = (sc, extra)
    label = extra["sre"]["label"]
    expect = {"valid": True, "anomalies": [], "allowed": list(sc.expect.allowed)}
    return finished(out, sc.name, LOST if label == "unsafe" else VALID, expect, extra)


def test_the_go_no_go_matrix(tmp_path: Path) -> None:
    safe = tmp_path / "safe.properties"
    safe.write_text(SAFE)
    unsafe = tmp_path / "unsafe.properties"
    unsafe.write_text(UNSAFE)
    files = [library.resolve("smoke"), library.resolve("unsafe-acks1-unclean-election")]
    out = tmp_path / "out"
    code = sre.run_validation("mine", files, [safe, unsafe], out=out, run=fake_run, console=None)
    assert code == 1  # an unexpected anomaly
    assert len(seen) == 4
    sc, extra = seen[str(out / "unsafe-acks1-unclean-election" / "unsafe")]
    assert sc.topics[0].configs == {} and extra["sre"]["properties"]["min.insync.replicas"] == "1"
    page = (out / "report.html").read_text()
    assert "NO-GO: 2/4 cells go" in page
    grid = page[page.index("id='go-no-go'") :].split("</table>")[0]
    assert grid.count("class='ok'") == 2 and grid.count("class='bad'") == 2
    assert "unsafe-acks1-unclean-election/unsafe/report.html" in grid
    assert "lost-write" in grid
    assert "profile safe" in page and "topic unsafe" in page
    root = ET.parse(out / "junit.xml").getroot()
    names = {s.get("name") for s in root.findall("testsuite")}
    assert names == {
        f"kchaos.{s}.config-{c}"
        for s in ("smoke", "unsafe-acks1-unclean-election")
        for c in ("safe", "unsafe")
    }
    summary = json.loads((out / "summary.json").read_text())
    rows = {(r["scenario"], r["sre_config"]): r for r in summary["runs"]}
    row = rows[("unsafe-acks1-unclean-election", "safe")]
    assert row["expected"] is True and any(o["key"] == "acks" for o in row["overridden"])


def client_duplicates(sc: Any, *, out: Path, extra: dict[str, Any], **_: Any) -> RunResult:
    """Elections after a power loss and duplicates: the client's re-sends under the config
    labelled ``safe``, one the broker wrote twice under the other."""
    cause = "producer-epoch-bump" if extra["sre"]["label"] == "safe" else "sequence-written-twice"
    results = {
        "valid": False,
        "anomalies": {
            "unclean-election": {"count": 3, "examples": []},
            "duplicate": {"count": 2, "examples": [], "causes": {cause: 2}},
        },
    }
    e = sc.expect
    expect = {"valid": True, "allowed": list(e.allowed), "allowed_causes": list(e.allowed_causes)}
    return finished(out, sc.name, results, expect, extra)


def test_a_duplicate_pinned_on_the_client_is_not_red(tmp_path: Path) -> None:
    safe, other = tmp_path / "safe.properties", tmp_path / "other.properties"
    safe.write_text(SAFE)
    other.write_text(SAFE)
    out = tmp_path / "out"
    files = [library.resolve("smoke")]
    code = sre.run_validation(
        "mine", files, [safe, other], out=out, run=client_duplicates, console=None
    )
    assert code == 1  # the broker's duplicate is red
    page = (out / "report.html").read_text()
    grid = page[page.index("id='go-no-go'") :].split("</table>")[0]
    assert grid.count("class='ok'") == 1 and grid.count("class='bad'") == 1
    assert "duplicate 2 (producer-epoch-bump 2)" in grid
    assert "duplicate 2 (sequence-written-twice 2)" in grid
    assert "(checker: invalid; every anomaly reported, not red)" in grid  # the GO cell


def unjudged_replicas(sc: Any, *, out: Path, extra: dict[str, Any], **_: Any) -> RunResult:
    """Valid runs; under the config labelled ``blind`` results.json lists replica-divergence
    (invalidating, not allowed by the profile) as unjudged, under ``other`` offline (allowed
    by every validation) is."""
    label = extra["sre"]["label"]
    kind = "replica-divergence" if label == "blind" else "offline"
    results = {**VALID, "unjudged": {kind: "replicas.jsonl not read: no file"}}
    e = sc.expect
    expect = {"valid": True, "allowed": list(e.allowed), "allowed_causes": list(e.allowed_causes)}
    return finished(out, sc.name, results, expect, extra)


def test_no_go_where_a_kind_the_profile_relies_on_is_unjudged(tmp_path: Path) -> None:
    blind, other = tmp_path / "blind.properties", tmp_path / "other.properties"
    blind.write_text(SAFE)
    other.write_text(SAFE)
    out = tmp_path / "out"
    files = [library.resolve("smoke")]
    code = sre.run_validation(
        "mine", files, [blind, other], out=out, run=unjudged_replicas, console=None
    )
    assert code == EXIT_NOT_JUDGED  # every run as expected, yet no GO
    page = (out / "report.html").read_text()
    assert "id='decision'>NOT JUDGED: 1/2 cells go" in page  # not a GO, and why
    grid = page[page.index("id='go-no-go'") :].split("</table>")[0]
    assert grid.count("<b>NOT JUDGED</b>") == 1 and grid.count("<b>GO</b>") == 1
    assert "not judged: replica-divergence" in grid


def test_a_cell_that_did_not_run_is_named_by_its_config(tmp_path: Path) -> None:
    """In junit.xml, summary.json and the console table, as the cells that ran are."""
    import io

    from rich.console import Console

    from kchaos.harness.errors import ClusterError

    def run(sc: Any, *, out: Path, extra: dict[str, Any], **kw: Any) -> RunResult:
        if extra["sre"]["label"] == "unsafe":
            raise ClusterError("cluster did not start")
        return fake_run(sc, out=out, extra=extra, **kw)

    safe = tmp_path / "safe.properties"
    safe.write_text(SAFE)
    unsafe = tmp_path / "unsafe.properties"
    unsafe.write_text(UNSAFE)
    out = tmp_path / "out"
    console = Console(file=io.StringIO(), width=200, color_system=None, record=True)
    code = sre.run_validation(
        "mine", [library.resolve("smoke")], [safe, unsafe], out=out, run=run, console=console
    )
    assert code == 4  # a run that could not start
    names = {s.get("name") for s in ET.parse(out / "junit.xml").getroot().findall("testsuite")}
    assert names == {"kchaos.smoke.config-safe", "kchaos.smoke.config-unsafe"}
    (failure,) = json.loads((out / "summary.json").read_text())["failures"]
    assert failure["sre_config"] == "unsafe" and failure["error"] == "cluster did not start"
    text = console.export_text()
    assert "│ smoke [safe]   │ valid" in text and "│ smoke [unsafe] │ error" in text


def test_bad_input_is_refused_before_any_run(tmp_path: Path) -> None:
    bad = tmp_path / "bad.properties"
    bad.write_text("min.insync.replicas=5\n")  # above the smoke topic's replication factor
    calls: list[Any] = []
    with pytest.raises(ConfigError) as err:
        sre.run_validation(
            "x",
            [library.resolve("smoke")],
            [bad],
            out=tmp_path / "o",
            run=lambda *a, **k: calls.append(a),
        )
    assert err.value.file == str(bad) and err.value.line == 1
    assert err.value.field == "min.insync.replicas" and "replication factor 3" in str(err.value)
    assert calls == []


def test_the_suite_command_checks_its_sre_options(tmp_path: Path) -> None:
    from kchaos.cli.scenario import suite_cmd

    runner = CliRunner()
    src = tmp_path / "s"
    src.mkdir()
    (src / "smoke.yaml").write_text(library.resolve("smoke").read_text())
    result = runner.invoke(suite_cmd, [str(src), "--profile", "safe"], standalone_mode=False)
    assert isinstance(result.exception, ConfigError) and "needs --broker-config" in str(
        result.exception
    )
    (tmp_path / "a.properties").write_text(SAFE)
    args = [str(src), "--broker-config", str(tmp_path / "a.properties"), "--profile", "x"]
    result = runner.invoke(suite_cmd, args, standalone_mode=False)
    assert isinstance(result.exception, ConfigError) and "unknown profile" in str(result.exception)


@pytest.mark.parametrize("flag", [[], ["--prometheus"]])
def test_prometheus_reaches_every_cell_of_the_validation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flag: list[str]
) -> None:
    from kchaos.cli.scenario import suite_cmd
    from kchaos.harness.run import suite

    asked: list[object] = []

    def run(sc: Any, *, out: Path, extra: dict[str, Any], **kw: Any) -> RunResult:
        asked.append(kw.get("prometheus"))
        return fake_run(sc, out=out, extra=extra)

    monkeypatch.setattr(suite, "run_scenario", run)
    src = tmp_path / "s"
    src.mkdir()
    (src / "smoke.yaml").write_text(library.resolve("smoke").read_text())
    (tmp_path / "safe.properties").write_text(SAFE)
    (tmp_path / "unsafe.properties").write_text(UNSAFE)
    args = [str(src), "--out", str(tmp_path / "o"), *flag]
    for name in ("safe", "unsafe"):
        args += ["--broker-config", str(tmp_path / f"{name}.properties")]
    result = CliRunner().invoke(suite_cmd, args, standalone_mode=False)
    assert result.exception is None, result.output
    assert asked == [bool(flag)] * 2


# -- the transactional profile -------------------------------------------------------------


def test_the_transactional_profile_plans_transactional_workloads(tmp_path: Path) -> None:
    from kchaos.harness.scenario.plan import plan_of

    safe, unsafe = config(tmp_path, "safe", SAFE), config(tmp_path, "unsafe", UNSAFE)
    names = ["smoke", "unsafe-acks1-unclean-election", "txn-smoke"]
    prof = sre.profile("transactional")
    entries = sre.plan([library.resolve(n) for n in names], [safe, unsafe], prof)
    # which cells: every scenario under every config
    assert [e.label for e in entries] == [f"{n}/{c}" for n in names for c in ("safe", "unsafe")]
    cells = {e.label: e for e in entries}
    for name in ("smoke", "unsafe-acks1-unclean-election"):
        original = library.load(name)
        p = original.workload.producers
        sc = cells[f"{name}/safe"].scenario
        w = sc.workload
        assert w.producers.count == 0 and w.client == "confluent-kafka"
        tx = w.transactions
        assert tx is not None and tx.producers == p.count and tx.copier is None
        assert tx.rate == pytest.approx(p.rate / 2.5) and tx.max_sends == 4
        assert tx.timeout == 10.0 and tx.process and tx.abort_ratio == 0.2 and tx.configs == {}
        # the plan the runner gets: transactional workers in processes of their own, and
        # every reader read_committed (the scenario's consumers, or two added readers)
        spec = plan_of(sc).workload
        assert spec.producers.count == 0 and spec.transactions is not None
        assert spec.transactions.process and spec.transactions.producer_topics(spec.topics)
        roles = [role for _, role, _ in spec.txn_processes()]
        assert roles == ["producer"] * p.count
        readers = spec.consumer_workers()
        assert readers and {c.isolation for c in readers} == {"read_committed"}
        if original.workload.consumers.count == 0:
            assert (tx.readers.subscribe, tx.readers.assign) == (1, 1)
            assert sorted(c.mode for c in readers) == ["assign", "subscribe"]
        else:
            assert w.consumers.isolation == "read_committed"
            assert len(readers) == original.workload.consumers.count
        got = overridden_of(cells[f"{name}/safe"])
        assert got[("producer", "count")] == (str(p.count), "0", "profile transactional")
        assert got[("transactions", "producers")][1] == str(p.count)
        for key in p.configs:  # the plain producers' own settings do not carry over
            assert got[("transactions", key)][1:] == (None, "profile transactional")
        assert sc.expect.valid is True and set(sc.expect.allowed) == {"offline", "unclean-election"}
        assert cells[f"{name}/safe"].extra["sre"]["profile"] == "transactional"
    # a transactional scenario keeps its workers, their ids and its coordinator targets
    original = library.load("txn-smoke")
    sc = cells["txn-smoke/unsafe"].scenario
    assert sc.workload.transactions == original.workload.transactions
    assert plan_of(sc).workload.txn_processes() == plan_of(original).workload.txn_processes()
    assert not any(k[0] == "transactions" for k in overridden_of(cells["txn-smoke/unsafe"]))


def overridden_of(entry: Any) -> dict[tuple[str, str], tuple[str, Any, str]]:
    return {(o["where"], o["key"]): (o["scenario"], o["now"], o["by"])
            for o in entry.extra["sre"]["overridden"]}  # fmt: skip


def test_a_transactional_scenario_keeps_its_workload_under_every_profile(tmp_path: Path) -> None:
    cfg = config(tmp_path, "safe", SAFE)
    original = library.load("txn-coordinator-failover")
    for prof in sre.PROFILES.values():
        sc, _ = sre.sre_scenario(original, cfg, prof)
        assert sc.workload.transactions == original.workload.transactions, prof.name
        assert sc.nemesis == original.nemesis


def test_a_validation_with_the_transactional_profile_runs_every_cell(tmp_path: Path) -> None:
    safe = tmp_path / "safe.properties"
    safe.write_text(SAFE)
    out = tmp_path / "out"
    files = [library.resolve("smoke"), library.resolve("txn-smoke")]
    seen.clear()
    code = sre.run_validation(
        "t", files, [safe], profile_name="transactional", out=out, run=fake_run, console=None
    )
    assert code == 0 and len(seen) == 2
    sc, extra = seen[str(out / "smoke" / "safe")]
    assert sc.workload.transactions is not None and extra["sre"]["profile"] == "transactional"
    assert "profile transactional" in (out / "report.html").read_text()


def test_transaction_verification_is_the_configs_decision_not_the_scenarios(
    tmp_path: Path,
) -> None:
    # KIP-890 part 1: a scenario that turns verification off (to show a hanging
    # transaction) does not carry that into a validation of the SRE's config
    cfg = config(tmp_path, "plain", SAFE)
    key = "transaction.partition.verification.enable"
    original = library.load("txn-smoke", overrides=[f"cluster.server_properties.{key}=false"])
    assert original.cluster.server_properties[key] == "false"
    sc, items = sre.sre_scenario(original, cfg, sre.PROFILES["safe"])
    assert key not in sc.cluster.server_properties
    assert overridden(items)[("server", key)][1:] == (None, "default")


def test_an_sre_config_that_turns_transaction_verification_off_keeps_it(tmp_path: Path) -> None:
    key = "transaction.partition.verification.enable"
    cfg = config(tmp_path, "risky", SAFE + f"{key}=false\n")
    sc, _ = sre.sre_scenario(library.load("txn-smoke"), cfg, sre.PROFILES["safe"])
    assert sc.cluster.server_properties[key] == "false"


def harmless_run(sc: Any, *, out: Path, extra: dict[str, Any], **_: Any) -> RunResult:
    """Valid under every config, with each fault's effect as results.json's evidence
    gives it: seen under the config labelled ``safe``, not seen under the other (as with
    a latency toxic of 0 ms)."""
    seen_here = extra["sre"]["label"] == "safe"
    faults = [
        {"name": f"f-{i}", "family": name, "started": True,
         "effect": "seen" if seen_here else "not-seen", "observed": "measured"}
        for i, name in enumerate(sc.expect.effects, 1)
    ]  # fmt: skip
    results = {**VALID, "evidence": {"faults": faults}}
    e = sc.expect
    expect = {"valid": True, "allowed": list(e.allowed), "effects": list(e.effects)}
    return finished(out, sc.name, results, expect, extra)


def test_a_go_needs_every_faults_effect_seen(tmp_path: Path) -> None:
    original = library.load("smoke")
    cfg = config(tmp_path, "safe", SAFE)
    sc, _ = sre.sre_scenario(original, cfg, sre.PROFILES["safe"])
    assert sc.expect.effects == tuple(sorted({s.fault for s in original.nemesis.steps}))
    assert sc.expect.effects  # smoke has faults: the test below means something
    safe, harmless = tmp_path / "safe.properties", tmp_path / "harmless.properties"
    safe.write_text(SAFE)
    harmless.write_text(SAFE)
    out = tmp_path / "out"
    files = [library.resolve("smoke")]
    code = sre.run_validation("mine", files, [safe, harmless], out=out, run=harmless_run)
    assert code == 6  # not exercised
    page = (out / "report.html").read_text()
    assert "id='decision'>NOT EXERCISED: 1/2 cells go" in page
    grid = page[page.index("id='go-no-go'") :].split("</table>")[0]
    assert grid.count("class='ok'") == 1 and "<b>NOT EXERCISED</b>" in grid
    # the same runs with every effect seen are GO
    assert decision(["GO", "GO"]) == "GO"
    assert decision(["GO", "NOT EXERCISED", "NO-GO"]) == "NO-GO"
