"""load_trace(split=True): a plain or gzipped JSON trace read in two byte ranges, the second by a forked child, gives
the same Trace as one read; a child that fails, or a trace cut short in its half, falls back to reading it
in-process."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import msgspec
import pytest

from roofline.capture import kineto
from roofline.capture import event_stream
from roofline.capture.event_stream import AT_MIDDLE, EventStream, split_offset
from roofline.capture.kineto import _Event, load_trace

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "h200" / "llama_tiny_fwd_fp16_b4_s512.json.gz"
_LISTS = ("ops", "kernels", "syncs", "memory", "launches", "host_calls", "steps")
_FIELDS = ("metadata", "warnings", "cut", "events_read", "has_gpu", "has_shapes", "has_stack", "has_modules",
           "skipped_events", "categories", "device_name", "compute_capability")


@pytest.fixture(scope="module")
def plain_trace(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("split") / "trace.json"
    path.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    return path


@pytest.fixture
def split_small(monkeypatch):
    """Split from any size; record whether the child's half was taken."""
    monkeypatch.setattr(kineto, "SPLIT_MIN_BYTES", 0)
    # a thread an earlier test left (torch.compile's tqdm monitor) would turn the split off for the whole module:
    # the split itself is what these tests check (test_no_split_while_another_thread_runs checks that rule)
    monkeypatch.setattr(kineto.threading, "active_count", lambda: 1)
    taken = []
    absorb = kineto._TailReader.absorb_into

    def spy(self, builder):
        taken.append(absorb(self, builder))
        return taken[-1]

    monkeypatch.setattr(kineto._TailReader, "absorb_into", spy)
    return taken


def _same(a, b) -> None:
    for name in _LISTS:
        left, right = getattr(a, name), getattr(b, name)
        assert len(left) == len(right), name
        assert [msgspec.structs.asdict(x) for x in left] == [msgspec.structs.asdict(y) for y in right], name
    for name in _FIELDS:
        assert getattr(a, name) == getattr(b, name), name


def test_split_offset_is_an_event_start(plain_trace):
    offset = split_offset(plain_trace)
    data = plain_trace.read_bytes()
    assert offset is not None and len(data) // 2 <= offset < len(data)
    assert data[offset - 2:offset] == b"},"
    before = [e for chunk in EventStream(plain_trace, _Event, stop=offset) for e in chunk]
    after = [e for chunk in EventStream(plain_trace, _Event, start=offset) for e in chunk]
    whole = [e for chunk in EventStream(plain_trace, _Event) for e in chunk]
    assert len(before) > 1000 and len(after) > 1000
    assert before + after == whole


def test_split_load_equals_one_read(plain_trace, split_small):
    split = load_trace(plain_trace, split=True)
    assert split_small == [True]
    one = load_trace(plain_trace)
    _same(split, one)
    # shape lists stay shared between ops as in one read, across the two halves
    assert len({id(op.input_dims) for op in split.ops}) == len({id(op.input_dims) for op in one.ops})


def test_a_failing_child_falls_back_to_one_process(plain_trace, split_small, monkeypatch):
    def broken(path, offset, out):
        out.write(b"\x05\x00")
        raise RuntimeError("the child fails part-way")

    monkeypatch.setattr(kineto, "_send_tail", broken)
    _same(load_trace(plain_trace, split=True), load_trace(plain_trace))
    assert split_small == [False]


