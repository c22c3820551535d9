"""Every kind of bad input tried on the CLI (issue 15), with the exit code and the message each one gives. Writes
benchmarks/results/bad_input_cases.md (or the path given).

Two sets: ``cases`` run in-process through roofline.cli.main (fast; tests/cli/test_bad_input.py runs them all), and
``proc_cases`` run as a user would, each in a fresh ``python -m roofline`` process (about 6 minutes on 2 cores):
scripts that fork, chdir, os._exit or leave threads running; broken trace files; permissions (as uid 65534 through
setpriv, when run as root); a full disk (a 64 KiB tmpfs, when mount is allowed); the environment (locale, COLUMNS,
cache folder). Where a case's -o held a previous report, its bytes are compared before and after.

Each case must end in exit 2 with one `roofline: error: ...` line and no traceback, except the few marked
otherwise (a diff of unrelated runs is not an error: it exits 0 and says so in a warning line).

    PYTHONPATH=src python benchmarks/bad_inputs.py [OUT.md] [--only TEXT]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FACTORIES = textwrap.dedent(
    """\
    import torch


    class Raises(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            raise ValueError("the forward's own bug")


    def junk():
        return 42, torch.randn(2)


    def not_a_pair():
        return torch.nn.Linear(4, 4)


    def none_inputs():
        return torch.nn.Linear(4, 4), None


    def no_tensors():
        return torch.nn.Linear(4, 4), ("a", 3)


    def raising_forward():
        return Raises(), torch.randn(2, 4)


    def wrong_shape():
        return torch.nn.Linear(4, 4), torch.randn(2, 5)


    def empty_model():
        return torch.nn.Sequential(), torch.randn(2, 4)


    def raises():
        raise KeyError("no such checkpoint")


    def exits():
        import sys
        sys.exit(5)


    def no_grad_output():
        return torch.nn.Flatten(), torch.randn(2, 4)
    """
)


@dataclass
class Case:
    name: str
    argv: list[str]
    expect: int = 2


def _files(tmp: Path) -> dict[str, str]:
    """The files the cases point at, written into ``tmp``."""
    (tmp / "fac.py").write_text(FACTORIES)
    (tmp / "raises.py").write_text("import torch\n\nx = torch.randn(3)\nraise RuntimeError('the script failed')\n")
    (tmp / "exits.py").write_text("import sys\n\nsys.exit(5)\n")
    (tmp / "import_error.py").write_text("import no_such_module_anywhere\n")
    (tmp / "syntax.py").write_text("def broken(:\n")
    for name, text in PROC_SCRIPTS.items():
        (tmp / name).write_text(text)
    (tmp / "a_dir").mkdir(exist_ok=True)
    (tmp / "a_file").write_text("not a directory\n")
    (tmp / "junk.json").write_text("this is not json")
    (tmp / "empty.json").write_text("")
    (tmp / "list.json").write_text("[1, 2, 3]")
    (tmp / "binary.json.gz").write_bytes(b"\x1f\x8b\x00garbage")
    (tmp / "nan_ceilings.json").write_text("{\"memory_bandwidth_bytes_per_s\": \"fast\"}")
    report = {"schema_version": 1, "kind": "trace", "workload": "w",
              "ops": [{"name": "aten::mm", "module": "m", "flops": 1e9, "bytes": 1e6, "time_s": 1e-3}]}
    bad_reports = {
        "ops_string": dict(report, ops="all of them"),
        "time_fast": dict(report, ops=[dict(report["ops"][0], time_s="fast")]),
        "time_negative": dict(report, ops=[dict(report["ops"][0], time_s=-1.0)]),
        "flops_list": dict(report, ops=[dict(report["ops"][0], flops=[1, 2])]),
        "op_not_object": dict(report, ops=[7]),
        "summary_string": dict(report, summary="fine"),
        "future_schema": dict(report, schema_version=99),
    }
    for name, data in bad_reports.items():
        (tmp / f"report_{name}.json").write_text(json.dumps(data))
    (tmp / "report_ok.json").write_text(json.dumps(report))
    other = dict(report, workload="other", ops=[dict(report["ops"][0], name="aten::conv2d", module="c")])
    (tmp / "report_other.json").write_text(json.dumps(other))
    return {"tmp": str(tmp)}


def cases(tmp: Path) -> list[Case]:
    t = str(tmp)
    small = ["--model", "matmul", "--seq", "8", "--device", "cpu", "--iters", "1", "--warmup", "0"]
    out = ["-o", f"{t}/out"]
    fac = f"{t}/fac.py"
    return [
        # counts and values refused at parse time
        Case("analyze --iters 0", ["analyze", *small[:-4], "--iters", "0", *out]),
        Case("analyze --iters -3", ["analyze", *small[:-4], "--iters", "-3", *out]),
        Case("analyze --iters abc", ["analyze", *small[:-4], "--iters", "abc", *out]),
        Case("analyze --warmup -1", ["analyze", *small[:-2], "--warmup", "-1", *out]),
        Case("analyze --top -1", ["analyze", *small, "--top", "-1", *out]),
        Case("analyze --batch 0", ["analyze", *small, "--batch", "0", *out]),
        Case("analyze --seq -5", ["analyze", "--model", "matmul", "--seq", "-5", *out]),
        Case("analyze --device ''", ["analyze", "--model", "matmul", "--device", "", *out]),
        Case("analyze --device bogus", ["analyze", *small[:4], "--device", "bogus", *out]),
        Case("analyze --device cuda:7 (no such GPU)", ["analyze", *small[:4], "--device", "cuda:7", *out]),
        Case("analyze --dtype fp8", ["analyze", "--model", "matmul", "--dtype", "fp8", *out]),
        Case("analyze --model nope", ["analyze", "--model", "nope", "--device", "cpu", *out]),
        Case("analyze with nothing to analyse", ["analyze", "--device", "cpu", *out]),
        Case("analyze both a factory and --model", ["analyze", f"{fac}:junk", "--model", "matmul", *out]),
        Case("profile --wait 0", ["profile", "--model", "matmul", "--wait", "0", *out]),
        Case("profile --warmup -1", ["profile", "--model", "matmul", "--warmup", "-1", *out]),
        Case("profile --active 0", ["profile", "--model", "matmul", "--active", "0", *out]),
        Case("profile --timed -1", ["profile", "--model", "matmul", "--timed", "-1", *out]),
        Case("profile --nproc 0", ["profile", "--nproc", "0", f"{t}/exits.py", *out]),
        Case("profile --device ''", ["profile", "--model", "matmul", "--device", "", *out]),
        Case("doctor --top -1", ["doctor", "--top", "-1", f"{t}/report_ok.json"]),
        Case("doctor with nothing to diagnose", ["doctor"]),
        Case("diff --top -2", ["diff", f"{t}/report_ok.json", f"{t}/report_ok.json", "--top", "-2"]),
        Case("diff --fail-above -5", ["diff", f"{t}/report_ok.json", f"{t}/report_ok.json", "--fail-above", "-5"]),
        Case("trace --top -1", ["trace", f"{t}/junk.json", "--top", "-1", *out]),
        Case("unknown option", ["analyze", "--bogus"]),
        Case("unknown command", ["bogus"]),
        # sizes checked against free memory before allocating
        Case("matmul of 100000x100000 (about 150 GB)", ["analyze", "--model", "matmul", "--seq", "100000",
                                                         "--device", "cpu", *out]),
        Case("llama-tiny at batch 100000", ["analyze", "--model", "llama-tiny", "--batch", "100000", "--device",
                                            "cpu", *out]),
        Case("resnet50 at batch 100000", ["profile", "--model", "resnet50", "--batch", "100000", "--device", "cpu",
                                          *out]),
        Case("llama-8b seq beyond its context", ["analyze", "--model", "llama-tiny", "--seq", "10000000",
                                                 "--device", "cpu", *out]),
        # outputs checked before the run
        Case("-o naming an existing file", ["analyze", *small, "-o", f"{t}/a_file"]),
        Case("-o under an existing file", ["profile", "--model", "matmul", "-o", f"{t}/a_file/out"]),
        Case("doctor -o naming an existing file", ["doctor", f"{t}/report_ok.json", "-o", f"{t}/a_file"]),
        Case("trace -o naming an existing file", ["trace", f"{t}/junk.json", "-o", f"{t}/a_file"]),
        Case("ceilings --json naming a directory", ["ceilings", "--device", "cpu", "--json", f"{t}/a_dir"]),
        Case("diff --html naming a directory", ["diff", f"{t}/report_ok.json", f"{t}/report_ok.json",
                                                "--html", f"{t}/a_dir"]),
        Case("view -o naming a directory", ["view", f"{t}/report_ok.json", "-o", f"{t}/a_dir"]),
        Case("merge -o naming an existing file", ["merge", f"{t}/a_dir", "-o", f"{t}/a_file"]),
        Case("lab -o naming an existing file", ["lab", "--quick", "-o", f"{t}/a_file"]),
        # factories
        Case("factory returning (42, tensor)", ["analyze", f"{fac}:junk", "--device", "cpu", *out]),
        Case("factory returning a model only", ["analyze", f"{fac}:not_a_pair", "--device", "cpu", *out]),
        Case("factory with inputs None", ["analyze", f"{fac}:none_inputs", "--device", "cpu", *out]),
        Case("factory with no tensor inputs", ["analyze", f"{fac}:no_tensors", "--device", "cpu", *out]),
        Case("factory whose forward raises", ["analyze", f"{fac}:raising_forward", "--device", "cpu", *out]),
        Case("factory whose inputs have the wrong shape", ["analyze", f"{fac}:wrong_shape", "--device", "cpu", *out]),
        Case("factory of an empty model", ["analyze", f"{fac}:empty_model", "--device", "cpu", *out]),
        Case("factory that raises", ["analyze", f"{fac}:raises", "--device", "cpu", *out]),
        Case("factory that calls sys.exit(5)", ["analyze", f"{fac}:exits", "--device", "cpu", *out]),
        Case("factory --backward with no output to differentiate", ["analyze", f"{fac}:no_grad_output",
                                                                     "--backward", "--device", "cpu", *out]),
        Case("factory file missing", ["analyze", f"{t}/nope.py:f", "--device", "cpu", *out]),
        Case("factory name missing", ["analyze", f"{fac}:nope", "--device", "cpu", *out]),
        Case("factory without :name", ["analyze", fac, "--device", "cpu", *out]),
        Case("factory file that fails to import", ["analyze", f"{t}/import_error.py:f", "--device", "cpu", *out]),
        Case("factory file with a syntax error", ["analyze", f"{t}/syntax.py:f", "--device", "cpu", *out]),
        # scripts
        Case("profile a script that raises", ["profile", "--device", "cpu", *out, f"{t}/raises.py"]),
        Case("profile a script calling sys.exit(5)", ["profile", "--device", "cpu", *out, f"{t}/exits.py"]),
        Case("doctor a script calling sys.exit(5)", ["doctor", "--device", "cpu", f"{t}/exits.py"]),
        Case("doctor a script that raises", ["doctor", "--device", "cpu", f"{t}/raises.py"]),
        Case("doctor a script that fails to import", ["doctor", "--device", "cpu", f"{t}/import_error.py"]),
        Case("profile a missing script", ["profile", "--device", "cpu", *out, f"{t}/nope.py"]),
        Case("doctor a missing script", ["doctor", f"{t}/nope.py"]),
        Case("profile both a script and --model", ["profile", "--model", "matmul", *out, f"{t}/exits.py"]),
        Case("profile a script with --batch (a built-in --model's)", ["profile", "--batch", "4", *out,
                                                                       f"{t}/exits.py"]),
        Case("doctor a report with --dtype (a built-in --model's)", ["doctor", f"{t}/report_ok.json", "--dtype",
                                                                      "fp16"]),
        # reports and traces
        Case("doctor a report whose ops is a string", ["doctor", f"{t}/report_ops_string.json"]),
        Case("doctor a report whose op time is 'fast'", ["doctor", f"{t}/report_time_fast.json"]),
        Case("doctor a report with a negative op time", ["doctor", f"{t}/report_time_negative.json"]),
        Case("doctor a report with non-numeric FLOPs", ["doctor", f"{t}/report_flops_list.json"]),
        Case("view a report whose op is a number", ["view", f"{t}/report_op_not_object.json", "-o",
                                                    f"{t}/v.html"]),
        Case("diff a report whose summary is a string", ["diff", f"{t}/report_summary_string.json",
                                                         f"{t}/report_ok.json"]),
        Case("doctor a report from a future schema", ["doctor", f"{t}/report_future_schema.json"]),
        Case("doctor a missing file", ["doctor", f"{t}/nope.json"]),
        Case("doctor a file that is not JSON", ["doctor", f"{t}/junk.json"]),
        Case("trace a file that is not JSON", ["trace", f"{t}/junk.json", *out]),
        Case("trace an empty file", ["trace", f"{t}/empty.json", *out]),
        Case("trace a JSON list", ["trace", f"{t}/list.json", *out]),
        Case("trace a corrupt .gz", ["trace", f"{t}/binary.json.gz", *out]),
        Case("trace a directory", ["trace", f"{t}/a_dir", *out]),
        Case("diff a missing report", ["diff", f"{t}/nope.json", f"{t}/report_ok.json"]),
        Case("diff of two unrelated workloads (a warning, not an error)", ["diff", f"{t}/report_ok.json",
                                                                          f"{t}/report_other.json"], expect=0),
        Case("merge a directory without ranks", ["merge", f"{t}/a_dir"]),
        Case("predict a missing report", ["predict", f"{t}/nope.json"]),
        Case("predict a file that is not JSON", ["predict", f"{t}/junk.json"]),
        Case("predict --batch 0", ["predict", f"{t}/report_ok.json", "--batch", "0"]),
        Case("predict --batch without the report's own batch", ["predict", f"{t}/report_ok.json", "--batch", "8"]),
        Case("predict --dtype int8", ["predict", f"{t}/report_ok.json", "--dtype", "int8"]),
        Case("predict --device unknown", ["predict", f"{t}/report_ok.json", "--device", "no such gpu"]),
        Case("predict --device and --ceilings", ["predict", f"{t}/report_ok.json", "--device", "H200",
                                                 "--ceilings", f"{t}/nan_ceilings.json"]),
        Case("predict two reports without --learn", ["predict", f"{t}/report_ok.json", f"{t}/report_ok.json"]),
        Case("predict --learn from reports without roofs", ["predict", "--learn", f"{t}/report_ok.json",
                                                            "--table", f"{t}/table.json"]),
        Case("predict --table missing", ["predict", f"{t}/report_ok.json", "--table", f"{t}/nope.json"]),
        Case("ceilings file with a string bandwidth", ["profile", "--ceilings", f"{t}/nan_ceilings.json", *small[:6],
                                                       *out]),
        Case("a missing ceilings file", ["profile", "--ceilings", f"{t}/nope.json", *small[:6], *out]),
    ]
TRAIN_LOOP = textwrap.dedent("""\
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(6):
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        opt.zero_grad()
    """)
PROC_SCRIPTS = {
    "exit3.py": "import sys\nimport torch\n\ntorch.randn(3) @ torch.randn(3)\nsys.exit(3)\n",
    "exit0.py": "import sys\nimport torch\n\ntorch.randn(3) @ torch.randn(3)\nsys.exit(0)\n",
    "exit_msg.py": "import sys\n\nsys.exit('config.yaml: no such file')\n",
    "interrupt.py": "import torch\n\ntorch.randn(3) @ torch.randn(3)\nraise KeyboardInterrupt\n",
    "hard_exit.py": "import os\nimport torch\n\ntorch.randn(3) @ torch.randn(3)\nos._exit(4)\n",
    "forks.py": textwrap.dedent("""\
        import os
        import torch

        model = torch.nn.Linear(8, 8)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        pid = os.fork()
        for _ in range(6):
            model(torch.randn(4, 8)).sum().backward()
            opt.step()
            opt.zero_grad()
        if pid:
            os.waitpid(pid, 0)
        """),
    "chdir.py": textwrap.dedent("""\
        import os
        import torch

        os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "a_dir"))
        """) + TRAIN_LOOP,
    "thread.py": textwrap.dedent("""\
        import threading
        import time
        import torch

        threading.Thread(target=lambda: time.sleep(3600)).start()
        """) + TRAIN_LOOP,
    "chatty.py": "import torch\n" + TRAIN_LOOP.replace("\n    model(", "\n    print('x' * 1_000_000)\n    model("),
    "kill1.py": "import os\nimport time\n\nif os.environ.get('RANK') == '1':\n    os.kill(os.getpid(), 9)\n"
                "time.sleep(5)\n",
    "stdin.py": "import sys\nimport torch\n\nline = input('batch size? ')\ntorch.randn(int(line))\n",
    "fac2.py": textwrap.dedent("""\
        import torch


        def meta_inputs():
            return torch.nn.Linear(4, 4), torch.randn(2, 4, device="meta")


        def needs_args(width):
            return torch.nn.Linear(width, width), torch.randn(2, width)


        def interrupted():
            raise KeyboardInterrupt


        def hard_exit():
            import os
            os._exit(4)
        """),
}


GOOD_TRACE = Path(__file__).resolve().parents[1] / "tests" / "data" / "devtraces" / "device_h100_sxm.json"


def _trace_variants(tmp: Path) -> None:
    """Trace files that are broken in the ways real ones are (cut short, re-encoded, hand-edited)."""
    good = json.loads(GOOD_TRACE.read_text())
    raw = json.dumps(good).encode()
    whole = gzip.compress(raw)
    (tmp / "truncated.json.gz").write_bytes(whole[: len(whole) // 2])
    (tmp / "truncated.json").write_bytes(raw[: len(raw) // 2])
    (tmp / "gz_text.json.gz").write_bytes(gzip.compress(b"hello, this is a log file\n" * 50))
    (tmp / "event_array.json").write_text(json.dumps(good["traceEvents"]))
    (tmp / "events_null.json").write_text(json.dumps(dict(good, traceEvents=None)))
    (tmp / "events_object.json").write_text(json.dumps(dict(good, traceEvents={"a": 1})))
    (tmp / "top_string.json").write_text(json.dumps("a trace"))
    missing = [{k: v for k, v in e.items() if k not in ("ts", "dur", "pid")} for e in good["traceEvents"]]
    (tmp / "missing_fields.json").write_text(json.dumps(dict(good, traceEvents=missing)))
    (tmp / "negative_dur.json").write_text(json.dumps(dict(good, traceEvents=[
        dict(e, dur=-abs(e.get("dur", 1))) for e in good["traceEvents"]])))
    (tmp / "string_ts.json").write_text(json.dumps(dict(good, traceEvents=[
        dict(e, ts=str(e["ts"]), dur=str(e.get("dur", 0))) for e in good["traceEvents"]])))
    (tmp / "nan_ts.json").write_text(json.dumps(dict(good, traceEvents=[
        dict(e, ts=float("nan"), dur=float("inf")) for e in good["traceEvents"]])))
    (tmp / "args_list.json").write_text(json.dumps(dict(good, traceEvents=[
        dict(e, args=[1, 2]) for e in good["traceEvents"]])))
    (tmp / "dims_strings.json").write_text(json.dumps(dict(good, traceEvents=[
        dict(e, args=dict(e["args"], **{"Input Dims": "big"})) if "Input Dims" in e.get("args", {}) else e
        for e in good["traceEvents"]])))
    huge = [dict(e, args=dict(e["args"], **{"Input Dims": [[2**40, 2**40] for _ in e["args"]["Input Dims"]]}))
            if "Input Dims" in e.get("args", {}) else e for e in good["traceEvents"]]
    (tmp / "huge_dims.json").write_text(json.dumps(dict(good, traceEvents=huge)))
    (tmp / "non_utf8.json").write_bytes(raw.replace(b"aten::linear", b"aten::lin\xff\xfear"))
    (tmp / "latin1_whole.json").write_bytes(raw.decode().replace("aten::linear", "aten::lin\u00e9ar").encode("latin-1"))
    with open(tmp / "sparse_2g.json", "wb") as fh:  # 2 GiB of holes: a disk image or core dump named .json
        fh.truncate(2 * 1024**3)
    (tmp / "dir.json").mkdir(exist_ok=True)
    (tmp / "dir.py").mkdir(exist_ok=True)
    for a, b in (("loop_a.json", "loop_b.json"), ("loop_b.json", "loop_a.json")):
        with contextlib.suppress(FileExistsError):
            os.symlink(tmp / b, tmp / a)
    with contextlib.suppress(FileExistsError):
        os.symlink(tmp / "gone.json", tmp / "dangling.json")
    (tmp / "unreadable.json").write_bytes(raw)
    os.chmod(tmp / "unreadable.json", 0)
    (tmp / "unreadable_dir").mkdir(exist_ok=True)
    os.chmod(tmp / "unreadable_dir", 0)
    (tmp / "package.json").write_text(json.dumps({"name": "left-pad", "version": "1.3.0", "dependencies": {}}))
    report = json.loads((tmp / "report_ok.json").read_text())
    (tmp / "report_future_field.json").write_text(json.dumps(dict(report, schema_version=99, new_field={"x": 1})))
    (tmp / "report_schema_string.json").write_text(json.dumps(dict(report, schema_version="one")))
    (tmp / "report_nan.json").write_text(json.dumps(dict(report, ops=[dict(report["ops"][0], time_s=float("nan"))])))
    (tmp / "report.json.gz").write_bytes(gzip.compress(json.dumps(report).encode())[:40])
    (tmp / "ceilings_nan.json").write_text(json.dumps({"memory_bandwidth_bytes_per_s": float("nan")}))
    (tmp / "onnx_junk.onnx").write_bytes(b"not an onnx model")
    (tmp / "run_dir" / "rank0").mkdir(parents=True, exist_ok=True)
    (tmp / "run_dir" / "rank0" / "report.json").write_text("{\"ops\": ")
    (tmp / "run_dir_other" / "rank0").mkdir(parents=True, exist_ok=True)
    (tmp / "run_dir_other" / "rank0" / "report.json").write_text(json.dumps({"name": "left-pad"}))


@dataclass
class ProcCase:
    """A case run as a user would: ``python -m roofline ARGV`` in a fresh process, in TMP.

    ``guard``: an output directory that holds a previous run's report before the case and must hold the same
    bytes after it (the case's -o points at it). ``env``: variables to set (None: unset). ``user``: run as this
    uid through setpriv (root reads any file; a permission case means something only for another user).
    ``expect_files``: paths (relative to TMP) the run must have written."""

    name: str
    argv: list[str]
    expect: int = 2
    env: dict[str, str | None] = field(default_factory=dict)
    guard: str | None = None
    stdin: bytes | None = None
    user: int | None = None
    expect_files: tuple[str, ...] = ()
    timeout: float = 120.0
    needs: str | None = None


def proc_cases(tmp: Path) -> list[ProcCase]:
    t = str(tmp)
    cpu = ["--device", "cpu"]
    small = ["--model", "matmul", "--seq", "8", *cpu, "--iters", "1", "--warmup", "0"]
    prof = ["--device", "cpu", "--wait", "1", "--warmup", "0", "--active", "2"]
    trace = lambda name, *more: ["trace", f"{t}/{name}", "-o", "kept", *more]  # noqa: E731
    g = "kept"
    return [
        # outputs
        ProcCase("analyze -o a read-only directory (as uid 65534)", ["analyze", *small, "-o", f"{t}/read_only/out"],
                 user=65534),
        ProcCase("trace -o a directory under another user's (as uid 65534)", ["trace", str(GOOD_TRACE), "-o",
                                                                               f"{t}/read_only"], user=65534),
        ProcCase("trace -o another user's directory in a shared one (as uid 65534)",
                 ["trace", str(GOOD_TRACE), "-o", f"{t}/shared_rw/roots"], user=65534),
        ProcCase("ceilings --json under a file", ["ceilings", *cpu, "--json", f"{t}/a_file/c.json"]),
        ProcCase("ceilings --json through a symlink keeps the link", ["ceilings", *cpu, "--json", f"{t}/link.json"],
                 expect=0, expect_files=("link.json@symlink",)),
        ProcCase("view -o /dev/stdout (the page on stdout)", ["view", f"{t}/report_ok.json", "-o", "/dev/stdout"],
                 expect=0),
        ProcCase("ceilings --json to a full disk (/dev/full)", ["ceilings", *cpu, "--json", "/dev/full"]),
        ProcCase("analyze -o on a full disk (64 KiB tmpfs)", ["analyze", *small, "-o", f"{t}/tiny_fs/out"],
                 needs="tmpfs"),
        ProcCase("a failing analyze leaves the previous report", ["analyze", f"{t}/fac.py:raises", *cpu, "-o", g],
                 guard=g),
        ProcCase("a failing profile script leaves the previous report", ["profile", *prof, "-o", g,
                                                                         f"{t}/raises.py"], guard=g),
        ProcCase("a failing trace leaves the previous report", trace("junk.json"), guard=g),
        ProcCase("a failing doctor -o leaves the previous report", ["doctor", f"{t}/report_time_fast.json", "-o", g],
                 guard=g),
        ProcCase("an interrupting factory leaves the previous report", ["analyze", f"{t}/fac2.py:interrupted", *cpu,
                                                                        "-o", g], expect=130, guard=g),
        # trace files
        ProcCase("trace a truncated .json.gz", trace("truncated.json.gz"), guard=g),
        ProcCase("trace a truncated .json", trace("truncated.json"), guard=g),
        ProcCase("trace a gzip of a text file", trace("gz_text.json.gz"), guard=g),
        ProcCase("trace a bare JSON array of events (Chrome's array format)", trace("event_array.json"), expect=0,
                 expect_files=("kept/report.json",)),
        ProcCase("trace with traceEvents null", trace("events_null.json"), guard=g),
        ProcCase("trace with traceEvents an object", trace("events_object.json"), guard=g),
        ProcCase("trace that is a JSON string", trace("top_string.json"), guard=g),
        ProcCase("trace whose events lack ts, dur and pid", trace("missing_fields.json"), guard=g),
        ProcCase("trace with negative durations", trace("negative_dur.json"), guard=g),
        ProcCase("trace with ts and dur as numeric strings (read as numbers)", trace("string_ts.json"), expect=0,
                 expect_files=("kept/report.json",)),
        ProcCase("trace with NaN ts and infinite dur", trace("nan_ts.json"), guard=g),
        ProcCase("trace whose args are lists", trace("args_list.json"), guard=g),
        ProcCase("trace whose Input Dims are a string", trace("dims_strings.json"), expect=0),
        ProcCase("trace with 2**40 x 2**40 shapes", trace("huge_dims.json"), expect=0),
        ProcCase("trace with non-UTF-8 bytes in a name", trace("non_utf8.json"), guard=g),
        ProcCase("trace in Latin-1", trace("latin1_whole.json"), guard=g),
        ProcCase("trace a 2 GiB file of zero bytes", trace("sparse_2g.json"), guard=g, timeout=60),
        ProcCase("trace a directory named x.json", trace("dir.json"), guard=g),
        ProcCase("trace a symlink loop", trace("loop_a.json"), guard=g),
        ProcCase("trace a dangling symlink", trace("dangling.json"), guard=g),
        ProcCase("trace an unreadable file (as uid 65534)", ["trace", f"{t}/unreadable.json", "-o",
                                                             f"{t}/shared_rw/o1"],
                 user=65534),
        ProcCase("trace a file in an unreadable directory (as uid 65534)",
                 ["trace", f"{t}/unreadable_dir/x.json", "-o", f"{t}/shared_rw/o2"], user=65534),
        ProcCase("trace another tool's JSON (package.json)", trace("package.json"), guard=g),
        ProcCase("trace a report.json", trace("report_ok.json"), guard=g),
        # reports given to diff, predict, doctor, view, merge
        ProcCase("diff another tool's JSON", ["diff", f"{t}/package.json", f"{t}/report_ok.json"]),
        ProcCase("diff a trace instead of a report", ["diff", str(GOOD_TRACE), f"{t}/report_ok.json"]),
        ProcCase("predict another tool's JSON", ["predict", f"{t}/package.json"]),
        ProcCase("predict a report from schema 99 with a field it does not know", ["predict",
                                                                                    f"{t}/report_future_field.json"]),
        ProcCase("doctor another tool's JSON", ["doctor", f"{t}/package.json"]),
        ProcCase("doctor a report whose schema_version is a string", ["doctor", f"{t}/report_schema_string.json"]),
        ProcCase("doctor a report with a NaN op time", ["doctor", f"{t}/report_nan.json"]),
        ProcCase("view a truncated report.json.gz", ["view", f"{t}/report.json.gz", "-o", f"{t}/v.html"]),
        ProcCase("view a 2 GiB file of zero bytes", ["view", f"{t}/sparse_2g.json", "-o", f"{t}/v.html"], timeout=60),
        ProcCase("doctor -o a report with a NaN op time", ["doctor", f"{t}/report_nan.json", "-o", f"{t}/d_nan"]),
        ProcCase("view a directory", ["view", f"{t}/a_dir", "-o", f"{t}/v.html"]),
        ProcCase("merge a run dir whose rank report is truncated", ["merge", f"{t}/run_dir", "-o", f"{t}/m"]),
        ProcCase("merge a run dir whose rank report is another tool's", ["merge", f"{t}/run_dir_other", "-o",
                                                                         f"{t}/m"]),
        ProcCase("merge a missing run dir", ["merge", f"{t}/nope"]),
        ProcCase("ort a file that is not ONNX", ["ort", f"{t}/onnx_junk.onnx", "-o", f"{t}/o"]),
        ProcCase("ort a missing model", ["ort", f"{t}/nope.onnx", "-o", f"{t}/o"]),
        ProcCase("a ceilings file with NaN bandwidth", ["profile", "--ceilings", f"{t}/ceilings_nan.json", *small[:6],
                                                        "-o", g], guard=g),
        # scripts
        ProcCase("profile a script calling sys.exit(3)", ["profile", *prof, "-o", g, f"{t}/exit3.py"], guard=g),
        ProcCase("profile a script calling sys.exit(0) before any step", ["profile", *prof, "-o", "exit0_out",
                                                                          f"{t}/exit0.py"]),
        ProcCase("profile a script calling sys.exit('message')", ["profile", *prof, "-o", g, f"{t}/exit_msg.py"],
                 guard=g),
        ProcCase("profile a script raising KeyboardInterrupt", ["profile", *prof, "-o", g, f"{t}/interrupt.py"],
                 expect=130, guard=g),
        ProcCase("profile a script calling os._exit(4)", ["profile", *prof, "-o", g, f"{t}/hard_exit.py"], guard=g),
        ProcCase("profile a script that forks", ["profile", *prof, "-o", "fork_out", f"{t}/forks.py"], expect=0,
                 expect_files=("fork_out/report.json",)),
        ProcCase("profile a script that changes directory (relative -o)", ["profile", *prof, "-o", "chdir_out",
                                                                          f"{t}/chdir.py"], expect=0,
                 expect_files=("chdir_out/report.json",)),
        ProcCase("profile a script leaving a thread running", ["profile", *prof, "-o", "thread_out",
                                                               f"{t}/thread.py"], expect=0, timeout=60,
                 expect_files=("thread_out/report.json",)),
        ProcCase("profile a script printing 6 MB", ["profile", *prof, "-o", "chatty_out", f"{t}/chatty.py"], expect=0,
                 expect_files=("chatty_out/report.json",)),
        ProcCase("profile a script reading an empty stdin", ["profile", *prof, "-o", g, f"{t}/stdin.py"], guard=g,
                 stdin=b""),
        ProcCase("doctor a script calling sys.exit(3)", ["doctor", *cpu, f"{t}/exit3.py"]),
        ProcCase("profile --nproc 2 of a script that raises (torchrun)", ["profile", "--nproc", "2", *cpu, "-o",
                                                                          f"{t}/ranks", f"{t}/raises.py"]),
        ProcCase("profile --nproc 2 of a script whose rank 1 is SIGKILLed", ["profile", "--nproc", "2", *cpu, "-o",
                                                                             f"{t}/ranks_killed", f"{t}/kill1.py"]),
        ProcCase("profile a directory named x.py", ["profile", *prof, f"{t}/dir.py"]),
        ProcCase("doctor --rules nope", ["doctor", f"{t}/report_ok.json", "--rules", "nope"]),
        ProcCase("diff --html /dev/full", ["diff", f"{t}/report_ok.json", f"{t}/report_ok.json", "--html",
                                           "/dev/full"]),
        ProcCase("predict --save naming a directory", ["predict", f"{t}/report_ok.json", "--save", f"{t}/a_dir"]),
        ProcCase("trace --ceilings that is not JSON", ["trace", str(GOOD_TRACE), "--ceilings", f"{t}/junk.json",
                                                       "-o", g], guard=g),
        # factories and --model
        ProcCase("factory returning inputs on the meta device", ["analyze", f"{t}/fac2.py:meta_inputs", *cpu, "-o", g],
                 guard=g),
        ProcCase("factory with a required argument", ["analyze", f"{t}/fac2.py:needs_args", *cpu, "-o", g], guard=g),
        ProcCase("factory calling os._exit(4)", ["analyze", f"{t}/fac2.py:hard_exit", *cpu, "-o", g], guard=g),
        ProcCase("analyze --model llama-tin (a typo)", ["analyze", "--model", "llama-tin", *cpu]),
        ProcCase("profile --model resnet (a prefix)", ["profile", "--model", "resnet", *cpu]),
        ProcCase("doctor --model Matmul (wrong case)", ["doctor", "--model", "Matmul", *cpu]),
        ProcCase("lab --model llama-tiny-x", ["lab", "--model", "llama-tiny-x", "-o", f"{t}/lab"]),
        # numbers
        ProcCase("analyze --batch 1e9", ["analyze", *small, "--batch", "1e9"]),
        ProcCase("analyze --batch nan", ["analyze", *small, "--batch", "nan"]),
        ProcCase("analyze --batch 1000000000", ["analyze", "--model", "llama-tiny", *cpu, "--batch", "1000000000"]),
        ProcCase("analyze --iters 10**12", ["analyze", *small[:-4], "--iters", str(10**12)]),
        ProcCase("profile --active 10**12", ["profile", "--model", "matmul", "--active", str(10**12)]),
        ProcCase("predict --batch nan", ["predict", f"{t}/report_ok.json", "--batch", "nan"]),
        ProcCase("predict --batch -1", ["predict", f"{t}/report_ok.json", "--batch", "-1"]),
        ProcCase("predict --host-speed nan", ["predict", f"{t}/report_ok.json", "--host-speed", "nan"]),
        ProcCase("predict --host-speed -2", ["predict", f"{t}/report_ok.json", "--host-speed", "-2"]),
        ProcCase("predict --host-speed inf", ["predict", f"{t}/report_ok.json", "--host-speed", "inf"]),
        ProcCase("diff --fail-above nan", ["diff", f"{t}/report_ok.json", f"{t}/report_ok.json", "--fail-above",
                                           "nan"]),
        ProcCase("diff --fail-above inf", ["diff", f"{t}/report_ok.json", f"{t}/report_ok.json", "--fail-above",
                                           "inf"]),
        ProcCase("merge --threshold nan", ["merge", f"{t}/run_dir", "--threshold", "nan"]),
        ProcCase("merge --threshold -1", ["merge", f"{t}/run_dir", "--threshold", "-1"]),
        ProcCase("ort --threads -1", ["ort", f"{t}/onnx_junk.onnx", "--threads", "-1"]),
        ProcCase("ort --iters 0", ["ort", f"{t}/onnx_junk.onnx", "--iters", "0"]),
        ProcCase("lab --budget -5", ["lab", "--quick", "--budget", "-5", "-o", f"{t}/lab"]),
        ProcCase("lab --budget nan", ["lab", "--quick", "--budget", "nan", "-o", f"{t}/lab"]),
        ProcCase("ceilings --dtypes bogus", ["ceilings", *cpu, "--dtypes", "bogus"]),
        ProcCase("ceilings --dtypes ''", ["ceilings", *cpu, "--dtypes", ""]),
        ProcCase("trace --cluster with one trace (a note, then the report)",
                 ["trace", str(GOOD_TRACE), "--cluster", "tcp://nowhere:8786", "--no-html", "-o", f"{t}/o_cluster"],
                 expect=0, expect_files=("o_cluster/report.json",)),
        ProcCase("ceilings --device cuda:x", ["ceilings", "--device", "cuda:x"]),
        ProcCase("trace --inputs without --onnx", ["trace", str(GOOD_TRACE), "--inputs", "x=[[", "-o", f"{t}/o"]),
        # environment
        ProcCase("ROOFLINE_CACHE_DIR under a file", ["analyze", *small, "-o", "env_out"],
                 env={"ROOFLINE_CACHE_DIR": f"{t}/a_file/cache"}),
        ProcCase("ROOFLINE_CACHE_DIR read-only (as uid 65534)", ["analyze", *small, "-o", f"{t}/shared_rw/o3"],
                 env={"ROOFLINE_CACHE_DIR": f"{t}/read_only/cache"}, user=65534),
        ProcCase("a corrupt cached ceilings file", ["analyze", *small, "-o", "corrupt_cache_out"],
                 env={"ROOFLINE_CACHE_DIR": f"{t}/corrupt_cache"}, expect=None),
        ProcCase("HOME and ROOFLINE_CACHE_DIR unset, a user whose home does not exist (uid 65534)",
                 ["analyze", *small, "-o", f"{t}/shared_rw/o4"],
                 env={"HOME": None, "ROOFLINE_CACHE_DIR": None, "XDG_CACHE_HOME": None}, user=65534),
        ProcCase("TERM=dumb, NO_COLOR, no tty", ["trace", str(GOOD_TRACE), "-o", "dumb_out", "--no-html"],
                 env={"TERM": "dumb", "NO_COLOR": "1"}, expect=0),
        ProcCase("an ASCII-only stdout (PYTHONIOENCODING=ascii)", ["trace", str(GOOD_TRACE), "-o", "ascii_out",
                                                                   "--no-html"],
                 env={"PYTHONIOENCODING": "ascii", "LANG": "C", "LC_ALL": "C"}, expect=0),
        ProcCase("LC_ALL=C with a non-ASCII path", ["trace", str(GOOD_TRACE), "-o", "sortie_\u00e9t\u00e9",
                                                    "--no-html"], env={"LANG": "C", "LC_ALL": "C"}, expect=0),
        ProcCase("COLUMNS=40", ["trace", str(GOOD_TRACE), "-o", "narrow_out", "--no-html"], env={"COLUMNS": "40"},
                 expect=0),
        ProcCase("COLUMNS=5", ["doctor", str(GOOD_TRACE)], env={"COLUMNS": "5"}, expect=None),
        ProcCase("COLUMNS=abc", ["trace", str(GOOD_TRACE), "-o", "columns_abc_out", "--no-html"],
                 env={"COLUMNS": "abc"}, expect=0),
    ]


def _proc_setup(tmp: Path, cache: Path) -> dict[str, bool]:
    """The directories and files the subprocess cases need; returns which optional facilities this machine has."""
    _trace_variants(tmp)
    os.chmod(tmp, 0o755)
    os.chmod(cache, 0o755)
    for entry in cache.iterdir():
        os.chmod(entry, 0o644)
    (tmp / "read_only").mkdir(exist_ok=True)
    os.chmod(tmp / "read_only", 0o755)  # root's; to uid 65534 it is read-only
    (tmp / "shared_rw" / "roots").mkdir(parents=True, exist_ok=True)
    os.chmod(tmp / "shared_rw", 0o1777)  # /tmp-like: anyone writes, only the owner renames
    os.chmod(tmp / "shared_rw" / "roots", 0o755)
    (tmp / "real.json").write_text("{}")
    with contextlib.suppress(FileExistsError):
        os.symlink(tmp / "real.json", tmp / "link.json")
    corrupt = tmp / "corrupt_cache"
    shutil.copytree(cache, corrupt, dirs_exist_ok=True)
    for entry in corrupt.iterdir():
        if entry.is_file():
            entry.write_text("{\"memory_bandwidth_bytes_per_s\": ")
    (tmp / "tiny_fs").mkdir(exist_ok=True)
    has = {"tmpfs": False, "setpriv": shutil.which("setpriv") is not None and os.geteuid() == 0}
    if os.geteuid() == 0 and shutil.which("mount"):
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(tmp / "tiny_fs")],
                              capture_output=True)
        has["tmpfs"] = done.returncode == 0
    previous = subprocess.run([sys.executable, "-m", "roofline", "trace", str(GOOD_TRACE), "-o", str(tmp / "previous")],
                              cwd=tmp, capture_output=True, env=_env(cache, {}))
    if previous.returncode != 0:
        raise SystemExit(f"could not write the previous report the guarded cases protect: {previous.stderr[-500:]!r}")
    return has


def _env(cache: Path, changes: dict[str, str | None]) -> dict[str, str]:
    env = dict(os.environ, ROOFLINE_CACHE_DIR=str(cache), PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    env.pop("COLUMNS", None)
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def run_proc_case(case: ProcCase, tmp: Path, cache: Path, has: dict[str, bool]) -> dict[str, Any]:
    """Run one case in a fresh process; what it did: exit code, stderr's first line, traceback, files kept."""
    if case.needs and not has.get(case.needs):
        return {"code": "-", "verdict": f"skipped (no {case.needs} here)", "first": "", "kept": "-"}
    if case.user is not None and not has["setpriv"]:
        return {"code": "-", "verdict": "skipped (not root: cannot run as another user)", "first": "", "kept": "-"}
    before = None
    if case.guard:
        guard = tmp / case.guard
        shutil.rmtree(guard, ignore_errors=True)
        shutil.copytree(tmp / "previous", guard)
        before = _snapshot(guard)
    command = [sys.executable, "-m", "roofline", *case.argv]
    if case.user is not None:
        command = ["setpriv", f"--reuid={case.user}", f"--regid={case.user}", "--clear-groups", *command]
    try:
        done = subprocess.run(command, cwd=tmp, env=_env(cache, case.env), capture_output=True, timeout=case.timeout,
                              input=case.stdin if case.stdin is not None else b"",)
        code: int | str = done.returncode
        stderr = done.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as exc:
        code, stderr = "timeout", (exc.stderr or b"").decode(errors="replace")
    kept = "-"
    if before is not None:
        kept = "yes" if _snapshot(tmp / case.guard) == before else "NO"
    lines = [line for line in stderr.splitlines() if line.strip()]
    first = next((line for line in lines if line.startswith(("roofline: error:", "roofline: interrupted"))),
                 lines[0] if lines else "")
    problems = []
    if "Traceback (most recent call last)" in stderr:
        problems.append("TRACEBACK")
    if code == "timeout":
        problems.append(f"still running after {case.timeout:.0f} s")
    elif case.expect is not None and code != case.expect:
        problems.append(f"exit {code}, expected {case.expect}")
    if case.expect == 2 and sum(line.startswith("roofline: error:") for line in lines) != 1:
        problems.append("not one error line")
    if kept == "NO":
        problems.append("previous report changed")
    for want in case.expect_files:
        path, _, kind = want.partition("@")
        target = tmp / path
        if not (target.is_symlink() if kind == "symlink" else target.exists()):
            problems.append(f"{path} {'not a symlink any more' if kind else 'not written'}")
    verdict = "; ".join(problems) or ("ok" if case.expect is not None else "recorded")
    return {"code": code, "verdict": verdict, "first": first, "kept": kept, "stderr": stderr}


class _Terminated(BaseException):
    """SIGTERM: the cases stop, the cleanup runs (the in-process runner catches everything else a case raises)."""


def _terminate(*frame: Any) -> None:
    raise _Terminated


def run_case(argv: list[str]) -> tuple[int | str, str, str]:
    """(exit code, stdout, stderr) of ``roofline ARGV`` in this process; an escaping exception is 'exception'."""
    from roofline.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | str = main(argv)
        except _Terminated:
            raise
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # noqa: BLE001 - that is exactly what this check looks for
            import traceback

            traceback.print_exc(file=err)
            code = f"exception {type(exc).__name__}"
    return code, out.getvalue(), err.getvalue()


def verdict(case: Case, code: int | str, stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("roofline: error:")]
    if "Traceback" in stderr or not isinstance(code, int):
        return "TRACEBACK"
    if code != case.expect:
        return f"exit {code}, expected {case.expect}"
    if case.expect == 2 and len(errors) != 1:
        return f"{len(errors)} error lines"
    return "ok"


def message(stdout: str, stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith(("roofline: error:", "Traceback"))]
    lines = lines or [line for line in stdout.splitlines() if line.startswith("warning:")]
    return (lines[0] if lines else (stderr.strip().splitlines() or [""])[-1])[:220]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path,
                        default=Path(__file__).parent / "results" / "bad_input_cases.md")
    parser.add_argument("--only", default=None, help="run only the cases whose name holds this text; write nothing")
    options = parser.parse_args()
    # killed (timeout, kill), the cleanup below still runs: the tmpfs is unmounted and the case's process ended
    signal.signal(signal.SIGTERM, _terminate)
    cache = Path(os.environ.get("ROOFLINE_CACHE_DIR") or tempfile.mkdtemp(prefix="roofline-cache-"))
    os.environ["ROOFLINE_CACHE_DIR"] = str(cache)
    import torch

    from roofline.device import cache_path, get_ceilings, save_ceilings

    quick = get_ceilings("cpu", quick=True)  # a full CPU measurement is not what these cases are about
    if not cache_path(quick.device_name).exists():
        save_ceilings(quick, cache_path(quick.device_name))

    torch.set_num_threads(1)
    rows, proc_rows = [], []
    with tempfile.TemporaryDirectory(prefix="roofline-bad-") as tmp_name:
        tmp = Path(tmp_name)
        _files(tmp)
        has = _proc_setup(tmp, cache)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            for case in cases(tmp):
                if options.only and options.only not in case.name:
                    continue
                t0 = time.perf_counter()
                code, stdout, stderr = run_case(case.argv)
                seconds = time.perf_counter() - t0
                rows.append((case, code, verdict(case, code, stderr), message(stdout, stderr).replace(tmp_name, "TMP"),
                             seconds))
                print(f"{rows[-1][2]:>6}  {code!s:>3}  {case.name}", flush=True)
            for pcase in proc_cases(tmp):
                if options.only and options.only not in pcase.name:
                    continue
                result = run_proc_case(pcase, tmp, cache, has)
                result["first"] = result["first"].replace(tmp_name, "TMP")[:220]
                proc_rows.append((pcase, result))
                print(f"{result['verdict']:>6}  {result['code']!s:>3}  kept={result['kept']}  {pcase.name}: "
                      f"{result['first']}", flush=True)
                if options.only and result.get("stderr") and "Traceback" in result["stderr"]:
                    print(result["stderr"][-3000:])
        finally:
            os.chdir(cwd)
            if has.get("tmpfs"):
                subprocess.run(["umount", str(tmp / "tiny_fs")], check=False)
            for locked in ("unreadable_dir", "unreadable.json"):
                with contextlib.suppress(OSError):
                    os.chmod(tmp / locked, 0o700)
    bad = [r for r in rows if r[2] != "ok"]
    proc_bad = [r for r in proc_rows if r[1]["verdict"] not in ("ok", "recorded") and not
                r[1]["verdict"].startswith("skipped")]
    if options.only:
        return 1 if bad or proc_bad else 0
    lines = [
        "# Bad inputs tried on the CLI (issue 15)",
        "",
        f"Generated by `PYTHONPATH=src python benchmarks/bad_inputs.py` on {time.strftime('%Y-%m-%d')}, as "
        f"{'root' if os.geteuid() == 0 else 'a user'}; TMP is the temporary folder holding the case's files.",
        "",
        "## In-process cases",
        "",
        "Each case run in-process through `roofline.cli.main`. "
        f"{len(rows)} cases, {len(rows) - len(bad)} as expected (exit 2 with one `roofline: error:` line and no "
        "traceback, or the stated exit code), "
        f"{len(bad)} not.",
        "",
        "| case | exit | verdict | message |",
        "|---|---|---|---|",
    ]
    for case, code, result, text, _ in rows:
        lines.append(f"| {case.name} | {code} | {result} | `{text.replace('|', '/')}` |")
    skipped = [r for r in proc_rows if r[1]["verdict"].startswith("skipped")]
    lines += [
        "",
        "## Cases run as a user would (a fresh `python -m roofline` process)",
        "",
        "Each case in its own process, cwd TMP, stdin empty. *kept*: the case's -o held a previous run's report "
        "(report.json, report.html, roofline.png, trace.json.gz); `yes` when every byte of it is unchanged after "
        "the case. *recorded*: no exit code is claimed (the outcome is a choice, not an error: a corrupt cached "
        "ceilings file is measured again, a 5-column terminal gets its report); the row says what happened. Cases "
        "marked *as uid 65534* run through `setpriv` "
        "as nobody, because root reads and writes any file whatever its mode. "
        f"{len(proc_rows)} cases, {len(proc_rows) - len(proc_bad) - len(skipped)} as expected, {len(skipped)} "
        f"skipped, {len(proc_bad)} not.",
        "",
        "| case | exit | kept | verdict | stderr's first line |",
        "|---|---|---|---|---|",
    ]
    for pcase, result in proc_rows:
        first = result["first"].replace("|", "/").replace("`", "'")
        lines.append(f"| {pcase.name} | {result['code']} | {result['kept']} | {result['verdict']} | `{first}` |")
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {options.out}: {len(rows) + len(proc_rows)} cases, {len(bad) + len(proc_bad)} not as expected")
    return 1 if bad or proc_bad else 0


if __name__ == "__main__":
    sys.exit(main())
