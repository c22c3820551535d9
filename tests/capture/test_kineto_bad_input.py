"""Bad input never escapes load_trace/attribute as anything but RooflineError (or a Trace with warnings)."""

from __future__ import annotations

import gzip
import os
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline.analyze.attribution import attribute
from roofline.capture.kineto import load_trace
from roofline.capture.trace_model import Trace
from roofline.errors import RooflineError

H200 = Path(__file__).resolve().parents[1] / "data" / "h200"


def _small_valid_trace() -> dict:
    def x(cat, name, ts, dur, pid=1, tid=1, **args):
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}

    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0}],
        "traceEvents": [
            x("user_annotation", "ProfilerStep#1", 0.0, 100.0, **{"External id": 1}),
            x("cpu_op", "aten::linear", 5.0, 40.0, **{"External id": 2, "Input Dims": [[4, 8], [8, 8], [8]],
                                                      "Input type": ["float", "float", "float"]}),
            x("cpu_op", "aten::addmm", 10.0, 20.0, **{"External id": 3, "Input Dims": [[8], [4, 8], [8, 8]]}),
            x("cuda_runtime", "cudaLaunchKernel", 12.0, 3.0, correlation=7, **{"External id": 3}),
            x("kernel", "gemm", 20.0, 9.5, pid=0, tid=7, correlation=7, device=0, stream=7, **{"External id": 3}),
            x("gpu_memcpy", "Memcpy HtoD", 31.0, 1.0, pid=0, tid=7, correlation=8, bytes=128),
            x("cuda_sync", "Stream Sync", 50.0, 2.0, pid=0, tid=7, correlation=9, **{"External id": 2}),
            x("python_function", "model.py(12): forward", 1.0, 60.0),
            x("python_function", "nn.Module: Linear_0", 2.0, 50.0),
            {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 11.0,
             "args": {"Bytes": 512, "Addr": 1, "Total Allocated": 512, "Total Reserved": 2048, "Device Type": 1,
                      "Device Id": 0}},
            {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 12.0, "cat": "ac2g", "name": "ac2g"},
            {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "python3"}},
        ],
        "traceName": "small",
    }


def _load(path) -> Trace | None:
    """Load and attribute; RooflineError is an accepted outcome, anything else fails the test."""
    try:
        trace = load_trace(path)
    except RooflineError as exc:
        message = str(exc)
        assert message and "\n" not in message
        return None
    attribute(trace)
    return trace


