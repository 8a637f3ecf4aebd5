"""The one exceptions module of kchaos.

Every error kchaos raises on purpose derives from :class:`KchaosError`. The CLI catches
that base class, prints ``str(error)`` (no traceback) and exits with ``error.exit_code``.

    KchaosError                      exit 4 unless stated
    ├── InputError                   exit 3: bad input named by file, line and field
    │   ├── ConfigError              a scenario, broker config or CLI value is wrong
    │   ├── HistoryError             a history / run directory cannot be read
    │   ├── DumpError                kafka-dump-log's text of a data segment is not understood
    │   └── MetadataDumpError        kafka-dump-log's text of the metadata log is not understood
    ├── SetupError                   Docker engine, images, jars, tools
    │   └── ImageBuildError
    ├── ClusterError                 the cluster could not be brought up or driven
    │   ├── BrokerStartError         a broker refused its config (carries its log tail)
    │   ├── ReadinessTimeout         not ready in time (carries every container's state)
    │   │   └── WaitTimeout          a wait strategy ran out of time (carries what it saw last)
    │   └── ClientGone               no running client container at the address asked for
    ├── FaultError                   a fault could not be started
    │   ├── HealError                a fault could not be healed (cleanup must follow)
    │   ├── TriggerTimeout           a trigger's condition did not hold in time
    │   └── TriggerCancelled         the nemesis stopped while a trigger waited
    ├── WorkloadError                a client worker failed outside Kafka's own errors
    ├── AnalysisError                the Spark job failed (message, not a JVM trace)
    └── RunInterrupted               exit 130: SIGTERM or Ctrl-C cut the run short

Signals passed between two parts of kchaos, caught by the caller and never shown to a
user, derive from ``Exception`` directly, so that a CLI's ``except KchaosError`` cannot
swallow one by mistake:

    Exception
    ├── BudgetExhausted              the shrinker has no run left in its budget
    ├── SendRefused                  a Kafka client refused a record synchronously
    ├── ClientFatal                  a Kafka client can send no more
    ├── TxnError                     a transactional call failed (classified)
    ├── TxnClientUnusable            a txn worker's client must be replaced (its loop does)
    ├── TxnFenced                    another producer holds a txn worker's id: it stops
    └── RecordSkipped                the metadata replay cannot apply a record (a warning)

The last three are jumps out of nested code inside one module (``kchaos.workloads.txn``,
``kchaos.harness.run.metadata_records``), caught there and never shown to a user. They
do not derive from ``TxnError``, so that no ``except TxnError`` catches one by mistake.

tests/unit/test_errors_module.py checks that this drawing matches the classes below and
that no product module defines an exception class of its own.
"""

from __future__ import annotations

from typing import Any

# An error message is one line on a terminal: whatever it quotes is cut to this length.
MAX_SHOWN = 80
MAX_MESSAGE = 600


def shown(value: Any, limit: int = MAX_SHOWN) -> str:
    """``repr(value)`` cut to ``limit`` characters, control and binary bytes escaped.

    Long inputs (a 30 MB record value, a binary file) must not reach the console whole:
    only a prefix is built and the original length is said.
    """
    if isinstance(value, str | bytes) and len(value) > limit:
        text = repr(value[:limit])
        return f"{text}... ({len(value)} {'characters' if isinstance(value, str) else 'bytes'})"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class KchaosError(Exception):
    """Base of every error kchaos raises on purpose."""

    exit_code: int = 4


class InputError(KchaosError):
    """Bad input. The message names the file, the line and the field where known."""

    exit_code = 3

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.field = field
        self.detail = message
        where = ""
        if file is not None:
            where = file if line is None else f"{file}:{line}"
        prefix = f"{where}: " if where else ""
        if field:
            name = field if field.isprintable() else repr(field)[1:-1]
            prefix += f"{name[:120]}: "
        if len(message) > MAX_MESSAGE:  # a message quoting a huge value: never print it all
            message = message[:MAX_MESSAGE] + f"... ({len(message)} characters)"
        super().__init__(prefix + message)


class ConfigError(InputError):
    """A scenario, broker config or command-line value is wrong."""


class HistoryError(InputError):
    """A history file or run directory cannot be read."""


