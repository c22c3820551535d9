"""Every kind of bad input tried on the CLI (issue 15), run in-process through roofline.cli.main, with the exit
code and the message each one gives. Writes benchmarks/results/bad_input_cases.md (or the path given).

Each case must end in exit 2 with one `roofline: error: ...` line and no traceback, except the few marked
otherwise (a diff of unrelated runs is not an error: it exits 0 and says so in a warning line).

    PYTHONPATH=src python benchmarks/bad_inputs.py [OUT.md]
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

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


def run_case(argv: list[str]) -> tuple[int | str, str, str]:
    """(exit code, stdout, stderr) of ``roofline ARGV`` in this process; an escaping exception is 'exception'."""
    from roofline.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code: int | str = main(argv)
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
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "results" / "bad_input_cases.md"
    os.environ.setdefault("ROOFLINE_CACHE_DIR", tempfile.mkdtemp(prefix="roofline-cache-"))
    import torch

    from roofline.device import cache_path, get_ceilings, save_ceilings

    quick = get_ceilings("cpu", quick=True)  # a full CPU measurement is not what these cases are about
    if not cache_path(quick.device_name).exists():
        save_ceilings(quick, cache_path(quick.device_name))

    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory(prefix="roofline-bad-") as tmp_name:
        tmp = Path(tmp_name)
        _files(tmp)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            for case in cases(tmp):
                t0 = time.perf_counter()
                code, stdout, stderr = run_case(case.argv)
                seconds = time.perf_counter() - t0
                rows.append((case, code, verdict(case, code, stderr), message(stdout, stderr).replace(tmp_name, "TMP"),
                             seconds))
                print(f"{rows[-1][2]:>6}  {code!s:>3}  {case.name}", flush=True)
        finally:
            os.chdir(cwd)
    bad = [r for r in rows if r[2] != "ok"]
    lines = [
        "# Bad inputs tried on the CLI (issue 15)",
        "",
        f"Generated by `PYTHONPATH=src python benchmarks/bad_inputs.py` on {time.strftime('%Y-%m-%d')}: each case run "
        "in-process through `roofline.cli.main`; TMP is the temporary folder holding the case's files. "
        f"{len(rows)} cases, {len(rows) - len(bad)} as expected (exit 2 with one `roofline: error:` line and no "
        "traceback, or the stated exit code), "
        f"{len(bad)} not.",
        "",
        "| case | exit | verdict | message |",
        "|---|---|---|---|",
    ]
    for case, code, result, text, _ in rows:
        lines.append(f"| {case.name} | {code} | {result} | `{text.replace('|', '/')}` |")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n")
    print(f"wrote {target}: {len(rows)} cases, {len(bad)} not as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
