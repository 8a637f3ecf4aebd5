"""librdkafka's own log in the run directory: ``RUN_DIR/logs/librdkafka.log``
(:attr:`kchaos.harness.rundir.rundir.RunDir.librdkafka_log`, created on its first line only).

A confluent-kafka client whose config has a ``debug`` key logs its debug contexts (e.g.
``eos,protocol,msg``) through :data:`LIBRDKAFKA_LOG` rather than the process's stderr
(:mod:`kchaos.workloads.confluent_client` sets the config's ``logger``); while a run's
clients run, the workload points that logger at the file, so the client's account of
retries and epoch bumps sits next to the brokers' logs.

Plain :mod:`logging` only: the workload sets the file up without loading confluent-kafka.
"""

from __future__ import annotations

import logging
from pathlib import Path

LIBRDKAFKA_LOG = logging.getLogger("kchaos.client.librdkafka")


def log_to_file(path: Path) -> logging.Handler:
    """Send librdkafka's log to ``path`` (created on the first line only) until
    :func:`stop_logging` is given the returned handler."""
    handler = logging.FileHandler(path, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    LIBRDKAFKA_LOG.addHandler(handler)
    LIBRDKAFKA_LOG.setLevel(logging.DEBUG)
    LIBRDKAFKA_LOG.propagate = False  # a debug log can be large: never on the console
    return handler


def stop_logging(handler: logging.Handler) -> None:
    LIBRDKAFKA_LOG.removeHandler(handler)
    handler.close()
