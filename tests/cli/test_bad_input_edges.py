"""Bad input found by the process-level cases of benchmarks/bad_inputs.py (issue 15, third pass), each pinned here
in-process where it can be: special and full output files, scripts that fork, change directory, call os._exit or
leave threads running, NaN given where a number is expected, a non-UTF-8 stdout, a mistyped workload name."""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from roofline.errors import RooflineError
from roofline.io import atomic_write_bytes, check_output_dir, check_output_file
from roofline.render.outputs import write_outputs
from roofline.report import OpRecord, Report

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "data" / "devtraces" / "device_h100_sxm.json"


def _main(argv: list[str], capsys) -> tuple[int, str, str]:
    from roofline.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_fifo_is_written_into_not_replaced_by_a_plain_file(tmp_path):
    """As root, `ceilings --json /dev/full` replaced the device node with a plain file (the atomic rename)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    atomic_write_bytes(fifo, b"ceilings")
    reader.join(5)
    assert got == [b"ceilings"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"], "no temporary file beside it"
    assert check_output_file(fifo) == fifo, "taken as an output file: written in place"


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    atomic_write_bytes(tmp_path / "link.json", b"new")
    assert (tmp_path / "link.json").is_symlink()
    assert (tmp_path / "real.json").read_bytes() == b"new"


class _FullDisk(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_is_one_error_and_keeps_the_previous_file(tmp_path, monkeypatch):
    target = tmp_path / "c.json"
    target.write_bytes(b"previous")
    real_fdopen = os.fdopen

    def full_fdopen(fd, *args, **kwargs):
        os.close(fd)
        return io.BufferedWriter(_FullDisk())

    monkeypatch.setattr(os, "fdopen", full_fdopen)
    with pytest.raises(RooflineError, match=r"cannot write .*c\.json: No space left on device"):
        atomic_write_bytes(target, b"x" * 100_000)
    monkeypatch.setattr(os, "fdopen", real_fdopen)
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


def test_a_full_disk_while_writing_a_report_names_the_output_and_keeps_the_previous_one(tmp_path, monkeypatch):
    out = tmp_path / "out"
    report = Report(workload="w", ops=[OpRecord(name="aten::mm", flops=1e6, bytes=1e3, time_s=1e-3)])
    write_outputs(report, out, png=False)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("roofline.render.html.html_chunks", full)
    with pytest.raises(RooflineError) as caught:
        write_outputs(report, out, png=False)
    assert str(caught.value) == f"cannot write {out}: No space left on device"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_an_existing_output_directory_that_is_not_writable_is_refused_before_the_run(tmp_path, monkeypatch):
    """Root writes anywhere, so the permission is faked: the real case runs as uid 65534 in the benchmark."""
    out = tmp_path / "out"
    out.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != out and real_access(path, mode))
    with pytest.raises(RooflineError, match="output directory .*out is not writable"):
        check_output_dir(out)


def test_a_script_that_changes_directory_or_forks_comes_back_once_in_the_same_directory(tmp_path, monkeypatch):
    from roofline.capture.script_runner import run_script

    script = tmp_path / "script.py"
    (tmp_path / "elsewhere").mkdir()
    script.write_text(textwrap.dedent(f"""\
        import os
        os.chdir({str(tmp_path / 'elsewhere')!r})
        if os.fork() == 0:
            open({str(tmp_path / 'child_ran')!r}, "w").close()
        else:
            os.wait()
        """))
    monkeypatch.chdir(tmp_path)
    pid = os.getpid()
    try:
        run_script(script, [])
    finally:
        if os.getpid() != pid:  # the bug: the child came back into the caller
            os._exit(99)
    assert (tmp_path / "child_ran").exists(), "the child ran the rest of the script"
    assert Path.cwd() == tmp_path


def test_os_exit_in_user_code_raises_and_is_restored(tmp_path):
    from roofline.capture.script_runner import HardExit, hard_exit_raises, run_script, script_error_line

    real = os._exit
    script = tmp_path / "hard.py"
    script.write_text("import os\n\nos._exit(4)\n")
    with pytest.raises(HardExit) as caught:
        run_script(script, [])
    assert os._exit is real
    assert script_error_line(caught.value, script) == "hard.py called os._exit(4) (at hard.py:3)"
    with pytest.raises(ValueError), hard_exit_raises():
        raise ValueError
    assert os._exit is real
    script.write_text("import os\n\nos._exit(0)\n")
    run_script(script, [])  # a script ending itself with os._exit(0) ends normally, as with sys.exit(0)


def test_a_factory_calling_os_exit_is_one_line(tmp_path):
    from roofline.cli.targets import load_factory

    (tmp_path / "fac.py").write_text("import os\n\n\ndef f():\n    os._exit(4)\n")
    with pytest.raises(RooflineError, match=r"fac\.py:f called os\._exit\(4\) \(at .*fac\.py:5\)$"):
        load_factory(f"{tmp_path}/fac.py:f")


def test_threads_a_script_leaves_running_are_named(tmp_path, one_thread):
    from roofline.api import ProfilingContext
    from roofline.capture.script_runner import profile_script
    from roofline.report import Ceilings

    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import builtins
        import threading
        import torch

        builtins._roofline_test_stop = threading.Event()
        threading.Thread(target=builtins._roofline_test_stop.wait, name="left-running").start()
        model = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(10):
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
        """))
    ceilings = Ceilings(device="cpu", device_name="test cpu", memory_bandwidth_bytes_per_s=2e10,
                        peak_flops_per_s={"float32": 1e11}, launch_overhead_s=5e-6)
    context = ProfilingContext(wait=1, timed=0, warmup=0, active=1, device="cpu", ceilings=ceilings,
                               whole_block=False, detect_syncs=False)
    try:
        run = profile_script(context, script, [])
    finally:
        builtins.__dict__.pop("_roofline_test_stop").set()
    assert run.threads_left == ("left-running",)