class SetupError(KchaosError):
    """The machine lacks something kchaos needs and could not install it."""


class ImageBuildError(SetupError):
    """Building one of the kchaos images failed."""


class ClusterError(KchaosError):
    """The cluster could not be brought up, driven or torn down."""


class BrokerStartError(ClusterError):
    """A broker exited during start-up; the message carries its own error and log tail."""


class ReadinessTimeout(ClusterError):
    """The cluster did not become ready in time; the message carries container states."""


class ClientGone(ClusterError):
    """No running client container has the address asked for: the client ended, or it is
    between two instances (a transactional worker replaces its container on re-init)."""


class FaultError(KchaosError):
    """A fault could not be started."""


class HealError(FaultError):
    """A fault could not be healed; run `kchaos cleanup`."""


class WorkloadError(KchaosError):
    """A workload worker failed outside Kafka's own (recorded) errors."""


class AnalysisError(KchaosError):
    """The Spark analysis failed."""


class DumpError(InputError):
    """kafka-dump-log's text of a data segment is not what the parser knows (names the line)."""


class MetadataDumpError(InputError):
    """kafka-dump-log's text of the metadata log cannot be read; names the source and line."""


class WaitTimeout(ReadinessTimeout):
    """A wait strategy ran out of time; ``last`` is what it observed last."""

    def __init__(self, what: str, timeout: float, last: str) -> None:
        self.what, self.timeout, self.last = what, timeout, last
        super().__init__(f"{what}: not reached after {timeout:.0f}s; last seen: {last}")


class TriggerTimeout(FaultError):
    """A trigger's condition did not hold within its timeout."""

    def __init__(self, message: str, last_observed: str = "") -> None:
        super().__init__(message)
        self.last_observed = last_observed


class TriggerCancelled(FaultError):
    """The nemesis was stopped while a trigger was waiting."""


class RunInterrupted(KchaosError):
    """SIGTERM or Ctrl-C: the run was cut short (after healing and teardown)."""

    exit_code = 130


class BudgetExhausted(Exception):
    """The shrinker's prober has no run left in its budget."""


class SendRefused(Exception):
    """The client refused the record synchronously: it was never enqueued."""

    def __init__(self, name: str, detail: str = "") -> None:
        super().__init__(f"{name}: {detail}" if detail else name)
        self.name = name


class ClientFatal(Exception):
    """The client can send no more (librdkafka's fatal errors, e.g. an idempotent
    producer whose acknowledged sequence the new leader does not have: the broker lost
    acknowledged writes). The producer stops sending; its in-flight sends end as info."""

    def __init__(self, name: str, detail: str = "") -> None:
        super().__init__(f"{name}: {detail}" if detail else name)
        self.name = name


class TxnError(Exception):
    """A transactional call failed: the error's canonical name and what the client says
    may be done next (librdkafka's and Kafka's own classification)."""

    def __init__(
        self,
        name: str,
        detail: str = "",
        *,
        retriable: bool = False,
        abortable: bool = False,
        fatal: bool = False,
        fenced: bool | None = None,
    ) -> None:
        super().__init__(f"{name}: {detail}" if detail else name)
        self.name = name
        self.retriable = retriable
        self.abortable = abortable
        self.fatal = fatal
        self._fenced = fenced

    @property
    def fenced(self) -> bool:
        """Another producer took this ``transactional.id`` (a newer epoch): what the client
        said, where it says so (Kafka's Java client), else by the error's name."""
        if self._fenced is not None:
            return self._fenced
        return self.name in ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "FENCED")

    @property
    def timed_out(self) -> bool:
        return self.name in ("TIMED_OUT", "MSG_TIMED_OUT", "REQUEST_TIMED_OUT")


class TxnClientUnusable(Exception):
    """A transactional worker's client must be replaced (a fatal error, or a commit whose
    end is unknown); the worker's own loop (``TxnWorkerBase.run``) makes a new one."""


class TxnFenced(Exception):
    """Another producer holds the transactional worker's id: the worker stops and is
    marked fenced."""


class RecordSkipped(Exception):
    """A metadata record the replay cannot apply (the message names why); the replay
    leaves it out with a warning."""
