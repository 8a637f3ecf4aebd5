"""`client: java`: Kafka's VerifiableProducer / VerifiableConsumer in containers.

Each Java worker is one container of the cluster's own Kafka image on the run's network
(a static address ``.200 + slot``, so it can never take the address of a broker that is
down), labelled like every kchaos container (role ``client``) and removed on every exit
path. Its stdout is streamed line by line into a translator of
:mod:`kchaos.workloads.java_events`, which writes the history lines; the raw output is
kept in ``RUN_DIR/java-clients/<name>.out``. The scenario's client configs go into a
properties file (``--producer.config`` / ``--consumer.config``) whose keys the scenario
loader has already checked against the Java client's own names
(:mod:`kchaos.workloads.javaconf`).

The workers offer what :class:`kchaos.workloads.workload.Workload` uses of the Python
workers (start, request_stop, stop, counts, error; ready, polls, records).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import tarfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kchaos.harness.cluster.topology import host_ip, network_name
from kchaos.harness.errors import ConfigError
from kchaos.harness.labels import labels_for
from kchaos.harness.rundir.history_writer import HistorySink
from kchaos.harness.rundir.rundir import RunDir
from kchaos.workloads.java_events import ConsumerEvents, ProducerEvents
from kchaos.workloads.spec import ConsumerConfig, ProducerConfig, producer_settings

if TYPE_CHECKING:
    from kchaos.harness.cluster.api import ToolHost
    from kchaos.workloads.metrics import HarnessMetrics

log = logging.getLogger(__name__)

BIN = "/opt/kafka/bin"
PROPS = "/tmp/kchaos-client.properties"
ADDRESS_BASE = 200  # client containers take .200, .201, ... of the run's /24
_MAX_INT = 2147483647  # Kafka's own default of retries
_START_TIMEOUT_S = 60.0
# A small heap and the tools' launcher (kafka-run-class.sh: warnings only, on stderr).
_ENV = {"KAFKA_HEAP_OPTS": "-Xmx192m -Xms64m"}
# The properties arrive in an environment variable and are written to a file before
# the tool is exec'd (so its JVM is PID 1's only child and gets docker stop's SIGTERM).
_SCRIPT = 'printf "%s" "$KCHAOS_CLIENT_PROPS" > ' + PROPS + ' && exec "$@"'


@dataclass(frozen=True)
class JavaRuntime:
    """Where the Java clients run: the cluster's engine, image and network."""

    docker: Any  # docker.DockerClient
    image: str
    run_id: str
    subnet: str
    run_dir: RunDir | None = None  # keeps the raw stdout of every client (None: not kept)

    @classmethod
    def for_cluster(cls, cluster: ToolHost, run_dir: RunDir | None) -> JavaRuntime:
        return cls(
            docker=cluster.client,
            image=cluster.kafka_image,
            run_id=cluster.run_id,
            subnet=cluster.subnet,
            run_dir=run_dir,
        )


def properties_text(props: Mapping[str, Any]) -> str:
    """A Java properties file (keys and values escaped as java.util.Properties reads them)."""

    def esc(text: str, key: bool) -> str:
        out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        if key:
            for ch in "=: ":
                out = out.replace(ch, "\\" + ch)
        return out

    return "".join(f"{esc(str(k), True)}={esc(str(v), False)}\n" for k, v in props.items())


def producer_properties(spec: ProducerConfig, client_id: str) -> dict[str, str]:
    """The Java producer's settings: the typed ones (producer_settings), then the other
    configs as they are.

    ``retries`` is always written: VerifiableProducer itself sets 0, which would disable
    the idempotence kchaos asks for by default.
    """
    s = producer_settings(spec)
    props: dict[str, str] = {
        "client.id": client_id,
        "acks": "all" if spec.acks in ("all", "-1") else spec.acks,
        "enable.idempotence": "true" if s.idempotence else "false",
        "retries": str(_MAX_INT if s.retries is None else s.retries),
        "delivery.timeout.ms": str(s.delivery_timeout_ms),
        "request.timeout.ms": str(s.request_timeout_ms),
        "linger.ms": str(s.linger_ms),
        "compression.type": s.compression,
        "metadata.max.age.ms": "5000",
    }
    if s.batch_size is not None:
        props["batch.size"] = str(s.batch_size)
    if s.max_in_flight_requests is not None:
        props["max.in.flight.requests.per.connection"] = str(s.max_in_flight_requests)
    props.update({str(k): str(v) for k, v in s.other.items()})
    return props


