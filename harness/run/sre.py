"""SRE config validation: the library's incidents judged under an SRE's broker config.

    kchaos suite nightly --broker-config prod.properties --broker-config candidate.properties

Every scenario runs once per config (a fresh cluster each time). The question each run
answers is "with this configuration, does Kafka keep the writes it acknowledged through
this fault?", so the run is rebuilt around the SRE's settings (:func:`sre_scenario`):

- broker level: the SRE's file is merged over the scenario's server properties and wins
  over a per-broker setting of the same key; the settings that decide durability
  (:data:`GOVERNED`) come only from the SRE's file or Kafka's default, never from the
  scenario (a negative control's ``min.insync.replicas: 1`` does not survive);
- topic level: a topic config is dropped where its broker-level synonym is governed or
  set by the SRE's file, so the broker value applies;
- producers: the delivery settings (:data:`PROFILE_KEYS`) come from a named profile
  (:data:`PROFILES`, default ``safe``: acks=all, idempotent); the scenario's timeouts and
  rates stay; the ``transactional`` profile turns the plain producers into transactional
  ones (:func:`transactional`);
- the judgement: no SLO thresholds; the run must be valid, where an offline window, an
  unclean or last-known-leader election is reported but not red (what such an election
  costs shows up as lost writes, which are red), and so is a duplicate the replicas' logs
  pin on the client (:data:`SRE_ALLOWED_CAUSES`: no broker setting prevents it).

Every scenario setting replaced or dropped is an :class:`Override`, listed in the run's
run.json (``sre.overridden``) and on the matrix page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from kchaos.harness.errors import ConfigError, shown
from kchaos.harness.rundir.history import READ_COMMITTED
from kchaos.harness.rundir.scenario_model import (
    ChecksConfig,
    ExpectConfig,
    Scenario,
    WorkloadConfig,
)
from kchaos.harness.scenario.properties import load_properties_lines
from kchaos.workloads.spec import ReadersConfig, TxnSpec

#: Broker settings that decide whether acknowledged writes survive: in a validation run
#: they come from the SRE's file or Kafka's default, never from the scenario.
GOVERNED: tuple[str, ...] = (
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "default.replication.factor",
    # KIP-890 part 1 (3.6.0+): with it off, a transactional produce delayed past its
    # transaction's abort starts a transaction that never ends (a hanging transaction)
    "transaction.partition.verification.enable",
)

#: Topic configs and the broker setting each one overrides (Kafka's synonyms).
TOPIC_SYNONYMS: Mapping[str, str] = {
    "min.insync.replicas": "min.insync.replicas",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
    "segment.bytes": "log.segment.bytes",
    "segment.ms": "log.roll.ms",
    "cleanup.policy": "log.cleanup.policy",
    "compression.type": "compression.type",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "preallocate": "log.preallocate",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
}

#: The client library of transactional workers (the only one that has them).
TXN_CLIENT: Final = "confluent-kafka"

#: Producer settings a profile decides (the scenario's own values are dropped).
PROFILE_KEYS: tuple[str, ...] = (
    "acks",
    "enable.idempotence",
    "retries",
    "max.in.flight.requests.per.connection",
    "delivery.timeout.ms",
)

#: Kinds a validation run reports without turning red: an offline window is
#: unavailability, not loss; an election (unclean, or of the last known leader) is an
#: event whose damage, if any, is counted as lost writes.
SRE_ALLOWED: tuple[str, ...] = ("offline", "unclean-election")

#: Causes (kchaos.harness.checker.replicas.DUPLICATE_CAUSES) that do not turn a cell red:
#: a duplicate whose copies the replicas' logs show under two epochs of one producer id
#: was sent twice by the client after it bumped its epoch. librdkafka bumps it when a
#: broker answers OUT_OF_ORDER_SEQUENCE_NUMBER, and then sends again the in-flight values
#: of every partition, some of them already in the log (librdkafka issue 4953; measured
#: after a total power loss, docs/findings.md). The broker deduplicates within an epoch
#: by design, so no broker config decides it; the page still shows it, with its cause.
SRE_ALLOWED_CAUSES: tuple[str, ...] = ("producer-epoch-bump",)


@dataclass(frozen=True)
class Profile:
    """The producers' delivery settings in a validation run."""

    name: str
    acks: str
    configs: Mapping[str, str]
    allowed: tuple[str, ...]  # kinds Kafka does not promise to avoid with these settings
    summary: str
    # the scenario's plain producers become transactional ones (:func:`transactional`)
    transactional: bool = False


