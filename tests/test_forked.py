"""roofline/forked.py: work done by a forked child meanwhile comes back as the work's result; a child that fails is
redone in-process, so the work's own error surfaces in the parent."""

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

import roofline.forked as forked
from roofline.forked import Forked, InProcess, meanwhile

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")


def _pid_and_sum(values):
    return os.getpid(), sum(values)


def _fails_in_child(parent):
    if os.getpid() != parent:
        raise RuntimeError("child broke")
    return "parent"


def _always_fails():
    raise ValueError("bad evidence")


def _unpicklable():
    return lambda: None


def test_the_child_does_the_work():
    pid, total = Forked(_pid_and_sum, [1, 2, 3]).result()
    assert total == 6 and pid != os.getpid()


def test_a_failing_or_unsendable_child_is_redone_in_process():
    assert Forked(_fails_in_child, os.getpid()).result() == "parent"
    assert callable(Forked(_unpicklable).result())


def test_an_error_of_the_work_itself_is_raised_in_the_parent():
    with pytest.raises(ValueError, match="bad evidence"):
        Forked(_always_fails).result()


def test_meanwhile_forks_only_when_asked():
    job = meanwhile(_pid_and_sum, [4], fork=False)
    assert isinstance(job, InProcess) and job.result() == (os.getpid(), 4)


def test_release_free_memory_hands_a_freed_heap_back_and_keeps_live_objects():
    """64 MB of blocks freed below one still in use stay in the process (glibc keeps its heap) until trimmed."""
    import ctypes

    from roofline.forked import release_free_memory

    try:
        ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        pytest.skip("no malloc_trim in this C library")

    def rss_kb() -> int:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

    blocks = [bytearray(b"x" * 64_000) for _ in range(1000)]
    kept = blocks[-1]
    del blocks
    before = rss_kb()
    release_free_memory()
    assert rss_kb() < before - 30_000
    assert kept == bytearray(b"x" * 64_000)


def _own_niceness() -> int:
    return os.nice(0)


def test_a_forked_child_runs_at_the_niceness_asked_and_the_parent_keeps_its_own():
    parent = os.nice(0)
    assert Forked(_own_niceness, niceness=5).result() == min(parent + 5, 19)
    assert Forked(_own_niceness).result() == parent
    assert os.nice(0) == parent


_HEAP_OR_MAPPED = """
import ctypes, sys
from roofline.forked import reuse_freed_memory


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2
if sys.argv[1] == "reuse":
    assert reuse_freed_memory()
before = mallinfo2().hblks
block = bytearray(4 << 20)  # the trace reader's block size
print(mallinfo2().hblks - before)
"""


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="glibc >= 2.33 only")
@pytest.mark.parametrize(("mode", "mapped"), [("default", "1"), ("reuse", "0")])
def test_a_one_shot_process_takes_its_big_blocks_from_the_heap(mode, mapped):
    """By default glibc maps a 4 MiB block of its own (and unmaps it on free); after reuse_freed_memory it comes
    from the heap, where a freed one is reused without new page faults."""
    run = subprocess.run([sys.executable, "-c", _HEAP_OR_MAPPED, mode], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(Path(forked.__file__).parents[1])})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == [mapped]


def test_fork_running_exits_by_how_its_work_ended():
    from roofline.forked import fork_running

    def write(fd: int, text: bytes) -> None:
        os.write(fd, text)

    def fail() -> None:
        raise RuntimeError("child broke")

    read, write_end = os.pipe()
    pid = fork_running(write, write_end, b"done", close=(read,))
    os.close(write_end)
    assert os.waitpid(pid, 0)[1] == 0
    assert os.read(read, 16) == b"done"
    os.close(read)
    assert os.waitpid(fork_running(fail), 0)[1] >> 8 == 1


class _Held:
    """An argument whose lifetime a test watches."""


@pytest.mark.parametrize("kind", [Forked, InProcess])
def test_a_collected_result_lets_go_of_the_work_and_its_arguments(kind):
    """The caller frees what it passed once the result is in (the trace's counter and its caches): the collected
    job must not keep it alive."""
    import weakref

    held = _Held()
    watch = weakref.ref(held)
    job = kind(len, [held])
    del held
    assert job.result() == 1
    assert watch() is None
