"""``kchaos matrix``: scenarios × Kafka versions × seeds, one run each, one page.

    kchaos matrix kip-903-lost-page-cache-rejoin --kafka-version 3.4.1,3.5.2 --seeds 3

Every combination runs on a fresh cluster, one after another (the suite's machinery:
:func:`kchaos.harness.run.suite.run_entries`), or with ``--parallel P`` up to P at once,
each in a process of its own (:mod:`kchaos.harness.run.parallel`; the outputs are the
same), into ``OUT/SCENARIO/kafka-V/seed-S/``. The page
``OUT/report.html`` shows, per scenario, a grid of versions by seeds (verdict, outcome
against the scenario's ``expect``, anomaly counts; each cell links to its run's report)
above the suite's table; ``OUT/junit.xml`` has one test suite per run
(``kchaos.SCENARIO.kafka-V.seed-S``); ``OUT/summary.json`` lists every run.

Seeds: with ``--seeds N``, run i (i = 0 .. N-1) of a scenario uses the scenario's own
seed + i, so ``--seeds 1`` is the scenario as written and the same matrix replays the same
fault schedules.

``--tag TAG`` adds every library scenario with that tag (``known-bug``: the Kafka tickets
kchaos reproduces). ``--kafka-version`` may then be left out: each scenario with a
``ticket`` runs on its ticket's ``compare`` releases (an affected one and a fixed one),
and the page gets a table per ticket: for each release, affected, not affected, not
reproduced here, seen on a fixed release (a seed there found the ticket's own ``kind``) or
not as expected on a fixed release for another reason, with how many seeds showed it. A
release that a tagged scenario's ticket does not cover (older than its ``affected_from``,
or at or past its ``runs_before``) is not run: the ticket's table lists it as outside the
scenario's range, so that ``kchaos matrix --tag known-bug --kafka-version V`` answers for
every ticket. A scenario named on the command line is still refused on such a release
(bad input, exit 3).

Nothing starts before everything is checked: every scenario is loaded for every version,
and every version must be a release number kchaos can run (``X.Y.Z``, 3.3.0 or later) and,
for the offline images (the default), one whose broker jar Maven Central has: the jar
resolver is asked for ``org.apache.kafka:kafka_2.13:V``'s POM (from its local repository
when an earlier build fetched it; otherwise one small download).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kchaos.harness.errors import ConfigError
from kchaos.harness.run import shard as shards
from kchaos.harness.run.shard import ShardSpec
from kchaos.harness.rundir.tickets import Ticket

if TYPE_CHECKING:
    from kchaos.harness.rundir.scenario_model import Scenario

SCALA_BINARY = "2.13"  # compose/kafka/pom.xml's scala.binary
Resolver = Callable[[str], str | None]  # version -> None when found, else why not


@dataclass(frozen=True)
class OutOfRange:
    """A (tagged scenario, release) pair left out: the release is outside the scenario's
    ticket's range (older than ``affected_from``, or at or past ``runs_before``)."""

    scenario: str
    ticket: Ticket
    version: str


@dataclass(frozen=True)
class MatrixPlan:
    entries: list[Any]  # SuiteEntry, scenario by scenario, then version, then seed
    out_of_range: list[OutOfRange] = field(default_factory=list)


def parse_versions(text: str) -> list[str]:
    """``"3.4.1,3.5.2"`` -> ["3.4.1", "3.5.2"]: each a runnable release number, no
    repeats; ConfigError (field kafka-version) otherwise."""
    from kchaos.harness.images.versions import parse_kafka_version

    versions: list[str] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            raise ConfigError(f"an empty version in {text!r}", field="kafka-version")
        version = str(parse_kafka_version(item))
        if version in versions:
            raise ConfigError(f"{version} is listed twice", field="kafka-version")
        versions.append(version)
    return versions


