"""Values a JSON Schema lets through but no run can use, refused before the build.

Run on the plain data (after ``--set`` and ``--broker-config``), so a bad value is named
by the file and line it came from:

- numbers that are not finite (``.nan``, ``.inf``) or beyond 64 bits, anywhere;
- ``min.insync.replicas`` that is not a whole number of replicas, at least 1 (a word,
  zero, a fraction), in server, broker and topic properties;
- ``broker_properties`` keys naming one broker twice (``"0002"`` and ``"2"``);
- a step that gives its length twice, as ``for`` and as its old spelling ``duration``
  (the schema says so too, but this message says which is which);

and after the build, durations beyond what a run can wait for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

from kchaos.harness.errors import shown
from kchaos.harness.rundir.scenario_model import LENGTH_KEY, OLD_LENGTH_KEY, Scenario, length_key
from kchaos.harness.scenario.yamlsrc import Path_, Source

MIN_ISR = "min.insync.replicas"
# The longest duration a scenario may ask for (30 days): longer ones are typing errors,
# and a timer cannot wait for astronomically long ones at all.
MAX_SECONDS = 30 * 24 * 3600.0
_INT_LIMIT = 2**63
_WHOLE = re.compile(r"^\s*[0-9]{1,9}\s*$")


def check_values(src: Source) -> None:
    """Raise ConfigError (file, line, field) for the first value no run can use."""
    for path, value in _walk(src.data, ()):
        if isinstance(value, float) and not math.isfinite(value):
            raise src.error(path, f"must be a finite number, got {value}")
        if isinstance(value, int) and abs(value) >= _INT_LIMIT:
            raise src.error(path, f"number out of range: {shown(value)}")
    cluster = src.data.get("cluster")
    if isinstance(cluster, Mapping):
        _min_isr(src, ("cluster", "server_properties"), cluster.get("server_properties"))
        per_broker = cluster.get("broker_properties")
        if isinstance(per_broker, Mapping):
            _broker_ids(src, per_broker)
            for key, props in per_broker.items():
                _min_isr(src, ("cluster", "broker_properties", key), props)
    topics = src.data.get("topics")
    if isinstance(topics, list):
        for i, topic in enumerate(topics):
            if isinstance(topic, Mapping):
                _min_isr(src, ("topics", i, "configs"), topic.get("configs"))


def file_steps(src: Source) -> list[Any]:
    """The plain data's ``nemesis.steps`` (empty when it is missing or not a list)."""
    nemesis = src.data.get("nemesis")
    steps = nemesis.get("steps") if isinstance(nemesis, Mapping) else None
    return steps if isinstance(steps, list) else []


def check_one_length(src: Source) -> None:
    """A step gives its length once: ``for``, or its old spelling ``duration``."""
    for i, step in enumerate(file_steps(src)):
        if isinstance(step, Mapping) and LENGTH_KEY in step and OLD_LENGTH_KEY in step:
            raise src.error(
                ("nemesis", "steps", i, OLD_LENGTH_KEY),
                f"the step gives its length twice: {OLD_LENGTH_KEY} is the old spelling of "
                f"{LENGTH_KEY}; keep {LENGTH_KEY} only",
            )


def _length_key(src: Source, i: int) -> str:
    """The key step ``i`` gives its length under in the file."""
    steps = file_steps(src)
    step = steps[i] if i < len(steps) else None
    return length_key(step) if isinstance(step, Mapping) else LENGTH_KEY


def _walk(node: Any, path: Path_) -> Iterator[tuple[Path_, Any]]:
    """Every leaf value with its path (the data is bounded in depth by the YAML loader)."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _walk(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, (*path, i))
    else:
        yield path, node


def _min_isr(src: Source, base: Path_, props: Any) -> None:
    if not isinstance(props, Mapping) or MIN_ISR not in props:
        return
    value = props[MIN_ISR]
    whole = isinstance(value, int) and not isinstance(value, bool)
    if isinstance(value, str) and _WHOLE.match(value):
        whole, value = True, int(value)
    if not whole or value < 1:
        raise src.error(
            (*base, MIN_ISR),
            f"must be a whole number of replicas, at least 1; got {shown(props[MIN_ISR])}",
        )


def _broker_ids(src: Source, per_broker: Mapping[str, Any]) -> None:
    seen: dict[int, str] = {}
    for key in per_broker:
        text = str(key).strip()
        if not text.isdigit():
            continue  # the schema names it
        node = int(text)
        if node in seen:
            raise src.error(
                ("cluster", "broker_properties", key),
                f"broker {node} is given twice ({shown(seen[node])} and {shown(key)})",
            )
        seen[node] = key


def check_durations(src: Source, sc: Scenario) -> None:
    """Every duration finite, and at most MAX_SECONDS; the monitor's interval above 0."""
    w = sc.workload
    found: list[tuple[Path_, float | None]] = [
        (("workload", "duration"), w.duration),
        (("workload", "monitor_interval"), w.monitor_interval),
        (("workload", "drain_timeout"), w.drain_timeout),
        (("checks", "max_offline_seconds"), sc.checks.max_offline_seconds),
        (("checks", "max_time_to_full_isr_seconds"), sc.checks.max_time_to_full_isr_seconds),
    ]
    for i, step in enumerate(sc.nemesis.steps):
        found += [(("nemesis", "steps", i, "at"), step.at)]
        found += [(("nemesis", "steps", i, _length_key(src, i)), step.for_)]
    r = sc.nemesis.random
    if r is not None:
        for key in ("start", "quiet", "min_duration", "max_duration"):
            found.append((("nemesis", "random", key), getattr(r, key)))
    for path, seconds in found:
        if seconds is None:
            continue
        if not math.isfinite(seconds) or seconds > MAX_SECONDS:
            raise src.error(
                path, f"{seconds:g} s is more than a run can wait ({MAX_SECONDS:g} s at most)"
            )
    if w.monitor_interval <= 0:
        raise src.error(("workload", "monitor_interval"), "must be more than 0 seconds")