PROFILES: Mapping[str, Profile] = {
    "safe": Profile(
        "safe",
        "all",
        {"enable.idempotence": "true", "delivery.timeout.ms": "120000"},
        (),
        "acks=all, enable.idempotence=true, delivery.timeout.ms=120000 (the Java client's "
        "default: a send is retried through a failover instead of timing out): Kafka "
        "promises no acknowledged write is lost while min.insync.replicas replicas hold it, "
        "and no duplicates",
    ),
    "acks1": Profile(
        "acks1",
        "1",
        {"enable.idempotence": "false", "delivery.timeout.ms": "120000"},
        ("duplicate",),
        "acks=1, not idempotent: acknowledged once the leader has it; a retried send may "
        "be written twice (duplicates are reported, not red)",
    ),
    "transactional": Profile(
        "transactional",
        "all",
        {"enable.idempotence": "true", "delivery.timeout.ms": "120000"},
        (),
        "transactions (KIP-98, at transaction version 1: librdkafka's clients do not speak "
        "version 2 on any release): the scenario's plain "
        "producers become as many transactional producers, each in a process of its own, "
        "transactions of 1 to 4 values, a fifth aborted on purpose, read by read_committed "
        "consumers; Kafka promises every committed transaction whole and every aborted one "
        "invisible to them, and that a fenced producer cannot commit",
        transactional=True,
    ),
}
DEFAULT_PROFILE = "safe"
#: The transactional producers' transaction.timeout.ms under the ``transactional``
#: profile: the library's transactional scenarios' own value (a transaction that cannot
#: finish within it ends ``info`` or ``fail``, which is no anomaly).
TXN_TIMEOUT_S = 10.0
#: Values per transaction under the ``transactional`` profile: 1 to this many.
TXN_MAX_SENDS = 4


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(PROFILES)
        raise ConfigError(
            f"unknown profile {shown(name)} (known: {known})", field="profile"
        ) from None


@dataclass(frozen=True)
class SreConfig:
    """One ``--broker-config`` file: its path, a short label (the matrix column) and its
    properties."""

    path: Path
    label: str
    properties: Mapping[str, str]
    lines: Mapping[str, int]  # the line each property is set on, for error messages


@dataclass(frozen=True)
class Override:
    """A scenario setting that the validation run does not keep.

    ``where``: ``server``, ``broker N``, ``topic NAME`` or ``producer``; ``now``: the value
    the run uses (None: the setting is unset, so Kafka's or the client's default applies);
    ``by``: the config file, ``profile NAME`` or ``default``."""

    where: str
    key: str
    scenario: str
    now: str | None
    by: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "key": self.key,
            "scenario": self.scenario,
            "now": self.now,
            "by": self.by,
        }

    def text(self) -> str:
        now = "unset (default)" if self.now is None else self.now
        return f"{self.where}: {self.key}={self.scenario} -> {now} ({self.by})"


def load_config(path: Path) -> tuple[dict[str, str], dict[str, int]]:
    """A server.properties file; every line must be ``key=value`` (or ``key: value``):
    a bare word is refused with its file, line and key (ConfigError, exit 3)."""
    props, lines = load_properties_lines(path)
    text = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    for key, value in props.items():
        line = lines[key]
        raw = text[line - 1] if 0 < line <= len(text) else ""
        if value == "" and "=" not in raw and ":" not in raw:
            raise ConfigError(
                "not a key=value line (a property without a value)",
                file=str(path),
                line=line,
                field=key,
            )
    if not props:
        raise ConfigError("no property in the file", file=str(path))
    return props, lines