def test_small_valid_trace_is_read_completely(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(_small_valid_trace()))
    trace = _load(path)
    assert trace is not None and trace.warnings == []
    names = [op.name for op in trace.ops]
    assert names == ["ProfilerStep#1", "aten::linear", "aten::addmm"]
    assert trace.ops[2].parent == 1 and trace.ops[2].module == "Linear_0" and trace.ops[2].source == "model.py:12"
    assert trace.kernels[0].op == 2 and trace.kernels[1].op == -1
    assert trace.syncs[0].op == 1 and trace.memory[0].op == 2
    assert trace.metadata["traceName"] == "small" and trace.device_name == "NVIDIA H200"


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (b"[1, 2, 3]", "no profiler events"),
        (b"[]", "no profiler events"),
        (b'{"schemaVersion": 1}', "no traceEvents"),
        (b'{"traceEvents": 5}', "not a list"),
        (b'{"traceEvents": {"a": 1}}', "not a list"),
        (b'{"traceEvents": []}', "no profiler events"),
        (b'{"traceEvents": [{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "ts": 1, "dur": 2}]}',
         "the profiler recorded nothing"),
        (b'{"traceEvents": [{"ph": "X", "cat": "TraceMe", "name": "step", "ts": 1, "dur": 9}, '
         b'{"ph": "X", "cat": "Op", "name": "fusion.3", "ts": 2, "dur": 3}]}',
         "only events of categories Op, TraceMe: is it another tool's trace"),
        (b'{"traceEvents": [' + b", ".join(b'{"ph": "X", "cat": "c%d", "name": "n", "ts": 1, "dur": 2}' % i
                                            for i in range(7)) + b"]}",
         "only events of categories c0, c1, c2, c3, c4 and 2 more: is it another tool's trace"),
        (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op"}]}', "no usable ts/dur"),
        (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": "x", "dur": 1}]}', "no usable ts/dur"),
        (b"42", "expected a JSON object"),
        (b'"text"', "expected a JSON object"),
        (b"\x00\xff\xfe garbage", "not valid JSON"),
        (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 1, ', "not valid JSON"),
        (b"\x1f\x8b\x08\x00corrupt", "gzip"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
        (b'{"traceEvents": [{"args": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]}", "not valid JSON"),
    ],
)
def test_bad_files_raise_one_line_errors(tmp_path, content, fragment):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(RooflineError) as info:
        load_trace(path)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(RooflineError, match="not found"):
        load_trace(tmp_path / "nope.json")
    with pytest.raises(RooflineError, match="directory"):
        load_trace(tmp_path)


def test_events_of_the_wrong_type_are_skipped_with_a_warning(tmp_path):
    data = _small_valid_trace()
    data["traceEvents"] += [7, "x", None, [1], {"ph": "X", "cat": "cpu_op", "name": 5, "ts": 1, "dur": 1},
                            {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -3, "args": {}},
                            {"ph": "X", "cat": "cpu_op", "name": "aten::x", "ts": 1, "dur": 1, "args": [1]}]
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(data))
    trace = _load(path)
    assert [op.name for op in trace.ops] == ["ProfilerStep#1", "aten::linear", "aten::addmm"]
    assert any("6 malformed events skipped" in w for w in trace.warnings)
    assert any("ts/dur" in w for w in trace.warnings)


def test_truncated_fixture_keeps_the_events_before_the_cut(tmp_path):
    raw = gzip.decompress((H200 / "bad_syncs_fwd_fp32.json.gz").read_bytes())
    path = tmp_path / "cut.json"
    path.write_bytes(raw[: len(raw) // 8])
    trace = _load(path)
    assert trace is not None and 0 < len(trace.ops) < 402
    assert any("ends early" in w for w in trace.warnings)


def test_truncated_gzip_keeps_the_events_before_the_cut(tmp_path):
    data = (H200 / "bad_syncs_fwd_fp32.json.gz").read_bytes()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 8])
    trace = _load(path)
    assert trace is not None and 0 < len(trace.ops) < 402
    assert any("gzip stream ends early" in w for w in trace.warnings)


def test_a_cut_gzip_keeps_every_event_its_bytes_hold_whatever_the_block_size(tmp_path):
    """At the cut, zlib may still hold output it decoded past the last block it gave (each call's output is capped
    at the block size): those bytes can end an event, which must be read as a one-block read reads it. The cuts
    tried are those where zlib holds such bytes (found with zlib itself)."""
    import zlib

    from roofline.capture.event_stream import EventStream
    from roofline.capture.kineto import _Event

    data = gzip.compress(gzip.decompress((H200 / "llama_tiny_fwd_fp16_b4_s512.json.gz").read_bytes()), 9)
    held = []
    for cut in range(4_000, 8_000):
        inflater, rest = zlib.decompressobj(wbits=31), data[:cut]
        while rest:
            inflater.decompress(rest, 512)
            rest = inflater.unconsumed_tail
        if b"}," in inflater.flush():
            held.append(cut)
    assert held
    path = tmp_path / "cut.json.gz"
    for cut in held[:5]:
        path.write_bytes(data[:cut])
        small, whole = EventStream(path, _Event, block_bytes=512), EventStream(path, _Event)
        read = [[(e.name, e.ts) for chunk in stream for e in chunk] for stream in (small, whole)]
        assert read[0] == read[1] and small.cut and whole.cut, cut


def test_gzip_cut_in_its_header_is_an_error(tmp_path):
    path = tmp_path / "cut.json.gz"
    path.write_bytes((H200 / "bad_syncs_fwd_fp32.json.gz").read_bytes()[:15])
    with pytest.raises(RooflineError):
        load_trace(path)


def test_trace_without_gpu_events_or_shapes_is_partial_with_warnings(tmp_path):
    data = _small_valid_trace()
    data["traceEvents"] = [e for e in data["traceEvents"] if e.get("pid") != 0]
    for e in data["traceEvents"]:
        if isinstance(e.get("args"), dict):
            e["args"].pop("Input Dims", None)
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(data))
    trace = _load(path)
    assert not trace.has_gpu and not trace.has_shapes
    assert any("no GPU kernels" in w for w in trace.warnings)
    assert any("record_shapes" in w for w in trace.warnings)
    assert trace.attribution.share is None


_json_leaf = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8)
_json = st.recursive(_json_leaf, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
_KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "External id", "correlation", "Input Dims",
         "Bytes", "traceEvents", "deviceProperties"]


