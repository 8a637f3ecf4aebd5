"""``run.json``: one typed model, one reader, one writer.

The runner writes run.json when a run starts and rewrites it as the run goes
(:func:`write_run`); every reader (the checker, the reports, the analysis tables, replay
and shrink) gets it from :func:`load_run` as a :class:`RunJson`. Its JSON Schema,
``kchaos/harness/schema/run.schema.json``, is package data like the scenario's, generated
from :class:`RunJson`'s fields (:mod:`kchaos.harness.rundir.runschema`); a file that breaks
it is bad input (exit 3) naming the file and the field.

Every field is optional: a hand-written run.json that only states a setting the checkers
read is a valid one. The fields readers use are typed here; every other key (whatever a
later kchaos or an after-run step adds) stays in :attr:`RunJson.raw` and is written back
and shown unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from kchaos.harness.errors import HistoryError, shown
from kchaos.harness.paths import packaged_schema
from kchaos.harness.rundir.files import jsonable, read_object, write_json
from kchaos.harness.rundir.loglines import LogLine, parse_log_lines
from kchaos.harness.rundir.names import RUN_JSON
from kchaos.harness.rundir.scenario_model import (
    LENGTH_KEY,
    OLD_LENGTH_KEY,
    ExpectConfig,
    Scenario,
    int_value,
    positive_int,
    transactions_timeout_ms,
)

__all__ = [
    "FORMAT",
    "RUN_JSON",
    "RunJson",
    "SETTINGS_ONLY",
    "RunSettings",
    "jsonable",
    "load_run",
    "read_object",
    "schema",
    "run_settings",
    "transactions_timeout_ms",
    "upgrade",
    "write_run",
]

#: The run.json format this kchaos writes; a reader refuses a newer one.
FORMAT = 1

_UNCLEAN = "unclean.leader.election.enable"
_MIN_ISR = "min.insync.replicas"
_SESSION = "broker.session.timeout.ms"
#: Kafka's default broker.session.timeout.ms (KRaftConfigs.BROKER_SESSION_TIMEOUT_MS_DEFAULT)
KAFKA_DEFAULT_BROKER_SESSION_TIMEOUT_MS = 9_000


@functools.cache
def schema() -> dict[str, Any]:
    """The published JSON Schema of run.json."""
    return packaged_schema("run.schema.json")


@dataclass(frozen=True)
class RunSettings:
    """What run.json says that changes the checkers' verdict, with Kafka's defaults."""

    acks_all: bool = True
    unclean_enabled: bool = False
    topic_unclean: Mapping[str, bool] = field(default_factory=dict)
    min_insync: int | None = None  # None: what the metadata lines report
    topic_min_insync: Mapping[str, int] = field(default_factory=dict)
    max_offline_seconds: float | None = None
    max_time_to_full_isr_seconds: float | None = None
    min_ok_sends: int | None = None
    # history format 1.2: the producers' transaction.timeout.ms (Kafka's default 60 s)
    transaction_timeout_ms: int = 60_000
    # the brokers' broker.session.timeout.ms: how long the controller waits for a
    # heartbeat before it fences a broker (the fencing checker's grace after a fault)
    broker_session_timeout_ms: int = KAFKA_DEFAULT_BROKER_SESSION_TIMEOUT_MS
    # the scenario's expect.log_lines: the lines the checker looks for in the nodes'
    # logs (results.json evidence.lines)
    log_lines: tuple[LogLine, ...] = ()

    def unclean_for(self, topic: str) -> bool:
        return self.topic_unclean.get(topic, self.unclean_enabled)

    def min_insync_for(self, topic: str) -> int | None:
        return self.topic_min_insync.get(topic, self.min_insync)

    @classmethod
    def from_run_json(cls, data: Mapping[str, Any], source: str = RUN_JSON) -> RunSettings:
        """The settings of a run.json mapping of any form this kchaos reads."""
        return RunJson.from_mapping(data, source).settings

    @classmethod
    def load(cls, run_dir: Path) -> RunSettings:
        """``run_dir/run.json``'s settings; Kafka's defaults when it is absent."""
        return load_run(run_dir, missing_ok=True).settings


# Field metadata of run.json's schema (kchaos.harness.rundir.schemagen's vocabulary):
# every key but ``format`` may also be null.
_NOT_IN_FILE: dict[str, Any] = {"file": False}
_TEXT: dict[str, Any] = {"ref": "text"}
_OBJECT: dict[str, Any] = {"ref": "object"}
_NULLABLE: dict[str, Any] = {"nullable": True}


@dataclass(frozen=True)
class RunJson:
    """A run's run.json. ``raw`` is the whole file; the rest are the fields readers use."""

    raw: Mapping[str, Any] = field(metadata=_NOT_IN_FILE)
    source: str = field(metadata=_NOT_IN_FILE)
    settings: RunSettings = field(metadata=_NOT_IN_FILE)
    format: int | None = field(
        default=None,
        metadata={"description": "run.json format; a reader refuses a newer one", "minimum": 1},
    )
    run_id: str | None = field(default=None, metadata=_TEXT)
    status: str | None = field(
        default=None,
        metadata={
            "description": "running (the first write, once the run has started), then "
            "completed, interrupted or error (the final write); starting or started only "
            "in files of earlier versions",
            **_TEXT,
        },
    )
    # the resolved scenario, typed (the file holds Scenario.to_dict()); None where the
    # file gives a name alone or nothing. A file of settings alone gets a scenario of
    # those settings (description SETTINGS_ONLY; see upgrade).
    scenario: Scenario | None = field(
        default=None,
        metadata={
            "description": "the resolved scenario (Scenario.to_dict()), or a scenario name",
            "type": ["object", "string", "null"],
        },
    )
    scenario_name: str | None = field(default=None, metadata=_TEXT)
    seed: int | None = field(default=None, metadata=_NULLABLE)
    kafka_version: str | None = field(default=None, metadata=_TEXT)
    # the file's image.kafka
    kafka_image: str | None = field(
        default=None,
        metadata={"file": "image", "description": "kafka and toxiproxy image tags", **_OBJECT},
    )
    start: str | None = field(
        default=None, metadata={"description": "wall-clock start, UTC, ISO 8601", **_TEXT}
    )
    end: str | None = field(
        default=None, metadata={"description": "wall-clock end, UTC, ISO 8601", **_TEXT}
    )
    history_start_unix_ns: int | None = field(
        default=None,
        metadata={"description": "wall clock (Unix ns) of history time 0", **_NULLABLE},
    )
    checks: Mapping[str, Any] = field(default_factory=dict, metadata=_OBJECT)
    expect: Mapping[str, Any] = field(default_factory=dict, metadata=_OBJECT)
    # None: the nemesis never started
    schedule: tuple[Mapping[str, Any], ...] | None = field(
        default=None,
        metadata={"description": "the nemesis schedule the run executed", **_NULLABLE},
    )
    nemesis_errors: tuple[Mapping[str, Any], ...] = field(default=(), metadata=_NULLABLE)
    # history format 1.3: the cluster's finalized feature levels, read after it started
    features: Mapping[str, Any] | None = field(
        default=None,
        metadata={
            "description": "the cluster's finalized feature levels after start "
            '(transaction.version, metadata.version, ...), or {"error": ...}',
            **_OBJECT,
        },
    )

    @property
    def described(self) -> bool:
        """True where the file holds a whole scenario (what a run writes), not a name
        alone or a part (settings alone): what replay can run again."""
        stored = self.raw.get("scenario")
        return self.scenario is not None and isinstance(stored, Mapping) and _whole(stored)

    @property
    def present(self) -> bool:
        """False for the empty model of a run directory without run.json."""
        return bool(self.raw) or self.format is not None

    def get(self, key: str, default: Any = None) -> Any:
        """A top-level key not typed here, as written (``replay_of``, ``after_run``, ...)."""
        return self.raw.get(key, default)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = RUN_JSON) -> RunJson:
        """Validate ``data`` against the schema and type it; HistoryError naming ``source``
        and the field, also for a format newer than :data:`FORMAT`."""
        _validate(data, source)
        fmt = data.get("format")
        if fmt is not None and fmt > FORMAT:
            raise HistoryError(
                f"format {fmt} is newer than this kchaos reads ({FORMAT}); use a newer kchaos",
                file=source,
                field="format",
            )
        current = upgrade(data, source)
        given = current.get("scenario")
        sc = Scenario.from_dict(given, source) if isinstance(given, Mapping) else None
        # what the file itself says of its scenario (a name, a seed, a release)
        stored = data.get("scenario")
        own = stored if isinstance(stored, Mapping) else {}
        name = own.get("name") if own else stored or data.get("scenario_name")
        image = data.get("image")

        def section(key: str) -> Mapping[str, Any]:
            inner = given.get(key) if isinstance(given, Mapping) else None
            return dict(inner) if isinstance(inner, Mapping) else {}

        return cls(
            raw=data,
            source=source,
            settings=run_settings(sc, source),
            format=fmt,
            run_id=data.get("run_id"),
            status=data.get("status"),
            scenario=sc,
            scenario_name=None if name is None else str(name),
            seed=data.get("seed", own.get("seed")),
            kafka_version=data.get("kafka_version") or _kafka_version(own),
            kafka_image=(image or {}).get("kafka") if isinstance(image, Mapping) else None,
            start=data.get("start"),
            end=data.get("end"),
            history_start_unix_ns=data.get("history_start_unix_ns"),
            checks=section("checks"),
            expect=section("expect"),
            schedule=None if data.get("schedule") is None else tuple(data["schedule"]),
            nemesis_errors=tuple(data.get("nemesis_errors") or ()),
            features=data.get("features"),
        )


