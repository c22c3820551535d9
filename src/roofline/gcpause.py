"""``cyclic_gc_paused()``: Python's cycle collector off for the duration of a heavy, one-shot load or analysis.

A big trace's loading and analysis make millions of long-lived, acyclic objects (events, op records, their shape
lists), and each full collection rescans them all: measured on the 1 M-event trace, 1.3 s of an 11 s
`roofline trace`, for 5 MB more peak RSS with it off. The collector is re-enabled on exit (also when the body
raises) only if it was enabled on entry, so nested pauses compose.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