def maven_resolver(cache: Path | None = None, timeout: float = 300.0) -> Resolver:
    """Asks Maven (the image builder's own jar resolver, same local repository) whether
    Maven Central has Kafka's broker jar in that version."""
    from kchaos.harness import paths
    from kchaos.harness.images.steps import subprocess_runner

    repo = (cache or paths.cache_dir()) / "m2"

    def resolve(version: str) -> str | None:
        artifact = f"kafka_{SCALA_BINARY}"
        local = repo / "org" / "apache" / "kafka" / artifact / version / f"{artifact}-{version}.pom"
        if local.is_file():
            return None
        done = subprocess_runner(
            [
                "mvn",
                "-B",
                "-q",
                f"-Dmaven.repo.local={repo}",
                "dependency:get",
                f"-Dartifact=org.apache.kafka:{artifact}:{version}:pom",
                "-Dtransitive=false",
            ],
            timeout=timeout,
        )
        if done.returncode == 0:
            return None
        tail = " ".join(done.output.split()[-40:])
        if "Could not find artifact" in done.output or "not found" in done.output:
            return f"Maven Central has no org.apache.kafka:{artifact}:{version}"
        return f"the jar resolver could not check it (mvn exit {done.returncode}: {tail})"

    return resolve


def check_versions(versions: Sequence[str], source: str, resolver: Resolver | None) -> None:
    """Each version must be buildable (offline images) before any run starts."""
    if source != "offline" or resolver is None:
        return
    for version in versions:
        why = resolver(version)
        if why is not None:
            raise ConfigError(f"Kafka {version} cannot be built: {why}", field="kafka-version")


def compare_releases(sc: Scenario) -> list[str]:
    """The releases a scenario's ticket compares (ConfigError when it names none), for a
    matrix run without ``--kafka-version``."""
    if sc.ticket is None or not sc.ticket.compare:
        raise ConfigError(
            f"scenario {sc.name!r} names no releases to compare (ticket.compare): "
            "give --kafka-version",
            field="kafka-version",
        )
    return list(sc.ticket.compare)


def plan(
    refs: Sequence[str],
    versions: Sequence[str] | None,
    seeds: int,
    *,
    overrides: Sequence[str] = (),
    tagged: Collection[str] = (),
) -> MatrixPlan:
    """Every (scenario, version, seed) as a SuiteEntry, scenario by scenario, then version,
    then seed; each scenario loaded (and so validated) once per version. ``versions``
    None: each scenario's ticket's ``compare`` releases. A scenario in ``tagged`` (chosen by
    ``--tag``) skips the releases its ticket does not cover (:class:`OutOfRange`); any other
    scenario on such a release is bad input."""
    from kchaos.harness.run.suite import SuiteEntry
    from kchaos.harness.scenario import library

    if seeds < 1:
        raise ConfigError(f"must be at least 1, got {seeds}", field="seeds")
    entries = []
    skipped: list[OutOfRange] = []
    seen: set[str] = set()
    for ref in refs:
        mine = list(versions or ())
        if not versions or ref in tagged:
            # the scenario without a release: its ticket's compare list and range, read once
            whole = library.load(ref, overrides=overrides)
            mine = mine or compare_releases(whole)
            ticket = whole.ticket if ref in tagged else None
            if ticket is not None:
                skipped += [OutOfRange(whole.name, ticket, v) for v in mine if not ticket.covers(v)]
                mine = [v for v in mine if ticket.covers(v)]
        for version in mine:
            sc = library.load(ref, overrides=overrides, kafka_version=version)
            if version == mine[0]:
                if sc.name in seen:
                    raise ConfigError(f"scenario {sc.name!r} is listed twice", file=ref)
                seen.add(sc.name)
            for i in range(seeds):
                seed = sc.seed + i
                label = f"{sc.name}/kafka-{version}/seed-{seed}"
                entries.append(SuiteEntry(label, replace(sc, seed=seed)))
    if not entries:
        raise ConfigError(
            f"no scenario covers Kafka {', '.join(versions or [])}: "
            + "; ".join(f"{o.scenario}: {o.ticket.range_note()}" for o in skipped),
            field="kafka-version",
        )
    return MatrixPlan(entries, skipped)


