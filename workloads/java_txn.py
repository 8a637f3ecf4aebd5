"""Kafka's Java transactional producer behind :class:`~kchaos.workloads.clients.TxnProducerClient`.

With ``workload.client: java`` the transactional workers (:mod:`kchaos.workloads.txn`)
keep writing every history line themselves; only the client they call changes. Each
client is one container of the run's Kafka image (labelled role ``client``, removed on
every exit path) running ``java/TxnBridge.java`` with the image's own kafka-clients jar:
Kafka's Java producer of the run's release, which speaks transaction version 2 (KIP-890
part 2) from Kafka 4.0 on a cluster whose ``transaction.version`` is 2. The bridge
listens on :data:`PORT` at the container's fixed address; this side connects, sends one
JSON request per line and reads the replies and the delivery reports
(the protocol is in the Java file's header).

What the client reports is what Kafka's producer holds after ``initTransactions``: its
producer id and epoch and whether transaction version 2 is on (``transaction_version``
of the ``txn-init`` line), read from the producer's internal state, since it exposes none
of it. Blocking calls wait at most the producer's ``max.block.ms``, set to the
transaction timeout; a reply that does not come within that and :data:`GRACE_S` more
leaves the client unusable (a fatal error: the worker makes a new one).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

from kchaos.harness.cluster.topology import host_ip
from kchaos.harness.errors import ConfigError, SendRefused, TxnClientUnusable, TxnError
from kchaos.harness.rundir.rundir import RunDir
from kchaos.workloads.clients import (
    AssignCallback,
    Record,
    SendCallback,
    SendResult,
    TopicPartition,
    txn_producer_common,
)
from kchaos.workloads.java_client import ADDRESS_BASE, JavaContainer, JavaRuntime

log = logging.getLogger(__name__)

SOURCE = "TxnBridge.java"
PORT = 7300
#: Client containers take ``.200 + slot``; the plain Java workers the first slots, a
#: transactional worker ``TXN_SLOT_BASE + process`` (a replacement has a process of its
#: own, so a zombie and its successor never share an address).
TXN_SLOT_BASE = 24
MAX_SLOT = 254 - ADDRESS_BASE
#: How much longer than the call's own bound a reply may take before the bridge is
#: given up (JVM pauses, a loaded machine).
GRACE_S = 15.0
START_TIMEOUT_S = 60.0  # the JVM start, the source compiled, the port open
_ARGV = ["java", "-Xmx160m", "-XX:+UseSerialGC", "-cp", "/opt/kafka/libs/*",
         f"/tmp/{SOURCE}", str(PORT)]  # fmt: skip


def txn_slot(process: int) -> int:
    slot = TXN_SLOT_BASE + process
    if slot > MAX_SLOT:
        raise ConfigError(
            f"transactional process {process}: no client address left (at most "
            f"{MAX_SLOT - TXN_SLOT_BASE} processes with client java)",
            field="workload.transactions",
        )
    return slot


def client_address(subnet: str, process: int) -> str:
    """The address of transactional process ``process``'s client container (every
    instance of it: a replacement for the same process reuses it)."""
    return host_ip(subnet, ADDRESS_BASE + txn_slot(process))


def target_of(runtime: JavaRuntime) -> dict[str, str]:
    """Where a transactional worker's Java clients run, as JSON (it crosses to a child
    process, which opens its own Docker connection: :func:`runtime_of`)."""
    target = {"image": runtime.image, "run_id": runtime.run_id, "subnet": runtime.subnet}
    if runtime.run_dir is not None:
        target["run_dir"] = str(runtime.run_dir.path)
    return target


def runtime_of(target: Mapping[str, str]) -> JavaRuntime:
    import docker

    run_dir = target.get("run_dir")
    return JavaRuntime(
        docker=docker.from_env(),
        image=target["image"],
        run_id=target["run_id"],
        subnet=target["subnet"],
        run_dir=None if run_dir is None else RunDir.of(run_dir),
    )


def remove_stale(runtime: JavaRuntime, process: int) -> None:
    """Remove the client containers an earlier instance of transactional ``process`` left
    (its child process killed by a fault before it closed its client): they hold the
    address the new one needs."""
    prefix = f"kchaos-{runtime.run_id}-client-t{process}-"
    with contextlib.suppress(Exception):
        for old in runtime.docker.containers.list(all=True, filters={"name": prefix}):
            if old.name.startswith(prefix):
                old.remove(force=True)


def bridge_source() -> str:
    return resources.files("kchaos.workloads").joinpath("java", SOURCE).read_text()


def producer_config(
    bootstrap_servers: str,
    transactional_id: str,
    timeout_ms: int,
    client_id: str,
    extra: Mapping[str, str],
) -> dict[str, str]:
    """The Java producer's settings: those every transactional client gets
    (:func:`~kchaos.workloads.clients.txn_producer_common`), Java's own, then the
    scenario's ``configs``; as text, as a properties file has them."""
    common = txn_producer_common(bootstrap_servers, transactional_id, timeout_ms, client_id)
    conf = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in common.items()}
    # Java requires delivery.timeout.ms >= linger.ms + request.timeout.ms
    conf["delivery.timeout.ms"] = str(max(timeout_ms, 5005))
    conf["max.block.ms"] = str(timeout_ms)  # every blocking call's bound
    conf["metadata.max.age.ms"] = "5000"
    conf.update({str(k): str(v) for k, v in extra.items()})
    return conf