def load_configs(paths: Sequence[Path]) -> list[SreConfig]:
    """Every config, checked before anything runs; labels are the file names without
    ``.properties`` (made unique with the parent directory's name where needed)."""
    seen: set[Path] = set()
    configs: list[SreConfig] = []
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in seen:
            raise ConfigError("is given twice", file=str(path), field="broker-config")
        seen.add(resolved)
        props, lines = load_config(Path(path))
        configs.append(SreConfig(Path(path), _label(Path(path)), props, lines))
    labels = [c.label for c in configs]
    if len(set(labels)) != len(labels):
        configs = [replace(c, label=f"{c.path.resolve().parent.name}-{c.label}") for c in configs]
        labels = [c.label for c in configs]
    if len(set(labels)) != len(labels):
        configs = [replace(c, label=f"{i + 1}-{c.label}") for i, c in enumerate(configs)]
    return configs


def _label(path: Path) -> str:
    name = path.name
    for suffix in (".properties", ".conf", ".cfg"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)


def sre_scenario(
    original: Scenario, config: SreConfig, prof: Profile
) -> tuple[Scenario, tuple[Override, ...]]:
    """``original`` (the scenario as written, without the config) rebuilt to run under
    ``config`` and ``prof``, and every setting of it that was replaced or dropped."""
    sre = config.properties
    by_file = str(config.path)
    overridden: list[Override] = []

    def decide(where: str, key: str, value: str, broker_key: str) -> str | None:
        """The value the run keeps for a scenario setting (None: drop it)."""
        if broker_key in sre:
            if sre[broker_key] != value:
                overridden.append(Override(where, key, value, sre[broker_key], by_file))
            return None
        if broker_key in GOVERNED:
            overridden.append(Override(where, key, value, None, "default"))
            return None
        return value

    server: dict[str, str] = {}
    for key, value in original.cluster.server_properties.items():
        kept = decide("server", key, value, key)
        if kept is not None:
            server[key] = kept
    server.update(sre)
    per_broker = {}
    for node, props in original.cluster.broker_properties.items():
        kept_props = {}
        for key, value in props.items():
            kept = decide(f"broker {node}", key, value, key)
            if kept is not None:
                kept_props[key] = kept
        per_broker[node] = kept_props
    topics = []
    for t in original.topics:
        configs = {}
        for key, value in t.configs.items():
            kept = decide(f"topic {t.name}", key, value, TOPIC_SYNONYMS.get(key, ""))
            if kept is not None:
                configs[key] = kept
        topics.append(replace(t, configs=configs))
    p = original.workload.producers
    producer_configs = {}
    for key, value in p.configs.items():
        if key not in PROFILE_KEYS:
            producer_configs[key] = value
        elif prof.configs.get(key) != value:
            overridden.append(
                Override("producer", key, value, prof.configs.get(key), f"profile {prof.name}")
            )
    producer_configs.update(prof.configs)
    if p.acks != prof.acks:
        overridden.append(Override("producer", "acks", p.acks, prof.acks, f"profile {prof.name}"))
    workload = replace(
        original.workload,
        producers=replace(p, acks=prof.acks, configs=producer_configs),
    )
    if prof.transactional:
        workload = transactional(workload, original.workload, prof, overridden)
    sc = replace(
        original,
        cluster=replace(original.cluster, server_properties=server, broker_properties=per_broker),
        topics=tuple(topics),
        workload=workload,
        checks=ChecksConfig(min_ok_sends=1),  # a run that acknowledged nothing tested nothing
        expect=ExpectConfig(
            valid=True,
            anomalies=(),
            allowed=(*SRE_ALLOWED, *prof.allowed),
            allowed_causes=SRE_ALLOWED_CAUSES,
            # a GO needs every fault's own effect seen (history format 1.3): a cell whose
            # fault did not bite ends "not exercised"
            effects=fault_names(original),
        ),
        tags=(*original.tags, "sre-validation"),
    )
    return sc, tuple(overridden)