def producer_argv(bootstrap: str, topic: str, process: int, spec: ProducerConfig) -> list[str]:
    if spec.rate <= 0:
        raise ConfigError("client java needs a producer rate above 0", field="producers.rate")
    acks = {"all": "-1", "-1": "-1", "1": "1", "0": "0"}[spec.acks]
    argv = [f"{BIN}/kafka-verifiable-producer.sh", "--topic", topic,
            "--bootstrap-server", bootstrap, "--throughput", str(max(1, round(spec.rate))),
            "--acks", acks, "--value-prefix", str(process), "--producer.config", PROPS]  # fmt: skip
    if spec.keys > 0:
        argv += ["--repeating-keys", str(spec.keys)]
    return argv


def consumer_properties(spec: ConsumerConfig, client_id: str) -> dict[str, str]:
    props = {
        "client.id": client_id,
        "metadata.max.age.ms": "5000",
        # as the Python readers: always set (a transactional run's readers read_committed)
        "isolation.level": spec.isolation,
    }
    if spec.rack:
        props["client.rack"] = spec.rack
    props.update({str(k): str(v) for k, v in spec.configs.items()})
    props.pop("group.protocol", None)  # a command-line option of the tool (below)
    return props


def consumer_argv(bootstrap: str, topic: str, spec: ConsumerConfig) -> list[str]:
    if spec.mode != "subscribe":
        raise ConfigError("client java reads in subscribe mode only", field="consumers.mode")
    argv = [f"{BIN}/kafka-verifiable-consumer.sh", "--topic", topic,
            "--bootstrap-server", bootstrap, "--group-id", spec.group, "--verbose",
            "--reset-policy", "earliest", "--session-timeout", "10000",
            "--consumer.config", PROPS]  # fmt: skip
    protocol = spec.configs.get("group.protocol")
    if protocol:
        argv += ["--group-protocol", str(protocol)]
    return argv


def tar_of(files: Mapping[str, str]) -> bytes:
    """A tar archive of ``files`` (name -> text), for ``put_archive``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class JavaContainer:
    """One client container: started, its stdout streamed to ``on_line``, stopped, removed."""

    def __init__(
        self,
        runtime: JavaRuntime,
        name: str,
        slot: int,
        argv: list[str],
        props: Mapping[str, str],
        on_line: Callable[[dict[str, Any]], None],
    ) -> None:
        self.runtime = runtime
        self.name = f"kchaos-{runtime.run_id}-{name}"
        self.slot = slot
        self.argv = argv
        self.props = dict(props)
        self.on_line = on_line
        self.container: Any = None
        self._reader: threading.Thread | None = None
        self.exit_code: int | None = None

    def start(self, files: Mapping[str, str] | None = None) -> None:
        """Create the container, put ``files`` (name -> text) in its ``/tmp``, start it and
        read its output."""
        rt = self.runtime
        net = network_name(rt.run_id)
        ip = host_ip(rt.subnet, ADDRESS_BASE + self.slot)
        env = {**_ENV, "KCHAOS_CLIENT_PROPS": properties_text(self.props)}
        self.container = rt.docker.containers.create(
            rt.image,
            entrypoint=["/bin/sh", "-c", _SCRIPT, "kchaos-client"],
            command=self.argv,
            name=self.name,
            hostname=self.name.rsplit("-", 2)[-2] + "-" + self.name.rsplit("-", 1)[-1],
            labels=labels_for(rt.run_id, "client"),
            environment=env,
            network=net,
            networking_config={net: rt.docker.api.create_endpoint_config(ipv4_address=ip)},
            restart_policy={"Name": "no"},
            stop_signal="SIGTERM",
        )
        if files:
            self.container.put_archive("/tmp", tar_of(files))
        self.container.start()
        self._reader = threading.Thread(target=self._read, name=f"read-{self.name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        out = None
        if self.runtime.run_dir is not None:
            path = self.runtime.run_dir.java_client_out(self.name)
            path.parent.mkdir(parents=True, exist_ok=True)
            out = path.open("wb")
        buf = b""
        try:
            for chunk in self.container.logs(stream=True, follow=True, stdout=True, stderr=False):
                if out is not None:
                    out.write(chunk)
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for raw in lines:
                    self._line(raw)
            if buf:
                self._line(buf)
        except Exception:  # the stream ends with the container; a broken one is logged
            log.warning("%s: output stream ended early", self.name, exc_info=True)
        finally:
            if out is not None:
                out.close()

    def _line(self, raw: bytes) -> None:
        text = raw.strip()
        if not text.startswith(b"{"):
            return  # the tools print a few plain lines (deprecation notes)
        try:
            data = json.loads(text)
        except ValueError:
            return
        if isinstance(data, dict):
            self.on_line(data)

    def signal_stop(self) -> None:
        """SIGTERM: the tool's shutdown hook flushes/closes its client and reports."""
        with contextlib.suppress(Exception):
            self.container.kill(signal="SIGTERM")

    def wait(self, timeout: float) -> bool:
        """Wait for the container to exit and its output to be read; False on timeout."""
        try:
            result = self.container.wait(timeout=max(1.0, timeout))
            self.exit_code = int(result.get("StatusCode", -1))
        except Exception:
            return False
        if self._reader is not None:
            self._reader.join(10.0)
        return True

    def remove(self) -> None:
        """Kill (if still running) and remove; safe to call on every exit path."""
        if self.container is None:
            return
        with contextlib.suppress(Exception):
            self.container.remove(force=True)
        if self._reader is not None:
            self._reader.join(5.0)


