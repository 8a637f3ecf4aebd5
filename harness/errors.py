"""The one exceptions module of kchaos.

Every error kchaos raises on purpose derives from :class:`KchaosError`. The CLI catches
that base class, prints ``str(error)`` (no traceback) and exits with ``error.exit_code``.

    KchaosError                      exit 4 unless stated
    ├── InputError                   exit 3: bad input named by file, line and field
    │   ├── ConfigError              a scenario, broker config or CLI value is wrong
    │   └── HistoryError             a history / run directory cannot be read
    ├── SetupError                   Docker engine, images, jars, tools
    │   └── ImageBuildError
    ├── ClusterError                 the cluster could not be brought up or driven
    │   ├── BrokerStartError         a broker refused its config (carries its log tail)
    │   └── ReadinessTimeout         not ready in time (carries every container's state)
    ├── FaultError                   a fault could not be started
    │   └── HealError                a fault could not be healed (cleanup must follow)
    ├── WorkloadError                a client worker failed outside Kafka's own errors
    └── AnalysisError                the Spark job failed (message, not a JVM trace)
"""

from __future__ import annotations


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
            prefix += f"{field}: "
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


class FaultError(KchaosError):
    """A fault could not be started."""


class HealError(FaultError):
    """A fault could not be healed; run `kchaos cleanup`."""


class WorkloadError(KchaosError):
    """A workload worker failed outside Kafka's own (recorded) errors."""


class AnalysisError(KchaosError):
    """The Spark analysis failed."""
