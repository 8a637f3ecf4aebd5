"""What cluster to start: :class:`ClusterSpec`, a frozen description with no side effects:
the scenario model's ClusterConfig plus the fields only the runtime sets."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol

from kchaos.harness.errors import ConfigError
from kchaos.harness.rundir.scenario_model import IMAGE_SOURCES, ClusterConfig

# Kept equal to harness.images.DEFAULT_KAFKA_VERSION (imported lazily so that this module
# stays importable without the images package).
FALLBACK_KAFKA_VERSION = "4.4.0"
MIN_KAFKA_VERSION = (3, 3)
# Broker JVM flags tuned for a small shared machine: the C1 compiler only and the serial
# collector. With Kafka's defaults (G1 and C2) three brokers on 2 busy cores took ~60 s
# from container start to full ISR; with these, ~16 s (see docs/cluster.md).
FAST_JVM_OPTS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Djava.awt.headless=true"


def default_kafka_version() -> str:
    from kchaos.harness.images import DEFAULT_KAFKA_VERSION

    return str(DEFAULT_KAFKA_VERSION)


class ImageTags(Protocol):
    """The two image tags a cluster needs; ``kchaos.harness.images.ImageSet`` satisfies it."""

    @property
    def kafka(self) -> str: ...

    @property
    def toxiproxy(self) -> str: ...


def parse_version(version: str) -> tuple[int, int, int]:
    """``"3.9.1"`` -> (3, 9, 1); a release below 3.3 or a malformed one is a ConfigError."""
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?(?:[-.].*)?", version.strip())
    if not match:
        raise ConfigError(f"not a Kafka release number: {version!r}", field="kafka_version")
    parsed = (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))
    if parsed[:2] < MIN_KAFKA_VERSION:
        raise ConfigError(
            f"Kafka {version} is older than 3.3, the first release with production KRaft",
            field="kafka_version",
        )
    return parsed


# An ext4 option: a name, optionally "=value" (``noauto_da_alloc``, ``data=writeback``,
# ``commit=30``). Commas separate options, so a list item may not hold one.
_MOUNT_OPTION = re.compile(r"[a-z][a-z0-9_]*(=[A-Za-z0-9_.:+-]+)?")
# Options the harness cannot live with: a read-only or moved mount, a journal that is not
# replayed after a hard reboot (the filesystem would come back inconsistent), and a kernel
# panic on the first ext4 error (the host is the test machine).
_FORBIDDEN_MOUNT_OPTIONS = {
    "ro": "Kafka must write to its data directory",
    "remount": "the harness mounts each filesystem itself",
    "bind": "the harness mounts each filesystem itself",
    "rbind": "the harness mounts each filesystem itself",
    "move": "the harness mounts each filesystem itself",
    "noload": "a hard reboot needs the journal replayed at the next mount",
    "norecovery": "a hard reboot needs the journal replayed at the next mount",
    "errors=panic": "an ext4 error would panic the host's kernel",
}


def mount_options(raw: object) -> tuple[str, ...]:
    """Extra ext4 mount options of the nodes' data filesystems: a list of options or one
    comma-separated string, normalised to a tuple; a ConfigError names the bad one."""
    if raw is None:
        return ()
    if isinstance(raw, str):
        items: list[object] = [p for p in raw.split(",") if p.strip()]
    elif isinstance(raw, (list, tuple)):
        items = list(raw)
    else:
        raise ConfigError(
            f"a list of ext4 mount options expected, got {raw!r}", field="data_mount_options"
        )
    out: list[str] = []
    for item in items:
        option = item.strip() if isinstance(item, str) else item
        if not isinstance(option, str) or not _MOUNT_OPTION.fullmatch(option):
            raise ConfigError(
                f"not an ext4 mount option (name or name=value, no comma): {item!r}",
                field="data_mount_options",
            )
        why = _FORBIDDEN_MOUNT_OPTIONS.get(option) or _FORBIDDEN_MOUNT_OPTIONS.get(
            option.split("=", 1)[0]
        )
        if why:
            raise ConfigError(f"{option!r} is not allowed: {why}", field="data_mount_options")
        out.append(option)
    return tuple(out)


def _stringify(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _properties(raw: Mapping[str, Any] | None, where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (raw or {}).items():
        if not isinstance(key, str) or not key.strip():
            raise ConfigError(f"property name must be a non-empty string, got {key!r}", field=where)
        out[key.strip()] = _stringify(value)
    return out


@dataclass(frozen=True)
class ClusterSpec(ClusterConfig):
    """A KRaft cluster: N brokers (combined broker+controller unless ``controllers`` > 0).

    The run description's :class:`~kchaos.harness.rundir.scenario_model.ClusterConfig`
    (the scenario's ``cluster`` section) with the fields only the runtime sets added: a
    subclass, so that ``brokers``, ``controllers``, ``kafka_version``, ``image``,
    ``server_properties``, ``broker_properties``, ``heap`` and ``data_mount_options`` are
    declared once, in the model, under the names a scenario file uses (issue 34: no
    mirrored pairs). For a scenario, :func:`kchaos.harness.scenario.plan.cluster_spec`
    builds it with :meth:`of`. Declared here: the image tags the runner resolved
    (``images``, ``toxiproxy_image``), ``jvm_performance_opts``, ``disk_size_mb``,
    ``racks``, ``ready_timeout`` and ``run_id``.

    Checked and normalised when made: ``kafka_version`` None becomes the default release,
    property values become Kafka strings (true/false), ``data_mount_options`` a tuple.
    ``server_properties`` apply to every node and ``broker_properties[node_id]`` to one
    node; both are passed to Kafka untouched and win over the harness's own defaults.
    ``racks`` maps node id to ``broker.rack`` (for follower fetching add
    ``replica.selector.class`` to ``server_properties``). Images: a tag in ``image``
    (:attr:`image_tag`; ``offline`` and ``registry`` are sources, the runner's to resolve
    into ``images``) and ``toxiproxy_image`` win, then ``images`` (an ImageSet), else
    ``kchaos.harness.images.ensure_images(kafka_version)``. ``jvm_performance_opts``
    becomes KAFKA_JVM_PERFORMANCE_OPTS ("": the image's own).
    """

    images: ImageTags | None = None
    toxiproxy_image: str | None = None
    jvm_performance_opts: str = FAST_JVM_OPTS  # "" keeps the image's (Kafka's) defaults
    disk_size_mb: int = 1024
    racks: Mapping[int, str] = field(default_factory=dict)
    ready_timeout: float = 120.0
    run_id: str | None = None

    @classmethod
    def of(cls, config: ClusterConfig, **runtime: Any) -> ClusterSpec:
        """The spec of a scenario's ``cluster``: its fields as they are, the runtime's
        own from ``runtime`` (or their defaults)."""
        model = {f.name: getattr(config, f.name) for f in fields(ClusterConfig)}
        return cls(**model, **runtime)

    def __post_init__(self) -> None:
        if not isinstance(self.brokers, int) or self.brokers < 1 or self.brokers > 60:
            raise ConfigError(
                f"must be an integer from 1 to 60, got {self.brokers!r}", field="brokers"
            )
        if not isinstance(self.controllers, int) or self.controllers < 0 or self.controllers > 9:
            raise ConfigError(
                f"must be an integer from 0 to 9, got {self.controllers!r}", field="controllers"
            )
        release = self.kafka_version or default_kafka_version()
        parse_version(release)
        object.__setattr__(self, "kafka_version", release)
        if not re.fullmatch(r"\d+[kKmMgG]?", self.heap):
            raise ConfigError(f"JVM heap size like 512m expected, got {self.heap!r}", field="heap")
        if self.disk_size_mb < 64:
            raise ConfigError("at least 64 MiB", field="disk_size_mb")
        object.__setattr__(self, "data_mount_options", mount_options(self.data_mount_options))
        if self.ready_timeout <= 0:
            raise ConfigError("must be positive", field="ready_timeout")
        if self.run_id is not None and not re.fullmatch(
            r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", self.run_id
        ):
            raise ConfigError(
                f"letters, digits, '.', '_' and '-' only: {self.run_id!r}", field="run_id"
            )
        object.__setattr__(
            self, "server_properties", _properties(self.server_properties, "server_properties")
        )
        per_node: dict[int, dict[str, str]] = {}
        for node_id, props in (self.broker_properties or {}).items():
            nid = int(node_id)
            if nid not in self.node_ids:
                raise ConfigError(f"no node with id {nid}", field="broker_properties")
            per_node[nid] = _properties(props, f"broker_properties[{nid}]")
        object.__setattr__(self, "broker_properties", per_node)
        racks = {int(k): str(v) for k, v in (self.racks or {}).items()}
        for nid in racks:
            if nid not in self.broker_ids:
                raise ConfigError(f"no broker with id {nid}", field="racks")
        object.__setattr__(self, "racks", racks)

    @property
    def version(self) -> tuple[int, int, int]:
        """``kafka_version`` parsed (never None here: made with the default filled in)."""
        assert self.kafka_version is not None
        return parse_version(self.kafka_version)

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.brokers + 1))

    @property
    def controller_ids(self) -> tuple[int, ...]:
        """Voter ids: the brokers themselves in combined mode, else 101, 102, ..."""
        if self.controllers == 0:
            return self.broker_ids
        return tuple(range(101, 101 + self.controllers))

    @property
    def node_ids(self) -> tuple[int, ...]:
        if self.controllers == 0:
            return self.broker_ids
        return self.broker_ids + self.controller_ids

    def roles(self, node_id: int) -> tuple[str, ...]:
        roles: list[str] = []
        if node_id in self.broker_ids:
            roles.append("broker")
        if node_id in self.controller_ids:
            roles.append("controller")
        return tuple(roles)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, what the cluster's state file and run.json's
        ``cluster_spec`` hold; :meth:`from_dict` reads it and every earlier form."""
        data = asdict(self)
        images = self.images
        data["images"] = (
            None if images is None else {"kafka": images.kafka, "toxiproxy": images.toxiproxy}
        )
        data["broker_properties"] = {str(k): dict(v) for k, v in self.broker_properties.items()}
        data["racks"] = {str(k): v for k, v in self.racks.items()}
        data["server_properties"] = dict(self.server_properties)
        data["data_mount_options"] = list(self.data_mount_options)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterSpec:
        """The spec of its :meth:`to_dict` form, or of an earlier one
        (:func:`upgraded`); the stored image tags become explicit ones."""
        stored = upgraded(data)
        images = stored.pop("images", None) or {}
        if stored.get("image") is None or stored["image"] in IMAGE_SOURCES:
            stored["image"] = images.get("kafka") or stored.get("image")
        stored["toxiproxy_image"] = stored.get("toxiproxy_image") or images.get("toxiproxy")
        per_node = stored.get("broker_properties") or {}
        stored["broker_properties"] = {int(k): v for k, v in per_node.items()}
        stored["racks"] = {int(k): v for k, v in (stored.get("racks") or {}).items()}
        return cls(**stored)


def upgraded(data: Mapping[str, Any]) -> dict[str, Any]:
    """A stored spec (a state file's ``spec``, run.json's ``cluster_spec``) in today's
    form. Before issue 34 a Kafka image tag had a field of its own, ``kafka_image``; it is
    now the model's ``image`` (which may also name a source), so a stored ``kafka_image``
    becomes ``image``."""
    stored = dict(data)
    tag = stored.pop("kafka_image", None)
    if tag is not None and stored.get("image") is None:
        stored["image"] = tag
    return stored