def _kafka_version(scenario: Mapping[str, Any] | None) -> str | None:
    """The scenario's own ``cluster.kafka_version`` (where a run.json states no other)."""
    cluster = (scenario or {}).get("cluster")
    version = cluster.get("kafka_version") if isinstance(cluster, Mapping) else None
    return None if version is None else str(version)


def load_run(path: str | Path, *, missing_ok: bool = False) -> RunJson:
    """Read run.json: ``path`` is the file or its run directory.

    Bad input (not JSON, not an object, a field of the wrong type, a newer format) raises
    HistoryError naming the file and field. A missing file is an error too, unless
    ``missing_ok``: then the empty model (every field unset, Kafka's default settings).
    """
    path = Path(path)
    file = path if path.name == RUN_JSON else path / RUN_JSON
    if not file.parent.is_dir():
        raise HistoryError("not a run directory (no such directory)", file=str(file.parent))
    data = read_object(file)
    if data is None:
        if missing_ok:
            return RunJson(raw={}, source=str(file), settings=RunSettings())
        raise HistoryError(f"not a run directory: it has no {RUN_JSON}", file=str(file.parent))
    return RunJson.from_mapping(data, str(file))


def write_run(path: Path, data: Mapping[str, Any]) -> None:
    """Write run.json atomically (readers never see half a file) as indented JSON."""
    write_json(path, data)