def _mutate(node, path_choice: int, key: str, value):
    """Replace or insert ``key: value`` in one dict picked by ``path_choice`` among all dicts of the tree."""
    dicts = []

    def walk(n):
        if isinstance(n, dict):
            dicts.append(n)
            for v in n.values():
                walk(v)
        elif isinstance(n, list):
            for v in n:
                walk(v)

    walk(node)
    target = dicts[path_choice % len(dicts)]
    if value is _DELETE:
        target.pop(key, None)
    else:
        target[key] = value
    return node


_DELETE = object()
# Fewer examples in mutation runs (benchmarks/mutation.py sets ROOFLINE_FUZZ_EXAMPLES): each mutant reruns this file.
_SETTINGS = settings(max_examples=min(150, int(os.environ.get("ROOFLINE_FUZZ_EXAMPLES", 150))), deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(mutations=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(_KEYS), _json | st.just(_DELETE)),
                          min_size=1, max_size=6))
def test_mutated_traces_only_raise_roofline_error(tmp_path, mutations):
    data = _small_valid_trace()
    for choice, key, value in mutations:
        data = _mutate(data, choice, key, value)
    path = tmp_path / "mutated.json"
    path.write_text(json.dumps(data))
    _load(path)


@_SETTINGS
@given(data=_json)
def test_random_json_only_raises_roofline_error(tmp_path, data):
    path = tmp_path / "random.json"
    path.write_text(json.dumps(data))
    _load(path)
    path.write_text(json.dumps({"traceEvents": data}))
    _load(path)
    path.write_text(json.dumps({"traceEvents": [data]}))
    _load(path)


@_SETTINGS
@given(cut=st.integers(0, 10**6), flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4),
       gz=st.booleans())
def test_corrupted_bytes_only_raise_roofline_error(tmp_path, cut, flips, gz):
    raw = bytearray(json.dumps(_small_valid_trace()).encode())
    for pos, byte in flips:
        raw[pos % len(raw)] = byte
    blob = gzip.compress(bytes(raw)) if gz else bytes(raw)
    blob = blob[: max(1, cut % (len(blob) + 1))]
    path = tmp_path / ("c.json.gz" if gz else "c.json")
    path.write_bytes(blob)
    _load(path)


@pytest.mark.parametrize("gz", [False, True])
def test_a_trace_saved_with_a_utf8_byte_order_mark_is_read(tmp_path, gz):
    raw = b"\xef\xbb\xbf" + json.dumps(_small_valid_trace(), indent=2).encode()
    path = tmp_path / ("bom.json.gz" if gz else "bom.json")
    path.write_bytes(gzip.compress(raw) if gz else raw)
    trace = _load(path)
    assert trace is not None and [op.name for op in trace.ops] == ["ProfilerStep#1", "aten::linear", "aten::addmm"]
    assert trace.metadata["traceName"] == "small"


def test_a_json_file_with_a_byte_order_mark_that_is_no_trace_is_named_as_such(tmp_path):
    # the head was decoded with its mark in front: "not valid JSON ... invalid character (byte 0)"
    path = tmp_path / "report.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"schema_version": 2, "ops": []}).encode())
    with pytest.raises(RooflineError, match="is not a Chrome/Kineto trace: it has no traceEvents"):
        load_trace(path)