class BridgeClient:
    """The protocol side of one TxnBridge: a :class:`TxnProducerClient` over its
    connection (see the Java file's header). :class:`JavaTxnProducer` adds the container."""

    def __init__(self, config: Mapping[str, str], on_done: SendCallback, name: str) -> None:
        self.name = name
        self._on_done = on_done
        self._config = dict(config)
        self._block_s = int(self._config.get("max.block.ms", "60000")) / 1000.0
        self.transaction_version = 1  # until init says otherwise
        self._replies: dict[int, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self._outstanding: set[str] = set()
        self._next_id = 0
        self._sock: socket.socket | None = None
        self._file: Any = None
        self._reader: threading.Thread | None = None
        self._closed = False

    # -- the connection -------------------------------------------------------------------
    def connect(self, address: str, port: int, timeout: float) -> None:
        """Connect (trying again until ``timeout``) and open the producer."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                sock = socket.create_connection((address, port), timeout=5.0)
                break
            except OSError as exc:
                if time.monotonic() > deadline:
                    told = f"{self.name}: {exc}"
                    raise TxnError("JAVA_CLIENT_START", told, fatal=True) from exc
                time.sleep(0.2)
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self._file = sock.makefile("rwb")
        self._reader = threading.Thread(target=self._read, name=f"read-{self.name}", daemon=True)
        self._reader.start()
        self._call("open", self._block_s, config=self._config)

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def _read(self) -> None:
        try:
            for raw in self._file:
                data = json.loads(raw)
                if data.get("op") == "delivered":
                    self._delivered(data)
                    continue
                with self._cond:
                    self._replies[int(data["id"])] = data
                    self._cond.notify_all()
        except (OSError, ValueError):
            log.debug("%s: connection ended", self.name, exc_info=True)
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()

    def _delivered(self, data: dict[str, Any]) -> None:
        value = str(data.get("tag"))
        if "error" in data:
            result = SendResult(error=str(data["error"]))
        else:
            result = SendResult(partition=data.get("partition"), offset=data.get("offset"))
        with self._cond:
            self._outstanding.discard(value)
            self._cond.notify_all()
        self._on_done(value, result)

    def _call(self, op: str, bound: float, **fields: Any) -> dict[str, Any]:
        """One request and its reply; TxnError for a failure the client reported, and a
        fatal one when no reply came within ``bound`` and :data:`GRACE_S`."""
        if self._file is None:
            raise TxnError("JAVA_CLIENT_GONE", f"{op}: not connected", fatal=True)
        with self._cond:
            self._next_id += 1
            ident = self._next_id
        line = json.dumps({"id": ident, "op": op, **fields}).encode() + b"\n"
        try:
            self._file.write(line)
            self._file.flush()
        except (OSError, ValueError) as exc:
            raise TxnError("JAVA_CLIENT_GONE", f"{op}: {exc}", fatal=True) from exc
        deadline = time.monotonic() + bound + GRACE_S
        with self._cond:
            while ident not in self._replies:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    why = "the connection ended" if self._closed else "no reply in time"
                    raise TxnError("JAVA_CLIENT_GONE", f"{op}: {why}", fatal=True)
                self._cond.wait(left)
            reply = self._replies.pop(ident)
        if not reply.get("ok"):
            err = reply.get("error") or {}
            raise TxnError(
                str(err.get("name", "UNKNOWN")),
                str(err.get("detail", "")),
                retriable=bool(err.get("retriable")),
                abortable=bool(err.get("abortable")),
                fatal=bool(err.get("fatal")),
                fenced=bool(err.get("fenced")),
            )
        return reply

    # -- TxnProducerClient ------------------------------------------------------------------
    def init(self, timeout: float) -> tuple[int | None, int | None]:
        reply = self._call("init", self._block_s)
        if "state_error" in reply:
            log.warning("%s: the producer's state unread: %s", self.name, reply["state_error"])
        self.transaction_version = int(reply.get("transaction_version", 1))
        pid, epoch = reply.get("producer_id"), reply.get("producer_epoch")
        return (None if pid is None or pid < 0 else int(pid)), (
            None if epoch is None or epoch < 0 else int(epoch)
        )

    def begin(self) -> None:
        self._call("begin", 1.0)

    def send(self, topic: str, key: bytes | None, data: bytes, value: str) -> None:
        with self._cond:
            self._outstanding.add(value)
        try:
            self._call(
                "send",
                self._block_s,
                tag=value,
                topic=topic,
                key=None if key is None else base64.b64encode(key).decode(),
                data=base64.b64encode(data).decode(),
            )
        except TxnError as exc:
            with self._cond:
                self._outstanding.discard(value)
            if exc.fatal or exc.fenced:
                raise
            raise SendRefused(exc.name, str(exc)) from exc

    def flush(self, timeout: float) -> int:
        """Wait for the delivery reports of every send (the producer sends on its own,
        ``linger.ms`` after each); the number still missing after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._outstanding and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return len(self._outstanding)

    def send_offsets(
        self, offsets: Sequence[tuple[str, int, int]], group_metadata: object, timeout: float
    ) -> None:
        """The offsets into the transaction, with the group metadata of the consumer in the
        same bridge (:class:`BridgeConsumer`; ``group_metadata`` is not used)."""
        self._call("send_offsets", self._block_s, positions=[list(p) for p in offsets])

    # -- the copier's consumer, in the same process -------------------------------------------
    def consume(self, config: Mapping[str, str], topic: str) -> None:
        self._call("consume", self._block_s, config=dict(config), topic=topic)

    def poll_records(self, timeout: float) -> list[Record]:
        reply = self._call("poll", timeout, timeout_ms=int(timeout * 1000))
        return [
            Record(
                str(r["topic"]), int(r["partition"]), int(r["offset"]),
                None if r.get("data") is None else base64.b64decode(r["data"]),
            )
            for r in reply.get("records", [])
        ]  # fmt: skip

    def seek(self, topic: str, partition: int, offset: int) -> None:
        self._call("seek", self._block_s, topic=topic, partition=partition, offset=offset)

    def consume_close(self) -> None:
        self._call("consume_close", 10.0)

    def commit(self, timeout: float) -> None:
        self._call("commit", self._block_s)

    def abort(self, timeout: float) -> None:
        self._call("abort", self._block_s)

    def close(self) -> None:
        """Close the producer (if the bridge still answers) and the connection."""
        if self._sock is None:
            return
        if not self._closed:
            with contextlib.suppress(TxnError):
                self._call("close", 5.0, timeout_ms=5000)
        # the reader's file holds the socket open: shut the connection itself down
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._file.close()
            self._sock.close()
        if self._reader is not None:
            self._reader.join(5.0)


class JavaTxnProducer(BridgeClient):
    """One Kafka Java transactional producer in a container (see the module's text): the
    container starts when the client is made; :meth:`init` connects to it."""

    def __init__(
        self,
        runtime: JavaRuntime,
        process: int,
        config: Mapping[str, str],
        on_done: SendCallback,
        *,
        instance: int = 0,
    ) -> None:
        slot = txn_slot(process)
        self._listening = threading.Event()
        self._address = host_ip(runtime.subnet, ADDRESS_BASE + slot)
        remove_stale(runtime, process)
        box = JavaContainer(runtime, f"client-t{process}-{instance}", slot, _ARGV, {}, self._stdout)
        super().__init__(config, on_done, box.name)
        self.box = box
        box.start(files={SOURCE: bridge_source()})

    def _stdout(self, line: dict[str, Any]) -> None:
        if line.get("op") == "listening":
            self._listening.set()

    def init(self, timeout: float) -> tuple[int | None, int | None]:
        if not self.connected:
            # one deadline for the start: the listening line, then the connection
            deadline = time.monotonic() + START_TIMEOUT_S
            if not self._listening.wait(START_TIMEOUT_S):
                told = f"{self.name}: no listening line in {START_TIMEOUT_S:.0f} s"
                raise TxnError("JAVA_CLIENT_START", told, fatal=True)
            self.connect(self._address, PORT, max(deadline - time.monotonic(), 1.0))
        return super().init(timeout)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.box.remove()


def consumer_config(
    bootstrap_servers: str, group: str, client_id: str, max_records: int
) -> dict[str, str]:
    """The copier's Java consumer: its group, read_committed, offsets only through the
    transaction, from the start when the group has none."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "group.id": group,
        "client.id": client_id,
        "isolation.level": "read_committed",
        "enable.auto.commit": "false",
        "auto.offset.reset": "earliest",
        "max.poll.records": str(max_records),
        "metadata.max.age.ms": "5000",
    }


class BridgeConsumer:
    """The copier's consumer for ``workload.client: java``: a Kafka Java consumer in the
    bridge of the worker's *current* producer (``current()``), so that
    ``sendOffsetsToTransaction`` gets that consumer's own group metadata. When the worker
    replaces its producer (a new container), the next call opens a new consumer there,
    which starts from the group's committed offsets, as a new consumer does with
    librdkafka. The copier uses subscribe, poll, seek, group_metadata and close; the rest
    of :class:`~kchaos.workloads.clients.ConsumerClient` is not served by the bridge."""

    def __init__(
        self, current: Callable[[], BridgeClient | None], config: Mapping[str, str]
    ) -> None:
        self._current = current
        self._config = dict(config)
        self._topic: str | None = None
        self._on: BridgeClient | None = None  # the bridge whose consumer is open

    def _bridge(self) -> BridgeClient:
        bridge = self._current()
        if bridge is None or self._topic is None:
            raise TxnClientUnusable("the copier's consumer has no Java client to run in")
        if bridge is not self._on:
            self._fatal_unusable(lambda: bridge.consume(self._config, str(self._topic)))
            self._on = bridge
        return bridge

    @staticmethod
    def _fatal_unusable(call: Any) -> Any:
        """A bridge that went away makes the worker's client unusable (a new one comes)."""
        try:
            return call()
        except TxnError as exc:
            if exc.fatal:
                raise TxnClientUnusable(f"the copier's consumer: {exc}") from exc
            raise

    def subscribe(self, topics: Sequence[str], on_assign: AssignCallback) -> None:
        if len(topics) != 1:
            raise ValueError("the copier's Java consumer reads one topic")
        self._topic = topics[0]

    def poll(self, timeout: float, max_records: int) -> tuple[list[Record], list[str]]:
        bridge = self._bridge()
        try:
            return self._fatal_unusable(lambda: bridge.poll_records(timeout)), []
        except TxnError as exc:  # the consumer's own error: reported, as librdkafka's are
            return [], [exc.name]

    def seek(self, topic: str, partition: int, offset: int) -> None:
        bridge = self._bridge()
        self._fatal_unusable(lambda: bridge.seek(topic, partition, offset))

    def group_metadata(self) -> object:
        return None  # the bridge commits with its consumer's own

    def close(self) -> None:
        bridge, self._on = self._on, None
        if bridge is not None and bridge is self._current():
            with contextlib.suppress(TxnError):
                bridge.consume_close()

    def _not_served(self, what: str) -> NotImplementedError:
        return NotImplementedError(f"the copier's Java consumer does not {what}")

    def assign(self, partitions: Sequence[tuple[str, int, int | None]]) -> None:
        raise self._not_served("assign")

    def commit(self) -> list[tuple[str, int, int]]:
        raise self._not_served("commit outside a transaction")

    def watermarks(self, topic: str, partition: int, timeout: float) -> tuple[int, int]:
        raise self._not_served("read watermarks")

    def partitions_for(self, topic: str, timeout: float) -> list[int]:
        raise self._not_served("list partitions")

    def position(self, topic: str, partition: int) -> int | None:
        return None

    def fetch_sources(self) -> dict[TopicPartition, tuple[int, int]]:
        return {}