def _validate(data: Mapping[str, Any], source: str) -> None:
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.absolute_path) or None
        message = err.message
        if err.validator == "type":
            message = f"expected {_types(err.validator_value)}, got {shown(err.instance)}"
        raise HistoryError(message, file=source, field=where)


def _types(value: Any) -> str:
    names = [value] if isinstance(value, str) else list(value)
    return " or ".join(n for n in names if n != "null") or "null"


# ------------------------------------------------------------------- older forms

# Where files before today's form put a checker setting, at the top level or inside the
# scenario, each list in the order it is looked up (first found wins; the top level before
# the scenario). The only place these spellings are known: :func:`upgrade` moves each to
# the one place today's form has it, inside ``scenario``.
_OLD_ACKS = ("producer.acks", "workload.producer.acks", "workload.producers.acks", "acks")
_OLD_BROKER = (
    "broker_config",
    "cluster.broker_config",
    "cluster.server_properties",
    "cluster.config",
)
_OLD_TOPICS = ("topics", "workload.topics")
_OLD_TXN = ("workload.transactions", "transactions")
_OLD_PRODUCER = ("producer", "workload.producer", "workload.producers")
_OLD_TXN_TIMEOUT = ("transaction.timeout.ms", "transaction_timeout_ms")
# The older spellings above that are not the scenario's own keys, removed from it once
# their settings moved.
_OLD_IN_SCENARIO = (
    "acks",
    "broker_config",
    "producer",
    "consumer",
    "transactions",
    "cluster.broker_config",
    "cluster.config",
    "workload.producer",
)
_THRESHOLDS = ("max_offline_seconds", "max_time_to_full_isr_seconds", "min_ok_sends")