def test_a_command_that_leaves_threads_behind_still_ends():
    code = ("import threading, time\nfrom roofline import quickexit\nquickexit.arm()\n"
            "threading.Thread(target=time.sleep, args=(600,)).start()\n"
            "quickexit.leave_threads_behind()\nprint('done', flush=True)\nquickexit.finish(3)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO / "src")))
    assert (done.returncode, done.stdout) == (3, "done\n")


def test_an_ascii_only_stdout_gets_ascii_tables_not_unicode_error(tmp_path, monkeypatch, capsys):
    from roofline.cli import main

    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["trace", str(TRACE), "-o", str(tmp_path / "out"), "--no-html"]) == 0
    stdout.flush()
    text = raw.getvalue().decode("ascii")
    assert "| addmm |" in text and "+----" in text
    assert stdout.errors == "replace"


@pytest.mark.parametrize("argv", [
    ["diff", "A", "B", "--fail-above", "nan"],
    ["merge", "RUN", "--threshold", "nan"],
    ["merge", "RUN", "--threshold", "-1"],
    ["lab", "--quick", "--budget", "nan", "-o", "LAB"],
    ["lab", "--quick", "--budget", "inf", "-o", "LAB"],
])
def test_nan_and_infinity_are_refused_at_parse_time(argv, tmp_path, capsys):
    argv = [a if a not in ("A", "B", "RUN", "LAB") else str(tmp_path / a) for a in argv]
    code, _, err = _main(argv, capsys)
    assert code == 2
    assert err.count("roofline: error:") == 1
    assert ("expected a finite number" in err) or ("must be 0 or more, got -1" in err), err


def test_a_ceilings_file_with_nan_bandwidth_is_refused(tmp_path):
    from roofline.device.cache import load_ceilings

    path = tmp_path / "c.json"
    path.write_text('{"memory_bandwidth_bytes_per_s": NaN, "peak_flops_per_s": {"float32": 1e12}}')
    with pytest.raises(RooflineError, match="memory_bandwidth_bytes_per_s is nan, expected a finite number"):
        load_ceilings(path)
    assert load_ceilings(path, missing_ok=True) is None, "a corrupt cache entry is a miss: measured again"
    path.write_text(json.dumps({"memory_bandwidth_bytes_per_s": 1e11, "peak_flops_per_s": {"float32": -1}}))
    with pytest.raises(RooflineError, match=r"peak_flops_per_s\.float32 is -1"):
        load_ceilings(path)


