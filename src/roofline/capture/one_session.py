"""torch.profiler runs one session a process: a second one started while another runs cancels it ("Cancelling
current trace request in order to start higher priority synchronous request"), and the first one's trace export
then crashes the process (a segmentation fault in export_chrome_trace, torch 2.7: a ProfilingContext opened inside
another's profiled steps, or RooflineAnalyzer.analyze called there). roofline's sessions claim the process here and
refuse to start beside another, with an error that says what to do.
"""

from __future__ import annotations

import torch

from roofline.errors import RooflineError

_running: list[str] = []  # the roofline sessions holding the process's profiler, by name ("ProfilingContext")


def refuse_beside(what: str, *, user_profiler: bool = True) -> None:
    """Raise if ``what`` would start beside a running session: one of roofline's, or (``user_profiler``)
    torch.profiler recording (one the user started, in its active steps)."""
    if _running or (user_profiler and torch._C._autograd._profiler_enabled()):
        holder = _running[-1] if _running else "torch.profiler session"
        raise RooflineError(f"{what} started inside a running {holder}: torch.profiler runs one session per "
                            "process and a second one cancels the first, whose trace export then crashes the "
                            "process; profile them one after the other (a ProfilingContext ends with its with "
                            "block, or its close())")


def claim(what: str, *, user_profiler: bool = True) -> None:
    """Take the process's profiler for ``what`` (give it back with ``release``), or raise (``refuse_beside``)."""
    refuse_beside(what, user_profiler=user_profiler)
    _running.append(what)


def release(what: str) -> None:
    if what in _running:
        _running.remove(what)