def transactional(
    workload: WorkloadConfig, written: WorkloadConfig, prof: Profile, overridden: list[Override]
) -> WorkloadConfig:
    """The ``transactional`` profile's workload: the scenario's plain producers
    (``written``, as the scenario has them) become as many transactional producers, each
    in a process of its own, over the same topics; the plain consumers read
    ``read_committed``, and a scenario without consumers gets one group reader and one
    assigned reader, both ``read_committed``. A scenario that already runs transactions
    keeps its transactional workers, process ids and ``coordinator:`` targets as written;
    its plain producers, if any, stay plain with the profile's settings."""
    if workload.transactions is not None:
        return workload
    by = f"profile {prof.name}"
    p = written.producers
    count = max(p.count, 1)
    # the same rate of values: a transaction carries (1 + max) / 2 values on average
    rate = p.rate / ((1 + TXN_MAX_SENDS) / 2) if p.rate > 0 else 0.0
    overridden.append(Override("producer", "count", str(p.count), "0", by))
    overridden.append(Override("transactions", "producers", "absent", str(count), by))
    for key, value in sorted(p.configs.items()):
        # librdkafka's transactional settings (delivery within the transaction timeout)
        overridden.append(Override("transactions", key, value, None, by))
    c = workload.consumers
    consumers = c
    readers = ReadersConfig()
    if c.count > 0:
        if c.isolation != READ_COMMITTED:
            overridden.append(Override("consumers", "isolation", c.isolation, READ_COMMITTED, by))
        consumers = replace(c, isolation=READ_COMMITTED)
    else:
        readers = ReadersConfig(subscribe=1, assign=1)
    client = workload.client
    if client != TXN_CLIENT:
        overridden.append(Override("workload", "client", client, TXN_CLIENT, by))
    txn = TxnSpec(
        producers=count,
        max_sends=TXN_MAX_SENDS,
        rate=rate,
        timeout=TXN_TIMEOUT_S,
        keys=p.keys,
        message_size=p.message_size,
        process=True,
        readers=readers,
    )
    return replace(
        workload,
        client=TXN_CLIENT,
        producers=replace(workload.producers, count=0),
        consumers=consumers,
        transactions=txn,
    )


def fault_names(sc: Scenario) -> tuple[str, ...]:
    """Every fault the scenario's nemesis runs, by name (an ``expect.effects`` entry by
    name covers every fault of that name in the run)."""
    rnd = sc.nemesis.random
    names = {step.fault for step in sc.nemesis.steps} | set(rnd.faults if rnd else ())
    return tuple(sorted(names))


def check_min_isr(sc: Scenario, config: SreConfig) -> None:
    """The config's min.insync.replicas must not exceed a topic's replication factor: no
    acks=all write could ever be acknowledged, and a run that acknowledges nothing loses
    nothing."""
    key = "min.insync.replicas"
    raw = config.properties.get(key)
    if raw is None:
        return
    try:
        value = int(raw.strip())
    except ValueError:
        return  # the loader's own check names it
    for t in sc.topics:
        if value > t.replication_factor:
            raise ConfigError(
                f"{value} is above the replication factor {t.replication_factor} of topic "
                f"{t.name!r} in scenario {sc.name!r}: no acks=all write could be acknowledged",
                file=str(config.path),
                line=config.lines.get(key),
                field=key,
            )


def run_extra(config: SreConfig, prof: Profile, overridden: Sequence[Override]) -> dict[str, Any]:
    """run.json's ``sre`` section."""
    return {
        "sre": {
            "config": str(config.path),
            "label": config.label,
            "properties": dict(config.properties),
            "profile": prof.name,
            "overridden": [o.to_dict() for o in overridden],
        }
    }