@pytest.mark.parametrize("typed, meant", [("llama-tin", "'llama-tiny'"), ("Matmul", "'matmul'"),
                                          ("resnet", "'resnet50'")])
def test_a_mistyped_workload_gets_a_did_you_mean(typed, meant):
    from roofline.models import get_workload

    with pytest.raises(RooflineError, match=f"unknown workload '{typed}' \\(did you mean {meant}\\?\\); choose one"):
        get_workload(typed)


def test_a_torchvision_models_name_gets_its_factory_spelled_out():
    """`--model vit_b_16` said only which names are built in: a torchvision model is analysed through a factory."""
    from roofline.models import get_workload

    with pytest.raises(RooflineError, match=r"'vit_b_16' is a torchvision model: analyse it through a factory, a file "
                                            r"holding `def build\(\): return torchvision.models.vit_b_16\(\), "
                                            r"torch.randn\(1, 3, 224, 224\)`.*`roofline analyze FILE.py:build`$"):
        get_workload("vit_b_16")
    with pytest.raises(RooflineError, match=r"or analyse your own model: `roofline analyze FILE.py:build`, where "
                                            r"build\(\) returns \(model, inputs\)$"):
        get_workload("my-net")


def test_an_unwritable_ceilings_cache_is_refused_before_measuring(tmp_path, monkeypatch):
    """It measured for 20 s first, then failed to save."""
    from roofline.device import ceilings as ceilings_module

    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "a_file" / "cache"))
    monkeypatch.setattr(ceilings_module, "measure_ceilings", lambda *a, **k: pytest.fail("measured first"))
    with pytest.raises(RooflineError, match=r"cannot write the ceilings cache .*a_file/cache: Not a directory; set "
                                            r"ROOFLINE_CACHE_DIR"):
        ceilings_module.get_ceilings("cpu")


