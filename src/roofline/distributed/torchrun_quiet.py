"""torchrun (``torch.distributed.run``) for roofline's own jobs, less its noise when a worker fails: the traceback
of its ChildFailedError and the failure table (the worker's own ``roofline: error:`` line has said why), and the
OMP_NUM_THREADS banner (`profile --nproc` sets the cores' share per rank, launch.rank_threads_env; any other
job gets 1 here, the value torchrun itself would set). A root cause that printed no line of
its own (a worker killed by a signal, a crash) is told in one line."""

from __future__ import annotations

import logging
import os
import signal
import sys


def main(argv: list[str]) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    # its log line for each failed worker repeats what the worker printed, or what the line below says
    logging.getLogger("torch.distributed.elastic.multiprocessing.api").setLevel(logging.CRITICAL)
    try:
        run(parse_args(argv))
    except ChildFailedError as exc:
        rank, failure = exc.get_first_failure()
        if failure.exitcode != 2:  # 2: a worker's RooflineError, already printed as one line
            print(f"roofline: error: rank {rank} {_ended(failure.exitcode)}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - torchrun's own failure (rendezvous, a port): one line
        print(f"roofline: error: torchrun failed: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 1
    return 0


def _ended(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