def run_matrix(
    refs: Sequence[str],
    versions_text: str | None,
    *,
    seeds: int = 1,
    out: Path | None = None,
    overrides: Sequence[str] = (),
    console: Any = None,
    command: list[str] | None = None,
    run: Callable[..., Any] | None = None,
    resolver: Resolver | None = None,
    prometheus: bool = False,
    tagged: Collection[str] = (),
    shard: ShardSpec | None = None,
    durations: Path | None = None,
    dry_run: bool = False,
    parallel: int = 1,
    start: Any = None,
) -> int:
    """Run the matrix (``prometheus``: a Prometheus server for each run; ``tagged``: the
    refs chosen by ``--tag``, see :func:`plan`; ``shard``: only that shard of the plan,
    balanced by the ``durations`` file, :mod:`kchaos.harness.run.shard`; ``dry_run``:
    print the shard's cells and run nothing; ``parallel``: up to that many cells at once,
    :mod:`kchaos.harness.run.parallel`, whose cell starter ``start`` is for tests); 0
    when every run ended as its scenario expects, else the worst exit code of
    `kchaos run`."""
    from kchaos.harness.run.parallel import check_environment, check_parallel
    from kchaos.harness.run.suite import run_entries, suite_dir_for
    from kchaos.harness.scenario.plan import image_source
    from kchaos.reports.console import make_console

    console = console or make_console()
    parallel = check_parallel(parallel)
    check_environment(parallel)
    if not refs:
        raise ConfigError("name at least one scenario", field="SCENARIO")
    given = parse_versions(versions_text) if versions_text else None
    planned = plan(refs, given, seeds, overrides=overrides, tagged=tagged)
    split = shards.split("matrix", planned.entries, shard, durations)
    if dry_run:
        shards.print_plan(console, split)
        return 0
    entries = split.chosen
    versions = given or list(
        dict.fromkeys(str(e.scenario.cluster.kafka_version) for e in planned.entries)
    )
    if any(image_source(e.scenario) == "offline" for e in entries):
        check_versions(versions, "offline", resolver or maven_resolver())
    name = "+".join(sorted({e.scenario.name for e in planned.entries}))
    suite_dir = suite_dir_for(name if len(name) < 60 else "scenarios", out, prefix="matrix")
    suite_dir.mkdir(parents=True, exist_ok=True)
    title = f"kchaos matrix {name}"
    mine = title if split.spec.count == 1 else f"{title} (shard {split.spec})"
    console.print(
        f"{len(planned.entries)} runs: {len(refs)} scenario(s) x Kafka {', '.join(versions)} x "
        f"{seeds} seed(s) -> {suite_dir}"
        + ("" if split.spec.count == 1 else f"; shard {split.spec}: {len(entries)} of them")
        + ("" if parallel == 1 else f"; up to {parallel} at once")
    )
    for o in planned.out_of_range:
        console.print(
            f"not run: {o.scenario} on Kafka {o.version} ({o.ticket.id}: {o.ticket.range_note()})"
        )

    def write(reports: list[Any], failures: list[Any]) -> None:
        write_matrix(suite_dir, mine, reports, failures, console, planned.out_of_range)

    context = {
        "title": title,
        "out_of_range": [
            {"scenario": o.scenario, "version": o.version, "ticket": asdict(o.ticket)}
            for o in planned.out_of_range
        ],
    }
    return run_entries(
        suite_dir,
        entries,
        write,
        console=console,
        command=command,
        run=run,
        prometheus=prometheus,
        log=shards.BatchLog(suite_dir, split, context, durations),
        parallel=parallel,
        start=start,
    )


def merge_context(context: Mapping[str, Any]) -> list[OutOfRange]:
    """The out-of-range pairs a matrix shard's shard.json keeps (see run_matrix)."""
    return [
        OutOfRange(o["scenario"], Ticket.from_mapping(o["ticket"]), o["version"])
        for o in context.get("out_of_range") or ()
    ]


def write_matrix(
    suite_dir: Path,
    title: str,
    reports: list[Any],
    failures: list[Any],
    console: Any,
    out_of_range: Sequence[OutOfRange] = (),
    preface: Sequence[str] = (),
) -> dict[str, str]:
    """The matrix page, junit.xml and summary.json; ``preface``: HTML above the rest."""
    from kchaos.reports.console import print_batch
    from kchaos.reports.suite import ticket_tables, version_grid, write_suite_reports

    paths = write_suite_reports(
        suite_dir,
        reports,
        failures,
        title=title,
        sections=[
            *preface,
            ticket_tables(reports, [(o.ticket, o.version) for o in out_of_range]),
            version_grid(reports, failures, suite_dir),
        ],
        unit="runs",
        columns=("Kafka", "seed"),
    )
    print_batch(
        console,
        title,
        reports,
        failures,
        paths,
        page="matrix report",
        label=lambda s: f"{s['scenario']} {s.get('kafka_version')} seed {s.get('seed')}",
    )
    return paths