def test_no_home_directory_asks_for_roofline_cache_dir(monkeypatch):
    from roofline.device.cache import cache_dir

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    for name in ("ROOFLINE_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    with pytest.raises(RooflineError, match="set ROOFLINE_CACHE_DIR"):
        cache_dir()


def test_a_report_whose_schema_version_is_a_string_is_malformed_not_newer(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema_version": "one", "workload": "w", "ops": []}))
    with pytest.raises(RooflineError, match="schema_version is 'one', expected a whole number"):
        Report.load(path)


@pytest.mark.parametrize("edit, why", [
    (lambda raw: raw.replace(b'"ts": 1000.0', b'"ts": NaN'), "it holds NaN, which JSON does not allow"),
    (lambda raw: raw.replace(b"aten::linear", b"aten::lin\xe9ar"), "it is not UTF-8 (byte "),
])
def test_a_trace_no_event_of_which_decodes_says_why(edit, why, tmp_path, capsys):
    """Both said only 'no complete trace event'."""
    events = json.loads(TRACE.read_text())["traceEvents"]
    raw = edit(json.dumps({"traceEvents": [dict(e, ts=1000.0) for e in events]}).encode())
    (tmp_path / "t.json").write_bytes(raw)
    code, _, err = _main(["trace", str(tmp_path / "t.json"), "-o", str(tmp_path / "out")], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "no complete trace event; " + why in err


def test_dev_stdout_redirected_to_a_file_is_written_into_not_renamed_over(tmp_path):
    """`--json /dev/stdout > c.json`: /dev/stdout resolves to c.json, a regular file; renaming a new file over it
    would leave the shell's descriptor on the old one and c.json empty."""
    out = tmp_path / "c.json"
    with open(out, "wb") as fh:
        link = Path(f"/proc/self/fd/{fh.fileno()}")
        atomic_write_bytes(link, b"through the descriptor")
        assert os.path.realpath(link) == str(out)
    assert out.read_bytes() == b"through the descriptor"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]


@pytest.mark.parametrize("exitcode, line", [(2, ""), (-9, "roofline: error: rank 1 was killed by SIGKILL\n"),
                                             (3, "roofline: error: rank 1 exited with code 3\n")])
def test_a_failed_torchrun_worker_is_one_line_not_torchruns_traceback(exitcode, line, monkeypatch, capsys):
    """`profile --nproc 2` of a failing script printed torchrun's ChildFailedError traceback and failure table."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

    from roofline.distributed import torchrun_quiet

    def failing_run(args):
        failure = ProcessFailure(local_rank=1, pid=123, exitcode=exitcode, error_file="/nonexistent")
        raise ChildFailedError("roofline", {1: failure})

    monkeypatch.setattr("torch.distributed.run.run", failing_run)
    assert torchrun_quiet.main(["--standalone", "--nproc-per-node=2", "-m", "roofline", "profile", "x.py"]) == 1
    assert capsys.readouterr().err == line


def test_the_same_error_from_every_rank_is_shown_once(capsys):
    from roofline.distributed.launch import _pass_stderr

    shown: list[str] = []
    _pass_stderr(io.BytesIO(b"roofline: error: x.py raised E\nrank 1 log\nroofline: error: x.py raised E\n"), shown)
    assert capsys.readouterr().err == "roofline: error: x.py raised E\nrank 1 log\n"
    assert shown == ["roofline: error: x.py raised E"]


def test_a_directory_named_like_a_script_is_called_a_directory(tmp_path, capsys):
    (tmp_path / "train.py").mkdir()
    for argv in (["profile", "--device", "cpu", str(tmp_path / "train.py")], ["doctor", str(tmp_path / "train.py")]):
        code, _, err = _main(argv, capsys)
        assert (code, err) == (2, f"roofline: error: {tmp_path / 'train.py'} is a directory, not a script\n")


def test_a_trace_given_to_profile_is_not_run_as_a_script(tmp_path, capsys):
    """`{"traceEvents": []}` is a valid Python expression: run as a script, a trace made 0 steps and the error
    spoke of the profiler's schedule."""
    trace = tmp_path / "run.pt.trace.json"
    trace.write_text('{"traceEvents": []}')
    code, _, err = _main(["profile", "--device", "cpu", str(trace)], capsys)
    assert code == 2 and err.startswith(f"roofline: error: {trace} is a JSON file, not a Python script to run")
    assert f"`roofline trace {trace}`" in err and err.count("\n") == 1


_REPORT = {"schema_version": 1, "kind": "trace", "workload": "w",
           "ops": [{"name": "aten::mm", "module": "m", "flops": 1e9, "bytes": 1e6, "time_s": 1e-3}]}


@pytest.mark.parametrize("argv", [["doctor", "{r}"], ["doctor", "{r}", "-o", "{tmp}/out"], ["view", "{r}"],
                                  ["diff", "{r}", "{ok}"], ["predict", "{r}"]])
def test_every_command_reading_a_report_says_what_is_wrong_in_roofline_words(argv, tmp_path, capsys):
    """`doctor -o` printed msgspec's ``Expected `float`, got `str` - at `$.ops[0].time_s```."""
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps(dict(_REPORT, ops=[dict(_REPORT["ops"][0], time_s="fast")])))
    (tmp_path / "ok.json").write_text(json.dumps(_REPORT))
    code, _, err = _main([a.format(r=bad, ok=tmp_path / "ok.json", tmp=tmp_path) for a in argv], capsys)
    assert (code, err) == (2, f'roofline: error: {bad}: malformed roofline report: ops[0].time_s is "fast", '
                              "expected a number\n")


@pytest.mark.parametrize("change, words", [
    ({"ops": "all of them"}, 'ops is "all of them", expected a list'),
    ({"ops": [7]}, "ops[0] is 7, expected an object"),
    ({"ops": [{"module": "m"}]}, "ops[0] has no name field"),
    ({"ops": [dict(_REPORT["ops"][0], time_s=-1.0)]}, "ops[0].time_s is -1.0, expected a number >= 0.0"),
    ({"ops": [dict(_REPORT["ops"][0], flops=[1, 2])]}, "ops[0].flops is a list, expected a number"),
])
def test_a_malformed_report_names_the_field_its_value_and_what_was_expected(change, words):
    with pytest.raises(RooflineError) as caught:
        Report.from_dict(json.loads(json.dumps(dict(_REPORT, **change))))
    assert str(caught.value) == f"malformed roofline report: {words}"


def test_a_report_holding_nan_gets_the_hint_traces_get(tmp_path, capsys):
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps(dict(_REPORT, ops=[dict(_REPORT["ops"][0], time_s=float("nan"))])))
    code, _, err = _main(["doctor", str(bad)], capsys)
    assert code == 2
    assert err == (f"roofline: error: cannot parse report {bad}: JSON is malformed: invalid character (byte 153); "
                   "it holds NaN, which JSON does not allow (Python's json.dumps writes it unless allow_nan=False)\n")


