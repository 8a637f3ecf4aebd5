"""Start faults on an existing run's cluster and hold them: ``python -m kchaos.faults.hold``.

    python -m kchaos.faults.hold --run RUN_ID pause:broker-2:mode=freezer latency:1:latency_ms=500

Each argument is ``FAULT[:TARGET[:K=V,K=V...]]``. The faults start in order; the process
prints ``STARTED <id> <fault> <targets>`` per fault and ``HOLDING`` then sleeps for
``--hold`` seconds and stops them in reverse order (``--no-protect`` skips the exit-path
heal). Tests use it as "the harness" they SIGKILL in the middle of a fault, after which
``kchaos cleanup`` / ``kchaos.faults.heal_everything`` must leave the cluster healed. Params are
parsed as JSON when possible (numbers, true/false), else kept as strings.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from kchaos.faults.base import Fault, make_fault
from kchaos.faults.safety import protect


def parse_fault(text: str) -> tuple[str, str | None, dict[str, Any]]:
    name, _, rest = text.partition(":")
    target, _, params_text = rest.partition(":")
    params: dict[str, Any] = {}
    for item in filter(None, params_text.split(",")):
        key, _, raw = item.partition("=")
        try:
            params[key] = json.loads(raw)
        except ValueError:
            params[key] = raw
    return name, target or None, params


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kchaos.faults.hold")
    ap.add_argument("--run", required=True, help="run id of a live cluster")
    ap.add_argument("--hold", type=float, default=600.0, help="seconds to hold the faults")
    ap.add_argument("--seed", default="0")
    ap.add_argument("--no-protect", action="store_true")
    ap.add_argument("faults", nargs="+", help="FAULT[:TARGET[:K=V,...]]")
    args = ap.parse_args(argv)

    from kchaos.harness.cluster import attach

    cluster = attach(args.run)
    if not args.no_protect:
        protect(cluster)
    started: list[Fault] = []
    for i, text in enumerate(args.faults, start=1):
        name, target, params = parse_fault(text)
        fault = make_fault(cluster, name, target, id=f"h-{i}", seed=args.seed, **params)
        fault.start()
        started.append(fault)
        print(f"STARTED {fault.id} {name} {','.join(fault.target_names)}", flush=True)
    print("HOLDING", flush=True)
    try:
        time.sleep(args.hold)
    finally:
        for fault in reversed(started):
            fault.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