def upgrade(data: Mapping[str, Any], source: str = RUN_JSON) -> dict[str, Any]:
    """``data`` (any run.json this kchaos reads) in today's form; every later reader
    takes only that form.

    Today's run.json holds each fact once, in the resolved scenario (``Scenario.to_dict()``):
    the settings the checkers read are ``scenario.workload.producers.acks``,
    ``scenario.cluster.server_properties``, ``scenario.topics[].configs``,
    ``scenario.checks``, ``scenario.expect`` and ``scenario.workload.transactions``, and a
    step's length is ``for``. Earlier forms, converted here:

    - runs before 2026-11-26 copied the seed and the scenario's sections to the top level
      (``cluster``, ``topics``, ``producer``, ``consumer``, ``transactions``, ``checks``,
      ``expect``) and gave a step's length as ``duration``;
    - hand-written files (and tests, and the history generator) state a setting alone,
      under the names of :data:`_OLD_ACKS`, :data:`_OLD_BROKER`, :data:`_OLD_TOPICS`,
      :data:`_OLD_TXN`, or ``transaction.timeout.ms`` in a producer mapping.

    A top-level setting wins over the scenario's (as it always did); a moved value that
    cannot be what it says is a HistoryError naming ``source`` and the field the file gave
    it under. Older spellings found inside the scenario are moved and dropped from it.

    The result has no top-level copies. Its ``scenario`` is a whole scenario mapping, which
    :meth:`Scenario.from_dict` types, or the file's name alone, or absent. A part of a
    scenario (settings alone, as hand-written files give them) is made whole with every
    other field its default: the name the file gave (else :data:`SETTINGS_ONLY_NAME`), the
    description :data:`SETTINGS_ONLY`, no topics but those with settings, a workload of 0 s.
    """
    out = {k: v for k, v in data.items() if k not in _TOP_LEVEL_COPIES}
    given = data.get("scenario")
    sc = plain_data(given) if isinstance(given, Mapping) else {}
    roots = [("", data), ("scenario.", given if isinstance(given, Mapping) else {})]

    def find(paths: tuple[str, ...]) -> tuple[Any, str] | None:
        for prefix, root in roots:
            for path in paths:
                node: Any = root
                for part in path.split("."):
                    if not isinstance(node, Mapping) or part not in node:
                        break
                    node = node[part]
                else:
                    return node, prefix + path
        return None

    def section(*path: str) -> dict[str, Any]:
        node = sc
        for part in path:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        return node

    acks = find(_OLD_ACKS)
    if acks is not None:
        section("workload", "producers")["acks"] = str(acks[0])
    broker = find(_OLD_BROKER)
    if broker is not None and isinstance(broker[0], Mapping):
        _broker_settings(broker[0], source, broker[1])
        props = section("cluster", "server_properties")
        props.update(plain_data(broker[0]))
    topics = find(_OLD_TOPICS)
    if topics is not None and topics[1] != "scenario.topics":  # not already in place
        _merge_topics(sc, _topic_items(topics[0]), source, topics[1])
    top_checks = data.get("checks")
    if isinstance(top_checks, Mapping):
        checks = section("checks")
        checks.update({k: top_checks[k] for k in _THRESHOLDS if top_checks.get(k) is not None})
        _threshold_settings(checks, source, "checks")
    top_expect = data.get("expect")
    if isinstance(top_expect, Mapping):
        if top_expect.get("log_lines") is not None:
            _log_lines(top_expect["log_lines"], source, "expect")
        known = {f.name for f in dataclasses.fields(ExpectConfig)}
        section("expect").update({k: plain_data(v) for k, v in top_expect.items() if k in known})
    txn = find(_OLD_TXN)
    timeout = None
    if txn is not None and isinstance(txn[0], Mapping):
        timeout = transactions_timeout_ms(txn[0], source, txn[1])
        section("workload")["transactions"] = plain_data(txn[0])
    if timeout is None:
        for path in _OLD_PRODUCER:
            hit = find((path,))
            if hit is None or not isinstance(hit[0], Mapping):
                continue
            key = next((k for k in _OLD_TXN_TIMEOUT if k in hit[0]), None)
            if key is not None:
                ms = positive_int(hit[0][key], source, f"{hit[1]}.{key}")
                configs = section("workload", "transactions", "configs")
                configs["transaction.timeout.ms"] = str(ms)
                break
    for path in _OLD_IN_SCENARIO:
        *parents, last = path.split(".")
        node: Any = sc
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    steps = _mapping(sc.get("nemesis")).get("steps")
    if isinstance(steps, list):
        for i, step in enumerate(steps):
            if not isinstance(step, dict) or OLD_LENGTH_KEY not in step:
                continue
            if LENGTH_KEY in step:
                raise HistoryError(
                    f"the step gives its length twice: {OLD_LENGTH_KEY} is the old "
                    f"spelling of {LENGTH_KEY}",
                    file=source,
                    field=f"scenario.nemesis.steps.{i}.{OLD_LENGTH_KEY}",
                )
            step[LENGTH_KEY] = step.pop(OLD_LENGTH_KEY)
    if sc and not _whole(sc):
        # settings alone, or a part of a scenario (hand-written files): a scenario of
        # them, every other field its default
        sc = {
            "name": given if isinstance(given, str) else SETTINGS_ONLY_NAME,
            "description": SETTINGS_ONLY,
            "cluster": {},
            "topics": [],
            **sc,
        }
        section("workload").setdefault("duration", 0.0)
    if sc or isinstance(given, str):
        out["scenario"] = sc or given
    else:
        out.pop("scenario", None)
    return out