def plan(
    files: Sequence[Path],
    configs: Sequence[SreConfig],
    prof: Profile,
    *,
    overrides: Sequence[str] = (),
    kafka_version: str | None = None,
    seed: int | None = None,
) -> list[Any]:
    """Every (scenario, config) as a SuiteEntry labelled ``SCENARIO/CONFIG``, each
    scenario loaded (and so checked) as written and with every config merged in."""
    from kchaos.harness.run.suite import SuiteEntry
    from kchaos.harness.scenario.loader import load_scenario
    from kchaos.harness.scenario.plan import plan_of

    entries = []
    seen: set[str] = set()
    for f in files:
        original = load_scenario(f, overrides=overrides, kafka_version=kafka_version, seed=seed)
        if original.name in seen:
            raise ConfigError(f"scenario {original.name!r} is listed twice", file=str(f))
        seen.add(original.name)
        for cfg in configs:
            # the loader's own checks of the config against this scenario (e.g.
            # min.insync.replicas above a topic's replication factor), named by file:line
            load_scenario(
                f,
                overrides=overrides,
                broker_config=cfg.path,
                kafka_version=kafka_version,
                seed=seed,
            )
            sc, overridden = sre_scenario(original, cfg, prof)
            check_min_isr(sc, cfg)
            # the rebuilt scenario's own checks (workload, targets), before anything runs
            sc = replace(sc, plan=plan_of(sc))
            label = f"{sc.name}/{cfg.label}"
            entries.append(SuiteEntry(label, sc, extra=run_extra(cfg, prof, overridden)))
    return entries


def run_validation(
    name: str,
    files: Sequence[Path],
    config_paths: Sequence[Path],
    *,
    profile_name: str | None = None,
    out: Path | None = None,
    overrides: Sequence[str] = (),
    kafka_version: str | None = None,
    seed: int | None = None,
    console: Any = None,
    command: list[str] | None = None,
    run: Any = None,
    prometheus: bool = False,
) -> int:
    """Run every scenario under every config into ``OUT/SCENARIO/CONFIG/``; write the
    go/no-go page, junit.xml and summary.json (``prometheus``: a Prometheus server for
    each run). 0 when every cell is go, else the worst exit code of `kchaos run` (5, not
    judged, where every run ended as expected but a cell is NOT JUDGED)."""
    from kchaos.harness.run.suite import run_entries, suite_dir_for
    from kchaos.harness.rundir.expect import EXIT_NOT_JUDGED
    from kchaos.reports.console import make_console
    from kchaos.reports.sre import not_judged, write_validation

    console = console or make_console()
    prof = profile(profile_name or DEFAULT_PROFILE)
    configs = load_configs(config_paths)
    entries = plan(
        files, configs, prof, overrides=overrides, kafka_version=kafka_version, seed=seed
    )
    suite_dir = suite_dir_for(name, out, prefix="sre")
    suite_dir.mkdir(parents=True, exist_ok=True)
    console.print(
        f"{len(entries)} runs: {len(files)} scenario(s) x {len(configs)} config(s) "
        f"({', '.join(c.label for c in configs)}), producer profile {prof.name} -> {suite_dir}"
    )
    title = f"kchaos SRE validation {name}"

    blind = [0]  # NOT JUDGED cells at the last write

    def write(reports: list[Any], failures: list[Any]) -> None:
        write_validation(suite_dir, title, reports, failures, configs, prof, console)
        blind[0] = not_judged(reports)

    code = run_entries(
        suite_dir,
        entries,
        write,
        console=console,
        command=command,
        run=run,
        prometheus=prometheus,
    )
    # a run that ended as its expectation says, but with a kind the profile relies on
    # unjudged, is no GO: the validation does not exit 0
    return EXIT_NOT_JUDGED if code == 0 and blind[0] else code
