"""Load a scenario: YAML -> overrides -> JSON Schema -> frozen dataclasses -> checks ->
plan (the cluster, workload and fault schedule in their own packages' types).

Every error is a :class:`kchaos.harness.errors.ConfigError` naming the file, the line and the
field; the CLI prints it as one line, without a traceback.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema

from kchaos.faults.base import NO_TARGET, takes_no_target
from kchaos.harness.cluster.spec import mount_options
from kchaos.harness.errors import ConfigError
from kchaos.harness.paths import packaged_schema
from kchaos.harness.rundir.fromjson import prop_str
from kchaos.harness.rundir.loglines import LogLine, parse_log_lines
from kchaos.harness.rundir.runjson import plain_data
from kchaos.harness.rundir.scenario_model import (
    LENGTH_KEY,
    OLD_LENGTH_KEY,
    ChecksConfig,
    ClusterConfig,
    ConsumerConfig,
    ExpectConfig,
    FaultStep,
    NemesisConfig,
    ProducerConfig,
    RandomSchedule,
    Scenario,
    TopicConfig,
    WorkloadConfig,
    length_key,
)
from kchaos.harness.rundir.tickets import KNOWN_BUG_TAG, Ticket
from kchaos.harness.scenario import plan
from kchaos.harness.scenario.checks import semantic_checks
from kchaos.harness.scenario.feasible import check_schedule
from kchaos.harness.scenario.javacheck import check_java_client
from kchaos.harness.scenario.properties import load_properties_lines
from kchaos.harness.scenario.sanity import (
    check_durations,
    check_one_length,
    check_values,
    file_steps,
)
from kchaos.harness.scenario.yamlsrc import Path_, Source, apply_override, load_yaml
from kchaos.workloads.spec import CopierSpec, ReadersConfig, TxnSpec

_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@functools.cache
def schema() -> dict[str, Any]:
    """The published JSON Schema of scenario files."""
    return packaged_schema("scenario.schema.json")


def parse_duration(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like 30s")
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION.match(str(value).strip())
    if not match:
        raise ValueError(f"{value!r} is not a duration (e.g. 30, 500ms, 30s, 2m)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _props(data: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k): prop_str(v) for k, v in (data or {}).items()}


# ---------------------------------------------------------------------------- schema


def _schema_message(err: jsonschema.ValidationError) -> tuple[Path_, str]:
    path: Path_ = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = set(err.schema.get("properties", {}))
        extra = sorted(k for k in err.instance if k not in allowed)
        if extra and allowed:
            return (*path, extra[0]), f"unknown field (allowed: {', '.join(sorted(allowed))})"
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else ""
        return ((*path, missing) if missing else path), "is required"
    if err.validator == "oneOf" and err.schema is schema()["$defs"]["duration"]:
        return path, f"{err.instance!r} is not a duration (e.g. 30, 500ms, 30s, 2m)"
    if err.validator == "enum":
        return path, f"{err.instance!r} is not one of {err.validator_value}"
    if err.validator == "pattern" and "target" in str(err.schema_path):
        return (
            path,
            f"{err.instance!r} is not a target ({schema()['$defs']['target']['description']})",
        )
    return path, err.message


def validate_schema(src: Source) -> None:
    validator = jsonschema.Draft202012Validator(schema())
    errors = list(validator.iter_errors(src.data))
    if not errors:
        return

    def order(err: jsonschema.ValidationError) -> tuple[int, int]:
        _, line = src.where(tuple(err.absolute_path))
        return (line or 0, -len(err.absolute_path))

    err = sorted(errors, key=order)[0]
    path, message = _schema_message(err)
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
    raise src.error(path, message)


# ---------------------------------------------------------------------------- build


def _durations(src: Source, base: Path_, data: Mapping[str, Any], keys: Iterable[str]) -> dict:
    out: dict[str, float] = {}
    for key in keys:
        if key in data and data[key] is not None:
            try:
                out[key] = parse_duration(data[key])
            except ValueError as exc:
                raise src.error((*base, key), str(exc)) from None
    return out


def _mount_options(src: Source, raw: Any) -> tuple[str, ...]:
    """``cluster.data_mount_options``, checked here so that an error has the file and line
    of the offending option (of the list item when the value is a list)."""
    if isinstance(raw, list):
        for i, item in enumerate(raw):
            try:
                mount_options([item])
            except ConfigError as exc:
                raise src.error(("cluster", "data_mount_options", i), exc.detail) from None
    try:
        return mount_options(raw)
    except ConfigError as exc:
        raise src.error(("cluster", "data_mount_options"), exc.detail) from None


def _default_target(faults: Sequence[Any]) -> str:
    """The target of a step or random schedule that does not name one: ``none`` when
    every fault listed takes no target, else ``random``."""
    names = [f for f in faults if isinstance(f, str)]
    if names and len(names) == len(faults) and all(takes_no_target(f) for f in names):
        return NO_TARGET
    return "random"


def _transactions(src: Source, t: Mapping[str, Any] | None) -> TxnSpec | None:
    if t is None:
        return None
    r = t.get("readers") or {}
    c = t.get("copier")
    copier = None
    if c is not None:
        copier = CopierSpec(
            input=c["input"],
            output=c["output"],
            group=c.get("group", "kchaos-copier"),
            max_batch=c.get("max_batch", 20),
        )
    return TxnSpec(
        producers=t.get("producers", 1),
        topics=tuple(t.get("topics", ())),
        max_sends=t.get("max_sends", 4),
        abort_ratio=float(t.get("abort_ratio", 0.2)),
        rate=float(t.get("rate", 5.0)),
        keys=t.get("keys", 16),
        message_size=t.get("message_size", 100),
        process=t.get("process", True),
        after_unfinished_commit=t.get("after_unfinished_commit", "reinit"),
        readers=ReadersConfig(
            subscribe=r.get("subscribe", 0),
            assign=r.get("assign", 0),
            group=r.get("group", "kchaos-txn"),
        ),
        copier=copier,
        configs=_props(t.get("configs")),
        **_durations(src, ("workload", "transactions"), t, ("timeout", "send_interval")),
    )


def _build(src: Source, seed: int | None) -> Scenario:
    d = src.data
    c = d.get("cluster", {})
    cluster = ClusterConfig(
        brokers=c.get("brokers", 3),
        controllers=c.get("controllers", 0),
        kafka_version=c.get("kafka_version"),
        image=c.get("image"),
        heap=c.get("heap", "512m"),
        data_mount_options=_mount_options(src, c.get("data_mount_options")),
        server_properties=_props(c.get("server_properties")),
        broker_properties={
            int(k): _props(v) for k, v in (c.get("broker_properties") or {}).items()
        },
    )
    topics = tuple(
        TopicConfig(
            name=t["name"],
            partitions=t.get("partitions", 3),
            replication_factor=t.get("replication_factor", 3),
            configs=_props(t.get("configs")),
            assignment=tuple(tuple(r) for r in t.get("assignment", ())),
        )
        for t in d["topics"]
    )
    w = d["workload"]
    p = w.get("producers", {})
    acks = str(p.get("acks", "all"))
    q = w.get("consumers", {})
    workload = WorkloadConfig(
        client=w.get("client", "confluent-kafka"),
        topics=tuple(w.get("topics", ())),
        producers=ProducerConfig(
            count=p.get("count", 1),
            rate=float(p.get("rate", 100.0)),
            acks="all" if acks == "-1" else acks,
            keys=p.get("keys", 16),
            message_size=p.get("message_size", 100),
            padding=p.get("padding", "repeated"),
            max_in_flight=p.get("max_in_flight", 100),
            configs=_props(p.get("configs")),
        ),
        consumers=ConsumerConfig(
            count=q.get("count", 0),
            mode=q.get("mode", "subscribe"),
            group=q.get("group", "kchaos"),
            rack=q.get("rack"),
            configs=_props(q.get("configs")),
            isolation=q.get("isolation", "read_uncommitted"),
        ),
        transactions=_transactions(src, w.get("transactions")),
        **_durations(
            src,
            ("workload",),
            w,
            ("duration", "monitor_interval", "drain_timeout", "close_timeout", "metrics_interval"),
        ),
    )
    n = d.get("nemesis", {})
    steps = []
    for i, s in enumerate(n.get("steps", [])):
        key = length_key(s)
        times = _durations(src, ("nemesis", "steps", i), s, ("at", key, "timeout"))
        steps.append(
            FaultStep(
                fault=s["fault"],
                target=str(s.get("target", _default_target([s["fault"]]))),
                params=dict(s.get("params", {})),
                when=s.get("when"),
                on_timeout=s.get("on_timeout"),
                at=times["at"],
                for_=times.get(key),
                timeout=times.get("timeout"),
            )
        )
    random_schedule = None
    if "random" in n:
        r = n["random"]
        times = _durations(
            src, ("nemesis", "random"), r, ("start", "quiet", "min_duration", "max_duration")
        )
        random_schedule = RandomSchedule(
            faults=tuple(r["faults"]),
            targets=tuple(r.get("targets", (_default_target(r["faults"]),))),
            params={k: dict(v) for k, v in r.get("params", {}).items()},
            **times,
        )
    k = d.get("checks", {})
    checks = ChecksConfig(
        min_ok_sends=k.get("min_ok_sends"),
        **_durations(src, ("checks",), k, ("max_offline_seconds", "max_time_to_full_isr_seconds")),
    )
    e = expect_for_version(d.get("expect", {}), cluster.kafka_version)
    valid = e.get("valid", True)
    expect = ExpectConfig(
        valid=None if valid == "any" else valid,
        anomalies=tuple(e.get("anomalies", ())),
        allowed=tuple(e.get("allowed", ())),
        allowed_causes=tuple(e.get("allowed_causes", ())),
        forbid=tuple(e.get("forbid", ())),
        effects=tuple(e.get("effects", ())),
        log_lines=_log_lines(src, d, e),
        elected_from_elr=bool(e.get("elected_from_elr", False)),
        offline_at_least=_durations(src, ("expect",), e, ("offline_at_least",)).get(
            "offline_at_least"
        ),
        section=dict(d["expect"]) if (d.get("expect") or {}).get("before") else {},
    )
    return Scenario(
        name=d["name"],
        description=" ".join(str(d["description"]).split()),
        cluster=cluster,
        topics=topics,
        workload=workload,
        nemesis=NemesisConfig(steps=tuple(steps), random=random_schedule),
        checks=checks,
        expect=expect,
        seed=seed if seed is not None else int(d.get("seed", 0)),
        source=src.file,
        tags=tuple(d.get("tags", ())),
        ticket=_ticket(src, d, cluster.kafka_version),
    )


def _log_lines(src: Source, d: dict[str, Any], e: dict[str, Any]) -> tuple[LogLine, ...]:
    """``expect.log_lines`` of the section that applies (a ``before`` entry's own, where
    that entry was chosen), checked with the file and line of a bad entry."""
    raw = e.get("log_lines")
    if raw is None:
        return ()
    whole = d.get("expect") or {}
    entry = next((k for k, v in (whole.get("before") or {}).items() if v is e or v == e), None)
    base: tuple[str | int, ...] = ("expect",) if entry is None else ("expect", "before", entry)

    def error(path: tuple[str | int, ...], message: str) -> Exception:
        return src.error((*base, "log_lines", *path), message)

    return parse_log_lines(raw, error)


def _ticket(src: Source, d: dict[str, Any], kafka_version: str | None) -> Ticket | None:
    """The ``ticket`` section, checked; a release outside its range is bad input."""
    raw = d.get("ticket")
    if raw is None:
        return None

    def error(path: tuple[str | int, ...], message: str) -> Exception:
        return src.error(("ticket", *path), message)

    ticket = Ticket.from_mapping(raw, error)
    if KNOWN_BUG_TAG not in (d.get("tags") or ()):
        raise src.error(("tags",), f"a scenario with a ticket is tagged {KNOWN_BUG_TAG}")
    from kchaos.harness.images.versions import parse_kafka_version

    version = str(parse_kafka_version(kafka_version))
    try:
        ticket.check_release(version, str(d["name"]))
    except ConfigError as exc:  # the same message, with the file and line of the version
        raise src.error(("cluster", "kafka_version"), exc.detail) from None
    return ticket


def load_scenario(
    path: str | Path,
    *,
    text: str | None = None,
    overrides: Sequence[str] = (),
    broker_config: str | Path | None = None,
    seed: int | None = None,
    kafka_version: str | None = None,
) -> Scenario:
    """Load, override, validate and build a scenario and its plan (``Scenario.plan``).

    ``overrides`` are ``dotted.path=value`` strings (``--set``); ``broker_config`` is a
    Java properties file merged over ``cluster.server_properties``; ``kafka_version``
    replaces ``cluster.kafka_version``.
    """
    file = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read scenario: {exc.strerror}", file=file) from None
        except UnicodeDecodeError:
            raise ConfigError("scenario is not UTF-8 text", file=file) from None
    src = load_yaml(text, file)
    for assignment in overrides:
        apply_override(src, assignment)
    _set_length_wins(src)
    if kafka_version is not None:
        src.data.setdefault("cluster", {})["kafka_version"] = kafka_version
        src.origins[("cluster", "kafka_version")] = "--kafka-version"
    if broker_config is not None:
        overlay, overlay_lines = load_properties_lines(broker_config)
        cluster = src.data.setdefault("cluster", {})
        if not isinstance(cluster, dict):
            raise src.error(("cluster",), "must be a mapping")
        props = cluster.setdefault("server_properties", {})
        if not isinstance(props, dict):
            raise src.error(("cluster", "server_properties"), "must be a mapping")
        for key, value in overlay.items():
            props[key] = value
            src.origins[("cluster", "server_properties", key)] = str(broker_config)
            src.origin_lines[("cluster", "server_properties", key)] = overlay_lines[key]
    return _checked(src, seed)


def load_scenario_data(
    data: Mapping[str, Any], file: str, *, kafka_version: str | None = None
) -> Scenario:
    """A scenario from plain data rather than YAML text: the scenario a run directory
    stores (run.json), which replay and shrink run again. The same checks and build as
    :func:`load_scenario`; an error names ``file`` and the field (there are no lines)."""
    src = Source(data=plain_data(data), file=file)
    if kafka_version is not None:
        src.data.setdefault("cluster", {})["kafka_version"] = kafka_version
        src.origins[("cluster", "kafka_version")] = "--kafka-version"
    return _checked(src, None)


def _set_length_wins(src: Source) -> None:
    """A step's length given by ``--set`` in either spelling (``for``, or the old
    ``duration``) replaces the one the file gives in the other: the step keeps the
    override's key alone. Both from the file, or both from ``--set``, stay for
    :func:`check_one_length` to refuse."""
    for i, step in enumerate(file_steps(src)):
        if not isinstance(step, dict) or not {LENGTH_KEY, OLD_LENGTH_KEY} <= set(step):
            continue
        by_set = [
            k
            for k in (LENGTH_KEY, OLD_LENGTH_KEY)
            if src.origins.get(("nemesis", "steps", i, k)) == "--set"
        ]
        if len(by_set) == 1:
            other = OLD_LENGTH_KEY if by_set[0] == LENGTH_KEY else LENGTH_KEY
            del step[other]


def _checked(src: Source, seed: int | None) -> Scenario:
    """Every check, the build and the plan of a scenario's data, in order."""
    check_one_length(src)
    check_values(src)
    validate_schema(src)
    scenario = _build(src, seed)
    check_durations(src, scenario)
    semantic_checks(src, scenario)
    check_java_client(src, scenario)
    built = plan.build(scenario, src)
    check_schedule(src, scenario, built)
    return replace(scenario, plan=built)


def expect_for_version(expect: dict[str, Any], kafka_version: str | None) -> dict[str, Any]:
    """The ``expect`` section that applies to the run's Kafka release: the entry of
    ``before`` with the lowest bound above it, else the section itself."""
    before = expect.get("before") or {}
    if not before:
        return expect
    from kchaos.harness.images.versions import parse_kafka_version

    version = parse_kafka_version(kafka_version)
    bounds = sorted((parse_kafka_version(k), k) for k in before)
    for bound, key in bounds:
        if version < bound:
            return dict(before[key])
    return {k: v for k, v in expect.items() if k != "before"}
