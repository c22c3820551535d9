"""End a one-shot command without freeing what it built: ``keep_until_exit(obj)`` and ``exit_now(code)``.

After `roofline trace` on the 307 MB, 1.05 M-event trace (127,620 ops) has written its files and printed its
summary, freeing the report's object graph when the command returns took 0.14-0.18 s and the interpreter's own
teardown another ~0.07 s (2026-12-01, this project's 2-core machine): a quarter of a second spent on memory the OS
takes back at once anyway. mypy ends the same way (``os._exit``) for the same reason.

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


def arm() -> None:
    """From now on ``keep_until_exit`` keeps: the process will end with ``exit_now``."""
    global _kept
    if _kept is None:
        _kept = []


def armed() -> bool:
    """The process ends with ``exit_now`` once the command returns."""
    return _kept is not None


def keep_until_exit(obj: Any) -> None:
    """Hold ``obj`` until the process ends, so returning from its builder frees nothing (only when armed)."""
    if _kept is not None:
        _kept.append(obj)


def finish(code: int) -> None:
    """End the process with ``code``: early (``exit_now``) after a command that kept its result, else ``sys.exit``."""
    if _kept and threading.active_count() == 1:
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