def _whole(scenario: Mapping[str, Any]) -> bool:
    """True for a scenario mapping with every field a scenario must have (what a run
    writes), False for a part of one."""
    workload = scenario.get("workload")
    return all(k in scenario for k in _REQUIRED) and (
        isinstance(workload, Mapping) and "duration" in workload
    )


_REQUIRED = tuple(
    f.name
    for f in dataclasses.fields(Scenario)
    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
)

#: The description of the scenario :func:`upgrade` makes of a part of one (settings
#: alone, in a hand-written file) where the part has none, and its name.
SETTINGS_ONLY = "run.json states checker settings alone, not the scenario that ran"
SETTINGS_ONLY_NAME = "settings-only"


# The top-level keys of earlier forms that today's form holds in the scenario only.
_TOP_LEVEL_COPIES = frozenset(
    {
        "acks",
        "broker_config",
        "cluster",
        "topics",
        "producer",
        "consumer",
        "workload",
        "transactions",
        "checks",
        "expect",
    }  # fmt: skip
)


def plain_data(node: Any) -> Any:
    """A deep copy of JSON-like data as dicts with string keys and lists (the shapes the
    YAML reader gives; upgrade changes its copy only)."""
    if isinstance(node, Mapping):
        return {str(k): plain_data(v) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [plain_data(v) for v in node]
    return node


def _topic_items(topics: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, configs) of every topic of an older form's list or name -> entry mapping."""
    items: list[tuple[str, Any]] = []
    if isinstance(topics, Mapping):
        items = [(str(k), v) for k, v in topics.items()]
    elif isinstance(topics, list):
        items = [(str(t.get("name")), t) for t in topics if isinstance(t, Mapping)]
    out = []
    for name, spec in items:
        if not isinstance(spec, Mapping):
            continue
        configs = spec.get("configs", spec.get("config", {}))
        if isinstance(configs, Mapping):
            out.append((name, configs))
    return out


def _merge_topics(
    sc: dict[str, Any], items: list[tuple[str, Mapping[str, Any]]], source: str, where: str
) -> None:
    """Each topic's configs into the scenario's ``topics`` list, by name."""
    existing = sc.get("topics")
    topics: list[Any] = existing if isinstance(existing, list) else []
    by_name = {t.get("name"): t for t in topics if isinstance(t, dict)}
    for name, configs in items:
        _topic_settings(name, configs, source, where)
        entry = by_name.get(name)
        if entry is None:
            entry = by_name[name] = {"name": name}
            topics.append(entry)
        if not isinstance(entry.get("configs"), dict):
            entry["configs"] = {}
        entry["configs"].update(plain_data(configs))
    sc["topics"] = topics


# ------------------------------------------------------------------- checker settings


def run_settings(scenario: Scenario | None, source: str = RUN_JSON) -> RunSettings:
    """What the checkers read from a run's scenario (run.json's, typed; :func:`upgrade`
    brings every earlier form to it); Kafka's defaults where there is none.

    - acks: ``workload.producers.acks``; ``all`` / ``-1`` mean acks=all. A send line's
      own optional ``acks`` field overrides it for that send.
    - ``cluster.server_properties``: ``unclean.leader.election.enable``,
      ``min.insync.replicas`` and ``broker.session.timeout.ms``.
    - ``topics[].configs``: the same first two, overriding the broker's for that topic.
    - ``checks``: ``max_offline_seconds``, ``max_time_to_full_isr_seconds``,
      ``min_ok_sends``.
    - ``expect.log_lines``: the lines the checker looks for in the nodes' logs.
    - ``workload.transactions``: the producers' transaction timeout
      (:meth:`TxnSpec.checked_timeout_ms`).

    A property that cannot be what it says is a HistoryError naming ``source`` and the
    field (``scenario.<path>``).
    """
    if scenario is None:
        return RunSettings()
    sc = scenario
    kwargs: dict[str, Any] = {"acks_all": acks_is_all(sc.workload.producers.acks)}
    props = sc.cluster.server_properties
    kwargs.update(_broker_settings(props, source, "scenario.cluster.server_properties"))
    unclean: dict[str, bool] = {}
    min_isr: dict[str, int] = {}
    for topic in sc.topics:
        t_unclean, t_min = _topic_settings(topic.name, topic.configs, source, "scenario.topics")
        unclean.update(t_unclean)
        min_isr.update(t_min)
    kwargs.update(topic_unclean=unclean, topic_min_insync=min_isr)
    checks = {k: getattr(sc.checks, k) for k in _THRESHOLDS}
    kwargs.update(_threshold_settings(checks, source, "scenario.checks"))
    kwargs["log_lines"] = sc.expect.log_lines
    tx = sc.workload.transactions
    if tx is not None:
        where = "scenario.workload.transactions"
        kwargs["transaction_timeout_ms"] = tx.checked_timeout_ms(source, where)
    return RunSettings(**kwargs)


def _mapping(node: Any) -> Mapping[str, Any]:
    return node if isinstance(node, Mapping) else {}


def _log_lines(raw: Any, source: str, where: str) -> tuple[LogLine, ...]:
    """An ``expect`` section's ``log_lines``; a bad entry names its field under ``where``."""

    def bad(path: tuple[str | int, ...], message: str) -> Exception:
        field = ".".join(str(p) for p in (where, "log_lines", *path))
        return HistoryError(message, file=source, field=field)

    return parse_log_lines(raw, bad)


def _broker_settings(props: Mapping[str, Any], source: str, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if _UNCLEAN in props:
        out["unclean_enabled"] = _bool(props[_UNCLEAN], source, f"{where}.{_UNCLEAN}")
    if _MIN_ISR in props:
        out["min_insync"] = positive_int(props[_MIN_ISR], source, f"{where}.{_MIN_ISR}")
    if _SESSION in props:
        out["broker_session_timeout_ms"] = positive_int(
            props[_SESSION], source, f"{where}.{_SESSION}"
        )
    return out


def _topic_settings(
    name: str, configs: Mapping[str, Any], source: str, where: str
) -> tuple[dict[str, bool], dict[str, int]]:
    unclean: dict[str, bool] = {}
    min_isr: dict[str, int] = {}
    if _UNCLEAN in configs:
        unclean[name] = _bool(configs[_UNCLEAN], source, f"{where}.{name}.{_UNCLEAN}")
    if _MIN_ISR in configs:
        min_isr[name] = positive_int(configs[_MIN_ISR], source, f"{where}.{name}.{_MIN_ISR}")
    return unclean, min_isr


def _threshold_settings(checks: Mapping[str, Any], source: str, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("max_offline_seconds", "max_time_to_full_isr_seconds"):
        value = checks.get(key)
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            raise HistoryError(
                f"expected a number of seconds, got {shown(value)}",
                file=source,
                field=f"{where}.{key}",
            )
        out[key] = float(value)
    value = checks.get("min_ok_sends")
    if value is not None:
        out["min_ok_sends"] = int_value(value, source, f"{where}.min_ok_sends")
        if out["min_ok_sends"] < 0:
            raise HistoryError(
                f"must not be negative, got {value}", file=source, field=f"{where}.min_ok_sends"
            )
    return out


def acks_is_all(value: Any) -> bool:
    return str(value).strip().lower() in ("all", "-1")


def _bool(value: Any, source: str, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise HistoryError(f"expected true or false, got {shown(value)}", file=source, field=where)