def test_no_room_for_the_childs_frames_reads_in_one_process(plain_trace, split_small, monkeypatch):
    """The child hands its frames back in a temporary file: where none can be made (a full or read-only temporary
    directory), the trace is read in one process, and read whole."""
    def no_file(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(kineto.tempfile, "TemporaryFile", no_file)
    _same(load_trace(plain_trace, split=True), load_trace(plain_trace))
    assert split_small == []  # no child was started


def test_a_trace_cut_in_the_second_half_says_so_as_one_read_does(plain_trace, split_small, tmp_path):
    cut = tmp_path / "cut.json"
    data = plain_trace.read_bytes()
    cut.write_bytes(data[: len(data) * 9 // 10])
    split = load_trace(cut, split=True)
    assert split_small == [False]
    one = load_trace(cut)
    assert split.cut and any("ends early" in w for w in split.warnings)
    _same(split, one)


def test_small_traces_are_read_in_one_process(tmp_path, monkeypatch):
    copy = tmp_path / "t.json.gz"
    shutil.copy(FIXTURE, copy)
    assert split_offset(copy) is None  # a gzipped trace's middle is found while decompressing
    assert kineto._TailReader.start(copy) is None


@pytest.fixture(scope="module")
def gz_trace(plain_trace, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("split_gz") / "trace.json.gz"
    path.write_bytes(gzip.compress(plain_trace.read_bytes(), compresslevel=1))
    return path


def test_a_gzipped_traces_two_halves_meet_at_one_event_start(gz_trace, plain_trace):
    """Each process decompresses to the middle and finds the boundary there itself: the same one."""
    head, tail = EventStream(gz_trace, _Event, stop=AT_MIDDLE), EventStream(gz_trace, _Event, start=AT_MIDDLE)
    before, after = [e for chunk in head for e in chunk], [e for chunk in tail for e in chunk]
    whole = [e for chunk in EventStream(plain_trace, _Event) for e in chunk]
    data = plain_trace.read_bytes()
    assert head.split_point == tail.split_point and len(data) // 2 <= head.split_point < len(data)
    assert data[head.split_point - 2:head.split_point] == b"},"
    assert len(before) > 1000 and len(after) > 1000 and before + after == whole


def test_a_gzipped_split_load_equals_one_read(gz_trace, plain_trace, split_small):
    split = load_trace(gz_trace, split=True)
    assert split_small == [True]
    _same(split, load_trace(gz_trace))
    _same(split, load_trace(plain_trace))


def test_a_gzipped_trace_of_two_members_splits_too(plain_trace, split_small, tmp_path):
    data = plain_trace.read_bytes()
    two = tmp_path / "two.json.gz"
    two.write_bytes(gzip.compress(data[:len(data) // 3]) + gzip.compress(data[len(data) // 3:]))
    _same(load_trace(two, split=True), load_trace(plain_trace))
    assert split_small == [True]


def test_a_gzipped_trace_cut_in_the_second_half_says_so_as_one_read_does(plain_trace, split_small, tmp_path):
    cut = tmp_path / "cut.json.gz"
    whole = gzip.compress(plain_trace.read_bytes())
    cut.write_bytes(whole[: len(whole) * 9 // 10])
    split = load_trace(cut, split=True)
    assert True not in split_small  # the trailer's size is garbage in a cut file: no half, or a refused one
    assert split.cut and any("ends early" in w for w in split.warnings)
    _same(split, load_trace(cut))


def test_no_event_boundary_near_a_gzipped_middle_reads_it_in_one_process(split_small, tmp_path, monkeypatch):
    """A window that falls inside one long event (a 64 KB string argument here) has no boundary: the head reads
    on to the end and the child's read is dropped."""
    import json

    events = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5,
               "args": {}} for i in range(200)]
    events[100]["args"] = {"note": "x" * 65536}
    path = tmp_path / "long_event.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    monkeypatch.setattr(event_stream, "SPLIT_WINDOW", 1024)
    head = EventStream(path, _Event, stop=AT_MIDDLE)
    assert sum(map(len, head)) == 200 and head.split_point is None
    split = load_trace(path, split=True)
    assert split_small == []  # never absorbed: abandoned
    _same(split, load_trace(path))


def test_a_failure_in_the_first_half_stops_and_reaps_the_child(plain_trace, split_small, monkeypatch):
    started = []
    start = kineto._TailReader.start.__func__

    def spy(cls, path):
        started.append(start(cls, path))
        return started[-1]

    def broken(builder, stream):
        raise RuntimeError("the first half fails")

    monkeypatch.setattr(kineto._TailReader, "start", classmethod(spy))
    monkeypatch.setattr(kineto, "_read", broken)
    with pytest.raises(RuntimeError, match="first half"):
        load_trace(plain_trace, split=True)
    assert started and started[0] is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(started[0]._pid, os.WNOHANG)  # already reaped


def test_no_split_while_another_thread_runs(plain_trace, monkeypatch):
    """Forking a process that runs other threads can copy a lock one of them holds: the child's read could hang."""
    import threading

    monkeypatch.setattr(kineto, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(kineto, "_usable_cpus", lambda: 2)
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, daemon=True)
    worker.start()
    try:
        assert kineto._TailReader.start(plain_trace) is None
    finally:
        stop.set()
        worker.join()


def test_the_gzip_trailer_is_read_only_where_it_can_be_one(plain_trace, tmp_path):
    """One reader of the recorded JSON size for the split and for the large-trace check (render/outputs.py): the
    size for a gzip file, None for a plain one or where the last bytes cannot be a trailer (a cut file's)."""
    from roofline.capture.event_stream import gzip_json_size
    from roofline.render.outputs import uncompressed_size

    data = plain_trace.read_bytes()
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(data))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(data)[:-4] + b"\xff\xff\xff\x7f")  # 2 GiB from a few hundred KB
    assert gzip_json_size(gz) == len(data) == uncompressed_size(gz)
    assert gzip_json_size(plain_trace) is None and uncompressed_size(plain_trace) == len(data)
    assert gzip_json_size(cut) is None and uncompressed_size(cut) == cut.stat().st_size


def test_events_read_is_called_once_after_the_read_and_before_the_events_are_ordered(plain_trace, split_small,
                                                                                     monkeypatch):
    """The PNG drawer's warm-up starts there (cli/trace.py): once this process has read its half, while it alone
    puts the events in order, not after the whole load as before, when the report's own children were starting."""
    calls = []
    finish = kineto._TraceBuilder.finish

    def ordered(self):
        calls.append("finish")
        return finish(self)

    monkeypatch.setattr(kineto._TraceBuilder, "finish", ordered)
    trace = load_trace(plain_trace, split=True, events_read=lambda: calls.append("read"))
    assert calls == ["read", "finish"] and split_small == [True] and trace.ops
    calls.clear()
    load_trace(plain_trace, events_read=lambda: calls.append("read"))
    assert calls == ["read", "finish"]


def test_a_failing_child_of_a_gzipped_trace_falls_back_to_one_process(gz_trace, plain_trace, split_small,
                                                                       monkeypatch):
    """The parent then decompresses the second half itself, from the boundary its own half ended at."""
    def broken(path, offset, out):
        out.write(b"\x05\x00")
        raise RuntimeError("the child fails part-way")

    monkeypatch.setattr(kineto, "_send_tail", broken)
    _same(load_trace(gz_trace, split=True), load_trace(plain_trace))
    assert split_small == [False]


def test_a_gzipped_head_decompresses_no_further_than_the_window_past_the_middle(gz_trace, monkeypatch):
    """The head's read stops once the window past the middle is held: the second half of a large trace is the
    child's to decompress, not held in the parent as well."""
    drawn = []
    gunzip = EventStream._gunzip

    def counted(self, fh, data):
        for block in gunzip(self, fh, data):
            drawn.append(len(block))
            yield block

    monkeypatch.setattr(EventStream, "_gunzip", counted)
    head = EventStream(gz_trace, _Event, stop=AT_MIDDLE, block_bytes=1 << 16)
    for _ in head:
        pass
    middle = int(event_stream.gzip_json_size(gz_trace) * event_stream.GZIP_HEAD_SHARE)
    assert head.split_point is not None
    assert sum(drawn) <= middle + event_stream.SPLIT_WINDOW + (1 << 17) < event_stream.gzip_json_size(gz_trace)
