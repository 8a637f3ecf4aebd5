"""What the checkers read from run.json (all optional; Kafka's defaults otherwise).

Keys looked up, first match wins, at the top level or under ``scenario``:

- acks: ``producer.acks``, ``workload.producer.acks``, ``workload.producers.acks``,
  ``acks``. ``all`` / ``-1`` mean acks=all (the default when absent). A send line's own
  optional ``acks`` field overrides it for that send.
- broker properties: ``broker_config``, ``cluster.broker_config``,
  ``cluster.server_properties``, ``cluster.config``: a mapping of server properties;
  ``unclean.leader.election.enable`` and ``min.insync.replicas`` are read.
- topic configs: ``topics`` (or ``workload.topics``): a list of ``{"name": ..,
  "configs": {..}}`` or a mapping name -> ``{"configs": {..}}``; the same two properties,
  overriding the broker's for that topic.
- thresholds: ``checks.max_offline_seconds``, ``checks.max_time_to_full_isr_seconds``,
  ``checks.min_ok_sends``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kchaos.harness.errors import HistoryError, shown

_UNCLEAN = "unclean.leader.election.enable"
_MIN_ISR = "min.insync.replicas"


@dataclass(frozen=True)
class RunConfig:
    """Settings that change what counts as an anomaly, with Kafka's defaults."""

    acks_all: bool = True
    unclean_enabled: bool = False
    topic_unclean: Mapping[str, bool] = field(default_factory=dict)
    min_insync: int | None = None  # None: what the metadata lines report
    topic_min_insync: Mapping[str, int] = field(default_factory=dict)
    max_offline_seconds: float | None = None
    max_time_to_full_isr_seconds: float | None = None
    min_ok_sends: int | None = None

    def unclean_for(self, topic: str) -> bool:
        return self.topic_unclean.get(topic, self.unclean_enabled)

    def min_insync_for(self, topic: str) -> int | None:
        return self.topic_min_insync.get(topic, self.min_insync)

    @classmethod
    def from_run_json(cls, data: Mapping[str, Any], source: str = "run.json") -> RunConfig:
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
                kwargs["unclean_enabled"] = _bool(
                    props[_UNCLEAN], source, f"{broker[1]}.{_UNCLEAN}"
                )
            if _MIN_ISR in props:
                kwargs["min_insync"] = _positive(props[_MIN_ISR], source, f"{broker[1]}.{_MIN_ISR}")
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
        return cls(**kwargs)

    @classmethod
    def load(cls, run_dir: Path) -> RunConfig:
        path = run_dir / "run.json"
        if not path.exists():
            return cls()
        if not path.is_file():
            raise HistoryError("is not a regular file", file=str(path))
        try:
            data = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as exc:
            raise HistoryError(f"not JSON: {exc}", file=str(path)) from None
        except OSError as exc:
            raise HistoryError(f"cannot read: {exc.strerror}", file=str(path)) from None
        if not isinstance(data, Mapping):
            raise HistoryError("expected a JSON object", file=str(path))
        return cls.from_run_json(data, str(path))


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
    """min.insync.replicas: a whole number of replicas, at least 1."""
    number = _int(value, source, where)
    if number < 1:
        raise HistoryError(
            f"expected a positive integer, got {shown(value)}", file=source, field=where
        )
    return number