class JavaProducerWorker:
    """A VerifiableProducer container; invokes are paced at the rate the tool is throttled to."""

    def __init__(
        self,
        process: int,
        topic: str,
        spec: ProducerConfig,
        sink: HistorySink,
        bootstrap: str,
        runtime: JavaRuntime,
        slot: int,
        metrics: HarnessMetrics | None = None,
    ) -> None:
        self.process = process
        self.spec = spec
        self.events = ProducerEvents(
            sink, process, topic, single_attempt=producer_settings(spec).single_attempt,
            keys=spec.keys, metrics=metrics,
        )  # fmt: skip
        self.box = JavaContainer(
            runtime,
            f"client-p{process}",
            slot,
            producer_argv(bootstrap, topic, process, spec),
            producer_properties(spec, f"kchaos-p{process}"),
            self.events.line,
        )
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._pacer: threading.Thread | None = None

    @property
    def counts(self) -> dict[str, int]:
        return self.events.counts

    def start(self) -> None:
        self.box.start()
        self._pacer = threading.Thread(target=self._pace, name=f"pace-p{self.process}", daemon=True)
        self._pacer.start()

    def _pace(self) -> None:
        """Invoke line of value n at ``startup + (n - 1) / rate``: the earliest moment the
        tool's throttle lets it send value n (it sends n once n - 1 sends in the elapsed
        time are within the rate); a tool running late sends after its invoke line."""
        if not self.events.started.wait(_START_TIMEOUT_S):
            self.error = self.error or RuntimeError(f"{self.box.name}: no startup_complete")
            return
        assert self.spec.rate > 0  # producer_argv refused the others
        rate = max(1, round(self.spec.rate))
        began = time.monotonic()
        while not self._stop.is_set():
            due = int((time.monotonic() - began) * rate) + 2  # values 0 .. due-1
            self.events.announce(due)
            self._stop.wait(0.01)

    def request_stop(self) -> None:
        self._stop.set()
        if self._pacer is not None:
            self._pacer.join()
        self.box.signal_stop()

    def stop(self, close_timeout: float = 10.0) -> None:
        """Wait for the tool's shutdown (its close waits for in-flight sends), then record
        the sends left without a completion (:meth:`ProducerEvents.finish`)."""
        self.request_stop()
        try:
            if not self.box.wait(close_timeout + 15.0):
                log.warning("%s did not exit in time: killed", self.box.name)
        finally:
            self.box.remove()
            self.events.finish()
        if self.events.unparsed:
            log.warning("%s: %d events with foreign values", self.box.name, self.events.unparsed)


class JavaConsumerWorker:
    """A VerifiableConsumer container (group subscription, one topic)."""

    def __init__(
        self,
        process: int,
        topic: str,
        spec: ConsumerConfig,
        sink: HistorySink,
        bootstrap: str,
        runtime: JavaRuntime,
        slot: int,
    ) -> None:
        self.process = process
        self.events = ConsumerEvents(sink, process, spec.isolation)
        self.box = JavaContainer(
            runtime,
            f"client-c{process}",
            slot,
            consumer_argv(bootstrap, topic, spec),
            consumer_properties(spec, f"kchaos-c{process}"),
            self.events.line,
        )
        self.error: BaseException | None = None
        self.ready = self.events.started  # set by the tool's startup_complete

    @property
    def polls(self) -> int:
        return self.events.polls

    @property
    def records(self) -> int:
        return self.events.records

    def start(self) -> None:
        try:
            self.box.start()
        except Exception as exc:
            self.error = exc
            self.ready.set()

    def stop(self, timeout: float = 30.0) -> None:
        self.box.signal_stop()
        try:
            self.box.wait(timeout)
        finally:
            self.box.remove()
            self.events.finish()
