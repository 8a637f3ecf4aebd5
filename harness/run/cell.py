"""One cell of a ``--parallel`` batch, in a process of its own.

    python -m kchaos.harness.run.cell < JOB

JOB is a pickled :class:`~kchaos.harness.run.parallel.CellJob` written by the batch's
parent (:class:`~kchaos.harness.run.parallel.CellProcess`), nothing a user writes. The
cell runs :func:`~kchaos.harness.run.orchestrate.run_scenario` exactly as a sequential
batch would and leaves its :class:`~kchaos.harness.run.parallel.Outcome` in the job's
result file; its console is its stdout (the parent's ``OUT/console/LABEL.log``).
"""

from __future__ import annotations

import pickle
import sys
import traceback

from kchaos.harness.errors import KchaosError, RunInterrupted
from kchaos.harness.run.parallel import CellJob, Outcome, write_outcome


def run_cell(job: CellJob) -> Outcome:
    """Run the job's scenario; how it ended (never raises but for SystemExit)."""
    from kchaos.harness.run.orchestrate import run_scenario
    from kchaos.reports.console import make_console

    try:
        result = run_scenario(
            job.scenario,
            out=job.out,
            console=make_console(),
            command=job.command,
            prometheus=job.prometheus,
            parallel=job.parallel,
            extra=None if job.extra is None else dict(job.extra),
        )
    except (RunInterrupted, KeyboardInterrupt):
        return Outcome(RunInterrupted.exit_code, "interrupted", interrupted=True)
    except KchaosError as exc:
        print(f"{exc}", file=sys.stderr)
        return Outcome(exc.exit_code, str(exc))
    except Exception as exc:  # noqa: BLE001 - a harness bug: said, and the batch goes on
        traceback.print_exc()
        return Outcome(KchaosError.exit_code, f"{type(exc).__name__}: {exc}")
    return Outcome(result.exit_code)


def main() -> int:
    job = pickle.load(sys.stdin.buffer)
    if not isinstance(job, CellJob):
        print(f"expected a CellJob on stdin, got {type(job).__name__}", file=sys.stderr)
        return KchaosError.exit_code
    outcome = run_cell(job)
    write_outcome(job.result, outcome)
    sys.stdout.flush()
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main())
