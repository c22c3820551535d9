"""Re-plant the twelve bugs of issue 16, one at a time, and show that the suite kills each.

Each bug is a text patch applied to a temporary copy of src/; the bug's test subset then runs against that
copy (PYTHONPATH points at it, so the package under test is the patched one: the control run checks that the
import really comes from the copy). A bug is ``killed`` when its subset fails, ``survived`` when it passes,
``not_applied`` when the patch's text is no longer in the source (the code moved: update the patch).
The control run (no patch) must pass, or the kills mean nothing.

    PYTHONPATH=src python benchmarks/plant_bugs.py [--only NAME ...] [-o benchmarks/results/planted_bugs.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from roofline.io import atomic_write_text  # noqa: E402

TRACE_TESTS = ["tests/analyze/test_trace_invariants.py"]


@dataclass(frozen=True)
class Bug:
    name: str
    what: str
    path: str  # under src/roofline
    old: str
    new: str
    tests: tuple[str, ...]


BUGS = [
    Bug("trace-time-1e3", "op time from a trace divided by 1e3 instead of 1e6", "analyze/pipeline.py",
        "time_s=_event_time_us(trace, c.event, c.self_only, children) / 1e6,",
        "time_s=_event_time_us(trace, c.event, c.self_only, children) / 1e3,", tuple(TRACE_TESTS)),
    Bug("chosen-with-children", "a chosen op counted together with its children", "analyze/join.py",
        "        if is_modeled(op) and not (kids and is_composite_op(op.name)):\n            chosen.append(Chosen(idx))\n",
        "        if is_modeled(op) and not (kids and is_composite_op(op.name)):\n            chosen.append(Chosen(idx))\n"
        "            stack.extend(reversed(kids))\n", tuple(TRACE_TESTS)),
    Bug("self-kernels-only", "GPU op time from its own kernels only, children dropped", "analyze/pipeline.py",
        "return op.self_kernel_us if self_only else op.total_kernel_us", "return op.self_kernel_us",
        tuple(TRACE_TESTS)),
    Bug("idle-launch-no-2x", "the idle-to-launch rule without its 'under 2x launch overhead' condition",
        "analyze/roofline.py",
        "idle_before_s > op.time_s and op.time_s < LAUNCH_IDLE_FACTOR * launch:", "idle_before_s > op.time_s:",
        ("tests/analyze/test_pinned_numbers.py", "tests/analyze/test_roofline.py")),
    Bug("join-first-recorded", "the live join pairing every event with the first recorded op of that name",
        "analyze/join.py", "pairs[pos] = recs[k]\n            taken.add(recs[k])",
        "pairs[pos] = recs[0]\n            taken.add(recs[0])", ("tests/analyze/test_live_join.py",)),
    Bug("softmax-10", "softmax at 10 FLOPs per element instead of 5", "count/softmax.py",
        "FORWARD_FLOPS_PER_ELEMENT = 5", "FORWARD_FLOPS_PER_ELEMENT = 10",
        ("tests/count/test_formula_values.py::test_softmax_family",)),
    Bug("conv-output-x2", "conv output bytes doubled", "count/conv.py",
        "written = prod(out_shape) * x.itemsize", "written = 2 * prod(out_shape) * x.itemsize",
        ("tests/count/test_formula_values.py::test_convolution_family",)),
    Bug("copy-bandwidth-x2", "copy bandwidth doubled", "device/measure.py",
        '"copy": (lambda: dst.copy_(src), 2 * nbytes),', '"copy": (lambda: dst.copy_(src), 4 * nbytes),',
        ("tests/device/test_bandwidth_bytes.py",)),
    Bug("diff-noise-max", "the diff's noise as the max of two spreads instead of their sum", "analyze/diff.py",
        "ta.spread_s + tb.spread_s,", "max(ta.spread_s, tb.spread_s),",
        ("tests/analyze/test_pinned_numbers.py", "tests/analyze/test_diff.py")),
    Bug("half-align-64", "the half-precision alignment 8 -> 64", "doctor/rules/half_alignment.py",
        "ALIGN = 8", "ALIGN = 64", ("tests/doctor/test_rule_boundaries.py", "tests/doctor/test_half_alignment.py")),
    Bug("recompute-run-5", "the recomputation rule's minimum run 3 -> 5", "doctor/rules/recomputation.py",
        "MIN_RUN = 3", "MIN_RUN = 5", ("tests/doctor/test_rule_boundaries.py", "tests/doctor/test_recomputation.py")),
    Bug("launch-no-gap", "the launch-overhead rule without its gap condition", "doctor/rules/launch_overhead.py",
        "starved = prev_end is not None and gap >= k.dur_s and", "starved = prev_end is not None and",
        ("tests/doctor/test_rule_boundaries.py", "tests/doctor/test_launch_overhead.py")),
]


def _pytest(src: Path, tests: tuple[str, ...], timeout: float) -> tuple[int, float, str]:
    env = dict(os.environ, PYTHONPATH=f"{src}{os.pathsep}{REPO / 'tests' / 'doctor'}",
               ROOFLINE_PLANTED_SRC=str(src))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:randomly", *tests]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, time.perf_counter() - start, "timeout"
    lines = [l for l in (proc.stdout + proc.stderr).splitlines() if l.strip()]
    return proc.returncode, time.perf_counter() - start, lines[-1] if lines else ""


def _imports_from(src: Path) -> bool:
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run([sys.executable, "-c", "import roofline; print(roofline.__file__)"], env=env,
                         capture_output=True, text=True, cwd=REPO).stdout.strip()
    return out.startswith(str(src))


def run(bugs: list[Bug], timeout: float) -> dict:
    results = []
    with tempfile.TemporaryDirectory(prefix="planted-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(REPO / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        if not _imports_from(src):
            raise SystemExit("plant_bugs: the temporary copy is not what `import roofline` loads; check PYTHONPATH")
        subsets = sorted({t for b in bugs for t in b.tests})
        rc, secs, tail = _pytest(src, tuple(subsets), timeout)
        control = {"tests": subsets, "passed": rc == 0, "seconds": round(secs, 1), "tail": tail}
        if rc != 0:
            print(f"control run failed ({tail}); kills below are not meaningful", file=sys.stderr)
        for bug in bugs:
            target = src / "roofline" / bug.path
            original = target.read_text()
            if original.count(bug.old) != 1:
                results.append({"bug": bug.name, "what": bug.what, "file": bug.path, "status": "not_applied",
                                "why": f"patch text found {original.count(bug.old)} times"})
                continue
            try:
                target.write_text(original.replace(bug.old, bug.new))
                rc, secs, tail = _pytest(src, bug.tests, timeout)
            finally:
                target.write_text(original)
            status = "killed" if rc not in (0, 5) else "survived"
            results.append({"bug": bug.name, "what": bug.what, "file": bug.path, "tests": list(bug.tests),
                            "status": status, "pytest_rc": rc, "seconds": round(secs, 1), "tail": tail})
            print(f"{bug.name:24s} {status:9s} {secs:6.1f}s  {tail}", file=sys.stderr)
    killed = sum(r["status"] == "killed" for r in results)
    return {"what": "issue 16's planted bugs, each applied alone to a copy of src/ and its test subset run",
            "control": control, "bugs": results, "killed": killed, "total": len(results)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="bug names to plant (default: all)")
    parser.add_argument("-o", "--out", default=str(REPO / "benchmarks" / "results" / "planted_bugs.json"))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per pytest run")
    args = parser.parse_args()
    bugs = [b for b in BUGS if not args.only or b.name in args.only]
    result = run(bugs, args.timeout)
    atomic_write_text(args.out, json.dumps(result, indent=1) + "\n")
    print(f"{result['killed']}/{result['total']} killed -> {args.out}")
    return 0 if result["killed"] == result["total"] and result["control"]["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