@pytest.mark.parametrize("dtypes", ["", " , "])
def test_an_empty_dtypes_list_is_refused_before_anything_is_measured(dtypes, capsys, monkeypatch):
    """`ceilings --dtypes ''` filtered nothing and showed every dtype, exit 0, as if the flag were not given."""
    import roofline.device

    monkeypatch.setattr(roofline.device, "get_ceilings", lambda *a, **k: pytest.fail("measured"))
    code, out, err = _main(["ceilings", "--device", "cpu", "--dtypes", dtypes], capsys)
    assert (code, out) == (2, "")
    assert err == (f"roofline: error: --dtypes {dtypes!r} names no dtype: give one or more "
                   "(e.g. --dtypes float16,bfloat16), or leave it out for all\n")


def test_cluster_with_one_trace_says_it_is_not_used(tmp_path, capsys, monkeypatch):
    """`trace --cluster ADDRESS one.json` ignored --cluster without a word (it spreads several traces' ranks)."""
    import roofline.analyze.trace_file

    def stop(*args, **kwargs):
        raise RooflineError("stopped after the note")

    monkeypatch.setattr(roofline.analyze.trace_file, "analyze_trace_file", stop)
    code, _, err = _main(["trace", str(TRACE), "--cluster", "tcp://nowhere:8786", "-o", str(tmp_path)], capsys)
    assert code == 2
    assert err == ("roofline: note: --cluster tcp://nowhere:8786 not used: it spreads the ranks of several traces "
                   "over the cluster; one trace is read here\nroofline: error: stopped after the note\n")


def test_a_file_of_zero_bytes_is_refused_from_its_first_block_not_read_whole(tmp_path, monkeypatch):
    """A 2 GiB file of zero bytes named .json was read whole (~2 GiB of memory) before "not valid JSON"."""
    zeros = tmp_path / "x.json"
    with open(zeros, "wb") as fh:
        fh.truncate(64 << 20)  # sparse: no disk used
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail(f"{self} read whole"))
    with pytest.raises(RooflineError) as caught:
        Report.load(zeros)
    assert str(caught.value) == (f"cannot parse report {zeros}: not JSON: its first 65,536 bytes are all zero "
                                 "(a disk image, or a file allocated and never written?)")
    (tmp_path / "x.png.json").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    with pytest.raises(RooflineError, match=r"not JSON: it does not start like JSON: b'\\x89PNG"):
        Report.load(tmp_path / "x.png.json")


def test_a_trace_of_zero_bytes_says_so(tmp_path):
    from roofline.capture.kineto import load_trace

    zeros = tmp_path / "x.json"
    with open(zeros, "wb") as fh:
        fh.truncate(1 << 20)
    with pytest.raises(RooflineError) as caught:
        load_trace(zeros)
    assert str(caught.value).endswith("invalid character (byte 0); its first 1,048,576 bytes are all zero "
                                      "(a disk image, or a file allocated and never written?)")


@pytest.mark.parametrize("head, why", [(b"", None), (b'  \n{"a": 1}', None), (b"[1]", None), (b"\xef\xbb\xbf{}", None),
                                       (b'\x00{\x00"', "it is UTF-16 text"),
                                       (b"\x00" * 8, "its first 8 bytes are all zero"),
                                       (b"  <html>", "it does not start like JSON: b'<html>'")])
