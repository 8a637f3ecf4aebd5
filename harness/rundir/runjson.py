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

import functools
import math
import re
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

__all__ = [
    "FORMAT",
    "RUN_JSON",
    "RunJson",
    "RunSettings",
    "jsonable",
    "load_run",
    "read_object",
    "schema",
    "settings_of",
    "transactions_timeout_ms",
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
        """The settings of a run.json mapping (see :func:`settings_of` for the keys)."""
        return settings_of(data, source)

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
    # the resolved scenario (Scenario.to_dict()); the file may give a name instead
    scenario: Mapping[str, Any] | None = field(
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
        scenario = data.get("scenario")
        sc = scenario if isinstance(scenario, Mapping) else None
        name = sc.get("name") if sc is not None else scenario or data.get("scenario_name")
        image = data.get("image")

        def section(key: str) -> Mapping[str, Any]:
            inner = sc.get(key) if sc is not None else None
            if isinstance(inner, Mapping):
                return dict(inner)
            return dict(data.get(key) or {})

        return cls(
            raw=data,
            source=source,
            settings=settings_of(data, source),
            format=fmt,
            run_id=data.get("run_id"),
            status=data.get("status"),
            scenario=sc,
            scenario_name=None if name is None else str(name),
            seed=data.get("seed", None if sc is None else sc.get("seed")),
            kafka_version=data.get("kafka_version") or _kafka_version(sc),
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


# ------------------------------------------------------------------- checker settings


def settings_of(data: Mapping[str, Any], source: str = RUN_JSON) -> RunSettings:
    """What the checkers read from run.json (all optional; Kafka's defaults otherwise).

    Keys looked up, first match wins, at the top level or under ``scenario``:

    - acks: ``producer.acks``, ``workload.producer.acks``, ``workload.producers.acks``,
      ``acks``. ``all`` / ``-1`` mean acks=all (the default when absent). A send line's
      own optional ``acks`` field overrides it for that send.
    - broker properties: ``broker_config``, ``cluster.broker_config``,
      ``cluster.server_properties``, ``cluster.config``: a mapping of server properties;
      ``unclean.leader.election.enable``, ``min.insync.replicas`` and
      ``broker.session.timeout.ms`` are read.
    - topic configs: ``topics`` (or ``workload.topics``): a list of ``{"name": ..,
      "configs": {..}}`` or a mapping name -> ``{"configs": {..}}``; the same two
      properties, overriding the broker's for that topic.
    - thresholds: ``checks.max_offline_seconds``, ``checks.max_time_to_full_isr_seconds``,
      ``checks.min_ok_sends``.
    - transaction timeout: what the transactional producers ran with, from the scenario's
      ``workload.transactions`` (:func:`transactions_timeout_ms`); in a run.json without
      that section, ``transaction.timeout.ms`` (or ``transaction_timeout_ms``) in the
      ``producer``, ``workload.producer`` or ``workload.producers`` mapping.
    """
    roots = [data]
    if isinstance(data.get("scenario"), Mapping):
        roots.append(data["scenario"])

    def find(*paths: str) -> tuple[Any, str] | None:
        for root in roots:
            for path in paths:
                node: Any = root
                for part in path.split("."):
                    if not isinstance(node, Mapping) or part not in node:
                        break
                    node = node[part]
                else:
                    return node, path
        return None

    kwargs: dict[str, Any] = {}
    acks = find("producer.acks", "workload.producer.acks", "workload.producers.acks", "acks")
    if acks is not None:
        kwargs["acks_all"] = acks_is_all(acks[0])
    broker = find(
        "broker_config", "cluster.broker_config", "cluster.server_properties", "cluster.config"
    )
    if broker is not None and isinstance(broker[0], Mapping):
        props = broker[0]
        if _UNCLEAN in props:
            kwargs["unclean_enabled"] = _bool(props[_UNCLEAN], source, f"{broker[1]}.{_UNCLEAN}")
        if _MIN_ISR in props:
            kwargs["min_insync"] = _positive(props[_MIN_ISR], source, f"{broker[1]}.{_MIN_ISR}")
        if _SESSION in props:
            kwargs["broker_session_timeout_ms"] = _positive(
                props[_SESSION], source, f"{broker[1]}.{_SESSION}"
            )
    topics = find("topics", "workload.topics")
    if topics is not None:
        t_unclean, t_min = _topic_configs(topics[0], source)
        kwargs["topic_unclean"] = t_unclean
        kwargs["topic_min_insync"] = t_min
    for key in ("max_offline_seconds", "max_time_to_full_isr_seconds"):
        hit = find(f"checks.{key}")
        if hit is not None and hit[0] is not None:
            if (
                isinstance(hit[0], bool)
                or not isinstance(hit[0], int | float)
                or not math.isfinite(hit[0])
                or hit[0] < 0
            ):
                raise HistoryError(
                    f"expected a number of seconds, got {shown(hit[0])}",
                    file=source,
                    field=f"checks.{key}",
                )
            kwargs[key] = float(hit[0])
    hit = find("checks.min_ok_sends")
    if hit is not None and hit[0] is not None:
        kwargs["min_ok_sends"] = _int(hit[0], source, "checks.min_ok_sends")
        if kwargs["min_ok_sends"] < 0:
            raise HistoryError(
                f"must not be negative, got {hit[0]}", file=source, field="checks.min_ok_sends"
            )
    hit = find("expect.log_lines")
    if hit is not None:

        def bad(path: tuple[str | int, ...], message: str) -> Exception:
            where = ".".join(str(p) for p in ("expect", "log_lines", *path))
            return HistoryError(message, file=source, field=where)

        kwargs["log_lines"] = parse_log_lines(hit[0], bad)
    txn = find("workload.transactions", "transactions")
    if txn is not None and isinstance(txn[0], Mapping):
        timeout = transactions_timeout_ms(txn[0], source)
        if timeout is not None:
            kwargs["transaction_timeout_ms"] = timeout
    for path in ("producer", "workload.producer", "workload.producers"):
        if "transaction_timeout_ms" in kwargs:
            break
        hit = find(path)
        if hit is None or not isinstance(hit[0], Mapping):
            continue
        for key in ("transaction.timeout.ms", "transaction_timeout_ms"):
            if key in hit[0]:
                kwargs["transaction_timeout_ms"] = _positive(hit[0][key], source, f"{path}.{key}")
                break
        if "transaction_timeout_ms" in kwargs:
            break
    return RunSettings(**kwargs)


def transactions_timeout_ms(section: Mapping[str, Any], source: str = RUN_JSON) -> int | None:
    """The transaction.timeout.ms a scenario's ``workload.transactions`` section gives its
    producers: its raw ``configs`` entry where it sets one (the client takes that over
    everything), else ``timeout`` in seconds; None where the section states neither. The
    workers (:mod:`kchaos.harness.scenario.plan`) and the checkers read it here, so they
    cannot disagree."""
    configs = section.get("configs")
    where = "workload.transactions"
    if isinstance(configs, Mapping) and "transaction.timeout.ms" in configs:
        return _positive(
            configs["transaction.timeout.ms"], source, f"{where}.configs.transaction.timeout.ms"
        )
    seconds = section.get("timeout")
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
        raise HistoryError(
            f"expected a positive number of seconds, got {shown(seconds)}",
            file=source,
            field=f"{where}.timeout",
        )
    return int(round(seconds * 1000))


def acks_is_all(value: Any) -> bool:
    return str(value).strip().lower() in ("all", "-1")


def _topic_configs(topics: Any, source: str) -> tuple[dict[str, bool], dict[str, int]]:
    items: list[tuple[str, Any]] = []
    if isinstance(topics, Mapping):
        items = [(str(k), v) for k, v in topics.items()]
    elif isinstance(topics, list):
        items = [(str(t.get("name")), t) for t in topics if isinstance(t, Mapping)]
    unclean: dict[str, bool] = {}
    min_isr: dict[str, int] = {}
    for name, spec in items:
        if not isinstance(spec, Mapping):
            continue
        configs = spec.get("configs", spec.get("config", {}))
        if not isinstance(configs, Mapping):
            continue
        if _UNCLEAN in configs:
            unclean[name] = _bool(configs[_UNCLEAN], source, f"topics.{name}.{_UNCLEAN}")
        if _MIN_ISR in configs:
            min_isr[name] = _positive(configs[_MIN_ISR], source, f"topics.{name}.{_MIN_ISR}")
    return unclean, min_isr


def _bool(value: Any, source: str, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise HistoryError(f"expected true or false, got {shown(value)}", file=source, field=where)


def _int(value: Any, source: str, where: str) -> int:
    """An integer, or a string of one (Kafka properties are strings); not 1.5, not "2.0"."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]{1,18}\s*", value):
        return int(value)
    raise HistoryError(f"expected an integer, got {shown(value)}", file=source, field=where)


def _positive(value: Any, source: str, where: str) -> int:
    """A whole number, at least 1 (min.insync.replicas, a timeout in ms)."""
    number = _int(value, source, where)
    if number < 1:
        raise HistoryError(
            f"expected a positive integer, got {shown(value)}", file=source, field=where
        )
    return number
