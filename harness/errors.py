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


class FaultError(KchaosError):
    """A fault could not be started."""


class HealError(FaultError):
    """A fault could not be healed; run `kchaos cleanup`."""


class WorkloadError(KchaosError):
    """A workload worker failed outside Kafka's own (recorded) errors."""


class AnalysisError(KchaosError):
    """The Spark analysis failed."""