def test_what_the_first_block_of_a_json_file_says(head, why):
    from roofline.io import not_json_head

    found = not_json_head(head)
    if why is None:
        assert found is None
    else:
        assert found is not None and found.startswith(why)


def test_a_malformed_ceilings_file_is_described_in_the_same_words(tmp_path):
    from roofline.device.cache import load_ceilings

    bad = tmp_path / "c.json"
    bad.write_text(json.dumps({"memory_bandwidth_bytes_per_s": "fast"}))
    with pytest.raises(RooflineError) as caught:
        load_ceilings(bad)
    assert str(caught.value) == (f'malformed ceilings file {bad}: memory_bandwidth_bytes_per_s is "fast", '
                                 'expected a number')


def test_too_few_optimizer_steps_are_counted_as_the_user_wrote_them(tmp_path, capsys, one_thread):
    """Five optimizer.step() calls read 'it made 6 step(s), the schedule needs 9' (the forward before the first
    optimizer step, taken as a step, counted as one more waiting step); the message now counts the script's own
    steps against the schedule's options (sweep 6)."""
    script = tmp_path / "short.py"
    script.write_text(textwrap.dedent("""
        import torch
        m = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for _ in range(5):
            m(torch.randn(2, 4)).sum().backward()
            opt.step()
    """))
    code, _, err = _main(["profile", "-o", str(tmp_path / "out"), str(script)], capsys)
    assert code == 2
    assert ("it made 5 optimizer.step() call(s), the schedule needs 8 (--wait 1 + --timed 3 + --warmup 1 + "
            "--active 3;") in err


def test_the_error_line_is_one_write_so_ranks_sharing_stderr_cannot_run_into_each_other(tmp_path, monkeypatch):
    """The ranks of a `profile --nproc` job share one stderr pipe: an error line written as its text and then its
    newline (print) let two ranks' lines run into one under load. It is one write, newline included."""
    import io
    import sys

    from roofline.cli import main

    class Writes(io.StringIO):
        def __init__(self):
            super().__init__()
            self.calls = []

        def write(self, text):
            self.calls.append(text)
            return super().write(text)

    stderr = Writes()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(["trace", str(tmp_path / "missing.json")]) == 2
    errors = [call for call in stderr.calls if "roofline: error:" in call]
    assert len(errors) == 1 and errors[0].startswith("roofline: error:") and errors[0].endswith("\n")
    assert errors[0].count("\n") == 1


@pytest.mark.parametrize("fmt", ["zip", "xz", "bz2", "tar.gz"])
def test_a_trace_in_an_archive_or_another_compression_is_named_as_such(tmp_path, fmt):
    """GitHub issues take traces only as .zip attachments: a zipped (or xz, bzip2, zstd, tar) trace was refused as
    'does not start like JSON: b'PK\\x03\\x04...'' (a tar.gz as 'invalid character (byte 4)'), not told to extract
    it."""
    import bz2
    import lzma
    import tarfile
    import zipfile

    from roofline.capture.kineto import load_trace

    text = json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]})
    inner = tmp_path / "t.json"
    inner.write_text(text)
    path = tmp_path / f"t.{fmt}"
    if fmt == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.write(inner, "t.json")
    elif fmt == "tar.gz":
        with tarfile.open(path, "w:gz") as archive:
            archive.add(inner, "t.json")
    else:
        path.write_bytes((lzma if fmt == "xz" else bz2).compress(text.encode()))
    name = {"zip": "a zip archive", "xz": "xz-compressed", "bz2": "bzip2-compressed", "tar.gz": "a tar archive"}[fmt]
    for load in (load_trace, Report.load):
        with pytest.raises(RooflineError, match=f"it is {name}: (extract|decompress)"):
            load(path)


def test_a_report_saved_with_a_utf8_byte_order_mark_is_read(tmp_path, capsys):
    """A report.json opened and saved in a Windows editor gains a BOM; `roofline diff` refused it as
    'invalid character (byte 0)' although json.load reads it."""
    path = tmp_path / "r.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_REPORT).encode())
    assert Report.load(path).ops[0].name == _REPORT["ops"][0]["name"]
    assert Report.is_report_file(path)  # `roofline doctor` reads it as a report, not as a trace
