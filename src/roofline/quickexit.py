"""End a one-shot command without freeing what it built: ``keep_until_exit(obj)``, then ``finish(code)``.

After `roofline trace` on the 307 MB, 1.05 M-event trace (127,620 ops; issue 23) has written its files and printed
its summary, the process took 0.19 s more to end (0.186-0.288 over 4 runs, 2026-12-01, this project's 2-core
machine): mostly the cycle collector, re-enabled when the command returned, collecting every object of the run
(see roofline/gcpause.py ``resume``), then freeing the report and tearing down the interpreter, all for memory the
OS takes back at once anyway. Keeping the report, the collector off, and ``os._exit``: 0.04 s (0.040-0.047; the
kernel unmapping ~400 MB). mypy ends the same way (``os._exit``) for the same reason.

Only the console entry point arms it (``roofline.cli.run``); for anyone calling ``main()`` (tests, the API)
``keep_until_exit`` keeps nothing and nothing exits early. ``finish`` ends early only after a command that kept
something (so asked for it) and with no other thread (whose end a normal exit would wait for); it runs the
``atexit`` handlers (multiprocessing's, which joins any child still running; tempfile's and weakref finalizers;
logging's flush) and flushes stdout and stderr before ``os._exit``, so nothing a normal exit would do is lost but
the freeing.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any

_kept: list[Any] | None = None
_threads_left_behind = False


def arm() -> None:
    """From now on ``keep_until_exit`` keeps: the process ends with ``finish``."""
    global _kept
    if _kept is None:
        _kept = []


def armed() -> bool:
    """The process ends with ``finish`` once the command returns."""
    return _kept is not None


def keep_until_exit(obj: Any) -> None:
    """Hold ``obj`` until the process ends, so returning from its builder frees nothing (only when armed)."""
    if _kept is not None:
        _kept.append(obj)


def leave_threads_behind() -> None:
    """End the process without waiting for its other threads: a profiled script's, which run on after roofline
    stopped the script (an endless loop would keep the finished command from ever exiting). Only when armed."""
    global _threads_left_behind
    _threads_left_behind = True


def finish(code: int) -> None:
    """End the process with ``code``: early (``exit_now``) after a command that kept its result or left threads
    behind, else ``sys.exit``."""
    if (_kept and threading.active_count() == 1) or (_threads_left_behind and _kept is not None):
        exit_now(code)
    sys.exit(code)


def exit_now(code: int) -> None:
    """Exit with ``code`` as ``sys.exit`` would, less freeing the objects and tearing down the interpreter."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            code = code or 120  # what Python's own exit does when it cannot flush stdout (a closed pipe)
    os._exit(code)
