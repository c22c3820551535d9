"""Work a forked child does while this process goes on, for one-shot commands on big reports (the roofline PNG, the
doctor, a trace's memory replay): ``meanwhile(work, *args)`` starts it, ``.result()`` collects it.

The child shares this process's memory copy-on-write (its inputs are never pickled) and sends its result back
pickled. Fork is used only where it is available and safe: no other thread, whose locks the child would inherit.
Whatever goes wrong in the child (it dies, raises, cannot send), ``result()`` does the work in-process instead, so
errors surface exactly as they would without the fork. The inputs must not change meanwhile in anything the work
reads.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any


def can_fork() -> bool:
    """Fork is available and safe here: no other thread, and not a daemonic pool worker (which may not start one)."""
    return ("fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
            and not multiprocessing.current_process().daemon)


def release_free_memory() -> None:
    """Hand the memory this process has freed back to the OS, where the C library can (glibc's ``malloc_trim``).

    After a pass over a million-event trace, glibc keeps most of what its temporaries (numpy arrays, big lists and
    dicts) occupied: the process's RSS stays at the pass's peak, later allocations stack on top, and a forked child
    starts from it. A no-op where there is no ``malloc_trim`` (macOS, musl, Windows)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


# glibc's mallopt parameters (malloc.h): allocations up to this size come from the heap rather than a mapping of
# their own, and free() no longer trims the heap's top by itself (release_free_memory still does, where asked).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
ONE_SHOT_MMAP_THRESHOLD = 32 << 20  # glibc's own ceiling for its dynamic threshold on 64-bit
ONE_SHOT_TRIM_THRESHOLD = 1 << 30


def reuse_freed_memory() -> bool:
    """For a one-shot command on a big trace: freed memory stays in this process for its next allocations,
    instead of going back to the OS after every large free and being faulted in again page by page.

    By default glibc gives each allocation above its (adaptive) threshold, 128 KiB to 32 MiB, a mapping of its
    own that free() unmaps, and trims the heap's top past twice that: the reader's 4 MiB blocks, numpy's column
    temporaries and big lists are then mapped, zeroed and faulted in anew each time. On issue 23's 1 M-event trace
    that was 33,000 of the tail reader's 72,000 page faults and 23,000 of the main process's 309,000 (VmHWM the
    same: 413 and 420 MiB). The points that hand memory back before a peak or a fork (``release_free_memory``)
    still do. Process-wide and inherited by forked children: only for a process that ends with the command (the
    console entry, roofline/quickexit.py). False where there is no glibc mallopt."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, ONE_SHOT_MMAP_THRESHOLD)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, ONE_SHOT_TRIM_THRESHOLD))


def _malloc_trim():
    global _TRIM
    if _TRIM is False:
        try:
            _TRIM = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _TRIM = None
    return _TRIM


_TRIM: Any = False


def fork_running(work: Callable[..., Any], *args: Any, close: tuple[int, ...] = ()) -> int:
    """A forked child that closes the descriptors ``close`` (the parent's ends of its pipes), runs ``work(*args)``
    and exits, 0 if it returned and 1 if it raised, without running this process's exit handlers; the child's pid.
    For a child that talks over pipes of its own rather than sending back a result (``Forked``)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            for fd in close:
                os.close(fd)
            work(*args)
            status = 0
        finally:
            os._exit(status)
    return pid


class Forked:
    """``work(*args)`` started now in a forked child (after ``release_free_memory``: the child starts smaller).

    ``niceness``: added to the child's nice value, for work nobody waits on until the end (a big report's PNG):
    on two cores shared by the parent and several children it then yields to the ones on the critical path."""

    def __init__(self, work: Callable[..., Any], *args: Any, niceness: int = 0) -> None:
        self._work, self._args = work, args
        release_free_memory()
        sys.stdout.flush()
        sys.stderr.flush()
        context = multiprocessing.get_context("fork")
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_run_in_child, args=(work, args, send, niceness), daemon=True)
        self._process.start()
        send.close()

    def result(self) -> Any:
        """The child's result (its work's, done here if the child failed). The work and its arguments are let go
        of then: they may hold much (a counter's caches) that the caller means to free."""
        try:
            sent = self._receive.recv()
        except (EOFError, OSError):
            sent = None
        finally:
            self._receive.close()
            self._process.join()
        work, args, self._work, self._args = self._work, self._args, None, ()
        if sent is None or self._process.exitcode != 0:
            return work(*args)
        return sent[0]


class InProcess:
    """``work(*args)`` done here, when its result is asked for."""

    def __init__(self, work: Callable[..., Any], *args: Any) -> None:
        self._work, self._args = work, args

    def result(self) -> Any:
        work, args, self._work, self._args = self._work, self._args, None, ()
        return work(*args)


class Ready:
    """A result already in hand, collected like a ``Forked`` one."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self) -> Any:
        return self._value


class Streamed:
    """``work(*args, emit)`` started now in a forked child, each item it emits received here in order by iterating
    (pickled through a pipe as it comes, one pickler for all: an object sent twice arrives as one). For work whose
    parts this process can use as they come, rather than waiting for the whole.

    The iteration ends when the work has returned (``complete`` True) or the child stopped early (it raised or died:
    ``complete`` False, the items received before are whole): the caller does the rest itself. Leaving the
    iteration early stops the child."""

    def __init__(self, work: Callable[..., Any], *args: Any) -> None:
        release_free_memory()
        sys.stdout.flush()
        sys.stderr.flush()
        read_fd, write_fd = os.pipe()
        _widen_pipe(write_fd)
        self._pid = fork_running(_stream_from_child, work, args, write_fd, close=(read_fd,))
        os.close(write_fd)
        self._file = os.fdopen(read_fd, "rb", buffering=1 << 16)
        self.complete = False

    def __iter__(self) -> Iterator[Any]:
        unpickler = pickle.Unpickler(self._file)
        try:
            while True:
                item = unpickler.load()
                if item is None:
                    self.complete = True
                    return
                yield item[0]
        except (EOFError, OSError, pickle.UnpicklingError):
            return
        finally:
            self._file.close()  # a child still writing gets a broken pipe and exits
            os.waitpid(self._pid, 0)


def _stream_from_child(work: Callable[..., Any], args: tuple, fd: int) -> None:
    with os.fdopen(fd, "wb", buffering=1 << 16) as out:
        pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)

        def emit(item: Any) -> None:
            pickler.dump((item,))
            out.flush()

        work(*args, emit)
        pickler.dump(None)


_F_SETPIPE_SZ = 1031  # Linux fcntl.h


def _widen_pipe(fd: int, size: int = 1 << 20) -> None:
    """Let a pipe hold ``size`` bytes (Linux; 64 KiB by default) so a streaming child rarely waits for the reader."""
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, size)
    except (ImportError, OSError):
        pass


def meanwhile(work: Callable[..., Any], *args: Any, fork: bool = True) -> Forked | InProcess:
    """``work(*args)`` in a forked child where ``fork`` is asked and it is safe, else in-process when collected."""
    return Forked(work, *args) if fork and can_fork() else InProcess(work, *args)


def _run_in_child(work: Callable[..., Any], args: tuple, send, niceness: int = 0) -> None:
    if niceness:
        try:
            os.nice(niceness)
        except OSError:
            pass
    try:
        result = (work(*args),)
    except BaseException:  # noqa: BLE001 -- the parent does the work again and raises the error itself
        result = None
    send.send(result)
    send.close()