def test_a_trace_with_ustar_at_byte_257_is_no_tar_archive(tmp_path):
    # where a tar header says "ustar"; it was refused as "a tar archive"
    trace = {"traceName": "x" * (257 - len('{"traceName": "')) + "ustar",
             **{k: v for k, v in _small_valid_trace().items() if k != "traceName"}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    assert path.read_bytes()[257:262] == b"ustar"
    assert [op.name for op in _load(path).ops] == ["ProfilerStep#1", "aten::linear", "aten::addmm"]
    from roofline.io import not_json_head  # what the report, diff and ncu readers ask first

    assert not_json_head(path.read_bytes()) is None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_file_read_once_may_come_from_a_pipe(tmp_path):
    # an ncu CSV is read once: `roofline trace t.json --ncu <(zcat ncu.csv.gz)` worked and must keep working
    from roofline.io import read_maybe_gzip

    assert read_maybe_gzip(_fifo_fed(tmp_path, b"a,b\n1,2\n"), "ncu CSV") == b"a,b\n1,2\n"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_a_trace_saved_as_utf16_or_utf32_names_its_encoding(tmp_path, encoding):
    path = tmp_path / "wide.json"
    path.write_bytes(json.dumps(_small_valid_trace()).encode(encoding))
    with pytest.raises(RooflineError, match=f"{encoding[:6].upper()}.*re-save it as UTF-8"):
        load_trace(path)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32-le"])
def test_a_report_saved_as_utf16_or_utf32_names_its_encoding(tmp_path, encoding):
    # Report.load (diff, doctor, view) said "invalid character (byte 0)"
    from roofline.report import Report

    path = tmp_path / "report.json"
    path.write_bytes(json.dumps({"schema_version": 2, "ops": []}).encode(encoding))
    with pytest.raises(RooflineError, match=f"{encoding[:6].upper()} text .*re-save it as UTF-8"):
        Report.load(path)


def test_a_folder_of_traces_names_them(tmp_path):
    """tensorboard_trace_handler's log folder given for its trace: say which files to give instead (the rank
    traces of a job together: their worker names differ)."""
    for name in ("vm_1.2.pt.trace.json.gz", "vm_2.3.pt.trace.json.gz", "notes.txt"):
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(RooflineError, match=r"is a directory holding 2 torch.profiler traces: give one .*"
                                            r"vm_1.2.pt.trace.json.gz.*rank traces together: `roofline trace "
                                            r".*/\*.pt.trace.json.gz`"):
        load_trace(tmp_path)


def test_a_folder_of_one_process_cycles_is_not_offered_as_ranks(tmp_path):
    """The files of one process (one worker name, a file per profiler cycle) are no distributed job: merged they
    are refused, so the hint offers the last cycle's file, not the rank glob."""
    for name in ("vm_1.1733.pt.trace.json", "vm_1.1734.pt.trace.json", "vm_1.1735.pt.trace.json"):
        (tmp_path / name).write_bytes(b"")
    with pytest.raises(RooflineError) as error:
        load_trace(tmp_path)
    message = str(error.value)
    assert "3 torch.profiler traces of one process (vm_1: a trace per profiler cycle)" in message
    assert message.endswith("vm_1.1735.pt.trace.json`") and "*" not in message


def _fifo_fed(tmp_path, data: bytes) -> Path:
    """A named pipe that a daemon thread writes ``data`` into once it is opened (as `<(zcat t.json.gz)` is)."""
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(data)

    threading.Thread(target=feed, daemon=True).start()
    return fifo


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_pipe_is_refused_with_what_to_do_not_a_traceback(tmp_path):
    """`roofline trace <(zcat t.json.gz)` ended in io.UnsupportedOperation (a traceback): the reader seeks, and the
    trace is read more than once (again for trace.json.gz)."""
    from roofline.report import Report

    fifo = _fifo_fed(tmp_path, gzip.compress(json.dumps(_small_valid_trace()).encode()))
    for load in (load_trace, Report.load):
        with pytest.raises(RooflineError, match="is a pipe, not a file: .*save it to a file first"):
            load(fifo)
    assert not Report.is_report_file(fifo)


@pytest.mark.parametrize("bare_list", [True, False])
def test_a_legacy_autograd_profiler_trace_is_named_as_such(tmp_path, bare_list):
    """torch 1.7 and older's autograd profiler wrote events without categories in processes 'CPU functions' and
    'CUDA functions': it was asked whether it was JAX's or TensorFlow's trace (or told nothing was recorded)."""
    events = []
    for i in range(3):
        events += [{"name": "aten::mm", "ph": "X", "ts": 100.0 * i, "dur": 50.0, "tid": 1, "pid": "CPU functions",
                    "args": {}},
                   {"name": "aten::mm", "ph": "s", "ts": 100.0 * i, "tid": 1, "pid": "CPU functions", "id": i,
                    "cat": "cpu_to_cuda", "args": {}},
                   {"name": "volta_sgemm_128x64_nn", "ph": "X", "ts": 100.0 * i + 60, "dur": 30.0, "tid": 0,
                    "pid": "CUDA functions", "args": {}}]
    path = tmp_path / "legacy.json"
    path.write_text(json.dumps(events if bare_list else {"traceEvents": events}))
    with pytest.raises(RooflineError, match=r"written by the legacy autograd profiler \(torch 1.7 and older"):
        load_trace(path)


def _two_ranks_in_one_file(offset_ids: int) -> dict:
    """The H200 fixture with a second rank's copy in the same file: another process (pid + 1) on GPU 1, its kernels
    twice as long, its correlation and External ids moved by ``offset_ids`` (0: each process counts its own from the
    start, as two ranks' traces concatenated into one file hold them)."""
    fixture = Path(__file__).resolve().parents[1] / "data" / "h200" / "bad_syncs_fwd_fp32.json.gz"
    trace = json.loads(gzip.decompress(fixture.read_bytes()))
    cpu = {e["pid"] for e in trace["traceEvents"] if e.get("cat") == "cpu_op"}
    gpu = {e["pid"] for e in trace["traceEvents"] if e.get("cat") == "kernel"}
    second = []
    for event in json.loads(json.dumps(trace["traceEvents"])):
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        if event.get("pid") in cpu or event.get("pid") in gpu:
            event["pid"] += 1
        if event.get("tid") in cpu:
            event["tid"] += 1
        if isinstance(args.get("device"), int):
            args["device"] += 1
        if event.get("cat") == "kernel":
            event["dur"] *= 2
        for key in ("correlation", "External id"):
            if isinstance(args.get(key), int):
                args[key] += offset_ids
        second.append(event)
    return {**trace, "traceEvents": trace["traceEvents"] + second}


def test_ranks_merged_into_one_file_with_colliding_correlation_ids_are_refused(tmp_path):
    """Every kernel of rank 0 was joined to rank 1's launch of the same correlation id (the last one read), so its
    ops got the other GPU's kernels and times; no field of a kernel says which process launched it."""
    path = tmp_path / "ranks.json"
    path.write_text(json.dumps(_two_ranks_in_one_file(0)))
    with pytest.raises(RooflineError, match=r"holds the kernel launches of 2 processes \(pids 415, 416\) whose "
                                            r"correlation ids collide .*give each rank's own trace file"):
        load_trace(path)
    # ids that do not collide join each kernel to its own process's op
    path.write_text(json.dumps(_two_ranks_in_one_file(10 ** 7)))
    trace = load_trace(path)
    attribute(trace)
    joined = {(k.device, trace.ops[k.op].pid) for k in trace.kernels if k.op is not None and k.op >= 0}
    assert joined == {(0, 415), (1, 416)}


def test_a_cut_gzip_is_one_error_naming_what_it_should_have_been(tmp_path):
    """gzip raises EOFError, not OSError, for a stream cut before its end: still one RooflineError."""
    from roofline.io import read_maybe_gzip

    path = tmp_path / "report.json.gz"
    path.write_bytes(gzip.compress(b'{"ops": []}' * 200)[:40])
    with pytest.raises(RooflineError, match=r"cannot parse report .*report\.json\.gz"):
        read_maybe_gzip(path, "report", json=True)


def test_only_nul_beside_an_ascii_character_says_utf16():
    from roofline.io import wide_encoding

    assert wide_encoding(b"\x00{\x00\"") == "UTF-16" and wide_encoding(b"{\x00\"\x00") == "UTF-16"
    assert wide_encoding(b"\x00\x80\x00\x81") is None  # 0x80 is no ASCII character


def test_text_that_is_not_json_is_not_taken_for_a_tar_archive():
    """A tar archive has 'ustar' at byte 257; a text file with other letters there is not one."""
    from roofline.io import not_json_head

    assert "tar archive" in not_json_head(b"x" * 257 + b"ustar" + b"\0" * 250)
    assert "tar archive" not in (not_json_head(b"x" * 257 + b"zzzzz" + b"x" * 250) or "")
