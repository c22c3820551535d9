"""Mutation testing of the analysis layer (count/, analyze/, capture/kineto.py, doctor/) with cosmic-ray.

Why cosmic-ray rather than mutmut: mutmut 3 runs mutants through trampolines it puts in place of each function and
skips decorated functions, and every formula in count/ is a decorated (``@register``) function; cosmic-ray
mutates the source file itself (decorators included), runs any test command, and keeps its progress in a
SQLite session, so a run cut short by its time budget still reports what it ran. Both run on Python 3.11.

Each module's mutants are run against a targeted, fast test subset (below), in a temporary copy of the repo, so
the working tree is never mutated. With ``--sample N`` each module runs N mutants drawn at random (seeded); the
budget is shared out over the modules still to run. The report states how many mutants each module has and how
many were run: a partial run is a sample, not a score for the whole module.

    PYTHONPATH=src nice -n 19 python benchmarks/mutation.py --budget-s 3600 --sample 20
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from roofline.io import atomic_write_text  # noqa: E402

PY = sys.executable
CR = str(Path(PY).parent / "cosmic-ray") if (Path(PY).parent / "cosmic-ray").exists() else "cosmic-ray"
PYTEST = f"{PY} -m pytest -x -q -p no:cacheprovider"
TESTS = {
    "count": "tests/count/test_formula_values.py tests/count/test_bytes.py tests/count/test_flop_parity.py",
    "analyze": ("tests/analyze/test_trace_invariants.py tests/analyze/test_pinned_numbers.py "
                "tests/analyze/test_roofline.py tests/analyze/test_attribution.py tests/analyze/test_diff.py"),
    "analyze/live.py": "tests/analyze/test_live_join.py tests/analyze/test_analyze_model.py -k 'not cli'",
    "capture/kineto.py": ("tests/capture/test_kineto.py tests/capture/test_kineto_bad_input.py "
                          "tests/analyze/test_trace_invariants.py"),
    "doctor": "tests/doctor tests/distributed/test_merge.py -k 'not lab_case'",  # distributed rules: test_merge
}
# The review re-runs one survivor at a time: the value tests written for the survivors are enough there.
REVIEW_TESTS = {
    "count": "tests/count/test_formula_values.py tests/count/test_bytes.py",
    "analyze": TESTS["analyze"] + " tests/analyze/test_join_edges.py",
    "analyze/live.py": "tests/analyze/test_live_join.py",
}
PACKAGES = {"count": "count/*.py", "analyze": "analyze/*.py", "capture/kineto.py": "capture/kineto.py",
            "doctor": "doctor/**/*.py"}


def _modules(only: list[str] | None) -> list[tuple[str, str]]:
    """(package, module path under src/roofline) of every target file."""
    root = REPO / "src" / "roofline"
    out = []
    for package, pattern in PACKAGES.items():
        for path in sorted(root.glob(pattern)):
            rel = str(path.relative_to(root))
            if path.name == "__init__.py" and path.stat().st_size < 200:
                continue
            if only and not any(rel.startswith(o) for o in only):
                continue
            out.append((package, rel))
    return out


def _tests_for(package: str, rel: str) -> str:
    return TESTS.get(rel, TESTS[package])


def _config(workdir: Path, rel: str, tests: str, timeout: float) -> Path:
    cfg = workdir / f"cr-{rel.replace('/', '_')}.toml"
    cfg.write_text(
        "[cosmic-ray]\n"
        f'module-path = "src/roofline/{rel}"\n'
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f'test-command = "{PYTEST} {tests}"\n'
        "\n[cosmic-ray.distributor]\nname = \"local\"\n"
    )
    return cfg


def _env(workdir: Path, cache: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(workdir / "src"), ROOFLINE_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1",
                ROOFLINE_HYPOTHESIS_EXAMPLES="5", OMP_NUM_THREADS="1")


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where type annotations sit. Every module here has ``from __future__ import annotations``: annotations are
    never evaluated, so a mutant inside one (``X | None`` -> ``X & None``) is equivalent by construction."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        targets = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            targets.append(node.returns)
        elif isinstance(node, ast.arg):
            targets.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            targets.append(node.annotation)
        for t in targets:
            if t is not None:
                spans.append(((t.lineno, t.col_offset), (t.end_lineno, t.end_col_offset)))
    return spans


def in_annotation(pos: tuple[int, int], spans) -> bool:
    return any(start <= tuple(pos) < end for start, end in spans)


def _sample(db_path: Path, source: str, n: int, seed: int) -> tuple[int, int]:
    """Skip mutants inside annotations (equivalent), then all but n random others; returns (mutants, in
    annotations)."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    spans = annotation_spans(source)
    with use_db(str(db_path), WorkDB.Mode.open) as db:
        items = list(db.work_items)
        annotated = [i.job_id for i in items if in_annotation(i.mutations[0].start_pos, spans)]
        skip = set(annotated)
        rest = [i.job_id for i in items if i.job_id not in skip]
        if n and len(rest) > n:
            keep = set(random.Random(seed).sample(rest, n))
            skip.update(j for j in rest if j not in keep)
        if skip:
            db.set_multiple_results(sorted(skip), WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
        return len(items), len(annotated)


def _results(db_path: Path) -> list[dict]:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    rows = []
    with use_db(str(db_path), WorkDB.Mode.open) as db:
        items = {i.job_id: i for i in db.work_items}
        for job_id, result in db.results:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            spec = items[job_id].mutations[0]
            outcome = result.test_outcome.value if result.test_outcome else result.worker_outcome.value
            if result.worker_outcome == WorkerOutcome.ABNORMAL and "timeout" in (result.output or "").lower():
                outcome = "timeout"
            rows.append({"line": spec.start_pos[0], "operator": spec.operator_name.removeprefix("core/"),
                         "outcome": outcome if outcome != TestOutcome.INCOMPETENT.value else "incompetent",
                         "diff": "\n".join(l for l in (result.diff or "").splitlines()
                                           if l.startswith(("+", "-")) and not l.startswith(("+++", "---")))})
    return rows


def run(modules: list[tuple[str, str]], budget_s: float, sample: dict[str, int], seed: int, timeout: float) -> dict:
    start = time.monotonic()
    per_module: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="roofline-mutation-") as tmp:
        workdir = Path(tmp) / "repo"
        workdir.mkdir()
        for name in ("src", "tests"):
            shutil.copytree(REPO / name, workdir / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        shutil.copy2(REPO / "pyproject.toml", workdir / "pyproject.toml")
        shared = (REPO.parent / "shared").resolve()
        if shared.exists():
            (Path(tmp) / "shared").symlink_to(shared)
        cache = Path(tmp) / "cache"
        env = _env(workdir, cache)
        for i, (package, rel) in enumerate(modules):
            left = budget_s - (time.monotonic() - start)
            if left < 30:
                per_module[rel] = {"package": package, "mutants": None, "run": 0, "note": "budget spent"}
                continue
            share = left / (len(modules) - i)
            tests = _tests_for(package, rel)
            cfg = _config(workdir, rel, tests, timeout)
            db = workdir / f"{rel.replace('/', '_')}.sqlite"
            subprocess.run([CR, "init", str(cfg), str(db)], cwd=workdir, env=env, check=True,
                           capture_output=True)
            original = (workdir / "src" / "roofline" / rel).read_bytes()
            total, annotated = _sample(db, original.decode(), sample.get(package, sample.get("", 0)), seed)
            began = time.monotonic()
            try:
                subprocess.run(["nice", "-n", "19", CR, "exec", str(cfg), str(db)], cwd=workdir, env=env,
                               capture_output=True, timeout=share)
                cut = False
            except subprocess.TimeoutExpired:
                cut = True
            finally:
                (workdir / "src" / "roofline" / rel).write_bytes(original)  # a cut run may leave a mutant behind
            rows = _results(db)
            counts = defaultdict(int)
            for r in rows:
                counts[r["outcome"]] += 1
            per_module[rel] = {"package": package, "tests": tests, "mutants": total,
                               "equivalent_annotation": annotated, "run": len(rows),
                               "killed": counts["killed"], "survived": counts["survived"],
                               "incompetent": counts["incompetent"], "timeout": counts["timeout"],
                               "other": len(rows) - counts["killed"] - counts["survived"] - counts["incompetent"]
                               - counts["timeout"], "seconds": round(time.monotonic() - began, 1), "cut_short": cut,
                               "survivors": [r for r in rows if r["outcome"] == "survived"]}
            m = per_module[rel]
            print(f"{rel:40s} {m['run']:4d}/{total:<5d} killed {m['killed']:4d} survived {m['survived']:3d} "
                  f"{m['seconds']:7.1f}s{' (cut)' if cut else ''}", file=sys.stderr, flush=True)
    packages: dict[str, dict] = {}
    for rel, m in per_module.items():
        p = packages.setdefault(m["package"], defaultdict(int))
        for key in ("mutants", "run", "killed", "survived", "incompetent", "timeout"):
            p[key] += m.get(key) or 0
    for p in packages.values():
        judged = p["killed"] + p["survived"] + p["timeout"]
        p["score_killed_of_run"] = round((p["killed"] + p["timeout"]) / judged, 3) if judged else None
        p["fraction_run"] = round(p["run"] / p["mutants"], 3) if p["mutants"] else 0.0
    return {"tool": "cosmic-ray " + _version(), "sample_per_module": sample, "seed": seed,
            "budget_s": budget_s, "elapsed_s": round(time.monotonic() - start, 1),
            "how": "each module's mutants (a seeded random sample when sample > 0) run against the module's test "
                   "subset in a temporary copy of the repo; killed = the subset failed (timeouts count as killed)",
            "packages": {k: dict(v) for k, v in packages.items()}, "modules": per_module}


# Survivors judged by hand: (module, the mutated line as cosmic-ray wrote it) -> why it cannot change a result.
EQUIVALENT = {
    ("count/counting.py", "if len(_NAME_CACHE) != 100_000:"):
        "the name cache's size guard: past 100,000 names it only stops caching; every count is the same",
    ("count/foreach.py", '_PER_ELEMENT.update({"pow": 4, "norm": 2, "max": 1, "copy": 0, "zero": -1})'):
        "_foreach_zero_'s per-element figure is only checked for presence; its branch returns 0 FLOPs",
    ("analyze/attribution.py", "target = ext_op.get(external_id, - 2)"):
        "the default only has to be negative: every negative target is 'unattributed'",
    ("analyze/pipeline.py", 'return trace.has_gpu and ev.total_kernel_us <= 0 and not ev.name.startswith("aten::")'):
        "an event's kernel time sums durations, and the reader drops events whose dur is not >= 0: never below 0",
    ("count/embedding.py", "if indices.ndim >= 2:"):
        "embedding_bag takes 1-D or 2-D indices only: >= 2 and == 2 agree on every valid call",
    ("count/foreach.py", "lists = [flatten_metas(call.arg(i)) for i in range( 0, 5)]"):
        "reads params as grads: a fused optimizer's grads have the params' shapes and dtypes, so the bytes agree",
    ("count/reduction.py", 'if call.name >= "aten::topk" and index is not None:'):
        "no other name this formula is registered for (kthvalue, median, nanmedian, mode) sorts after aten::topk",
    ("count/reduction.py", '"aten::sum": (1, 2, 1), "aten::mean": (1, 1, 1), "aten::nansum": (1, 2, 1), "aten::nanmean": (1, 2, 1),'):
        "keepdim read from the dims list: keepdim changes the output's shape, never its size, FLOPs or bytes",
    ("count/shapes.py", "in_cat = [m for m in metas if _category(m.dtype) >= best_cat]"):
        "best_cat is the maximum category, so >= best_cat and == best_cat select the same tensors",
    ("analyze/roofline.py", "if op.flops <= 0 and op.bytes == 0:"):
        "FLOPs and bytes are counts, never below 0: <= 0 and == 0 agree",
    ("count/loss.py", "loss_elements = target.numel if reduction is _REDUCTION_NONE else 1"):
        "reduction is a small int (0, 1, 2): CPython interns those, so `is` and `==` agree",
    ("count/inductor.py", "out, a = buffers[1], buffers[0]"):
        "a GEMM template's FLOPs are 2 x numel(a) x last dim of the buffer read as out; b and the bias end in N too",
    ("count/inductor.py", "out, a = buffers[~1], buffers[0]"):
        "a GEMM template's FLOPs are 2 x numel(a) x last dim of the buffer read as out; b and the bias end in N too",
    ("count/inductor.py", "(width != 1 and bare in FLOPS_PER_ELEMENT):"):
        "width counts parts and is never below 1, so != 1 and > 1 agree",
}


def _apply(text: str, survivor: dict) -> str | None:
    """The module's text with the survivor's one-line change applied, or None when the line no longer matches."""
    minus = [l[1:] for l in survivor["diff"].splitlines() if l.startswith("-")]
    plus = [l[1:] for l in survivor["diff"].splitlines() if l.startswith("+")]
    lines = text.splitlines(keepends=True)
    i = survivor["line"] - 1
    if len(minus) != 1 or len(plus) != 1 or i >= len(lines) or lines[i].rstrip("\n") != minus[0]:
        return None
    lines[i] = plus[0] + "\n"
    return "".join(lines)


def review(report: dict, budget_s: float) -> dict:
    """Judge every survivor again: equivalent (inside an annotation, or listed in EQUIVALENT), or re-planted into
    a copy of today's source and its module's test subset re-run (``killed_now`` when today's tests kill it)."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="roofline-mutation-review-") as tmp:
        workdir = Path(tmp) / "repo"
        for name in ("src", "tests"):
            shutil.copytree(REPO / name, workdir / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        shared = (REPO.parent / "shared").resolve()
        if shared.exists():
            (Path(tmp) / "shared").symlink_to(shared)
        env = _env(workdir, Path(tmp) / "cache")
        order = {"analyze": 0, "capture/kineto.py": 1, "count": 2, "doctor": 3}  # the targets first
        for rel, m in sorted(report["modules"].items(), key=lambda kv: order.get(kv[1]["package"], 9)):
            path = workdir / "src" / "roofline" / rel
            if not path.exists():
                continue
            original = path.read_text()
            spans = annotation_spans(original)
            for sv in m.get("survivors", []):
                plus = next((l[1:].strip() for l in sv["diff"].splitlines() if l.startswith("+")), "")
                key = (rel, plus)
                if sv.get("review", "").startswith(("equivalent", "killed_now")):
                    continue  # judged by an earlier review of the same mutant
                if in_annotation((sv["line"], _column(original, sv)), spans):
                    sv["review"] = "equivalent: inside a type annotation (never evaluated)"
                elif key in EQUIVALENT:
                    sv["review"] = "equivalent: " + EQUIVALENT[key]
                elif time.monotonic() - start > budget_s:
                    sv.setdefault("review", "not re-checked (review budget spent)")  # keeps an earlier verdict
                else:
                    mutated = _apply(original, sv)
                    if mutated is None:
                        sv["review"] = "not re-checked (source line changed since the run)"
                        continue
                    try:
                        path.write_text(mutated)
                        tests = REVIEW_TESTS.get(rel, REVIEW_TESTS.get(m["package"], _tests_for(m["package"], rel)))
                        cmd = f"nice -n 19 {PYTEST} {tests}"
                        rc = subprocess.run(cmd, shell=True, cwd=workdir, env=env, capture_output=True).returncode
                    finally:
                        path.write_text(original)
                    sv["review"] = "killed_now: today's tests fail on it" if rc not in (0, 5) else "still survives"
    _tally(report)
    return report


def _column(text: str, survivor: dict) -> int:
    """Column of the first changed character on the survivor's line (where cosmic-ray's mutation starts)."""
    minus = next((l[1:] for l in survivor["diff"].splitlines() if l.startswith("-")), "")
    plus = next((l[1:] for l in survivor["diff"].splitlines() if l.startswith("+")), "")
    return next((i for i, (a, b) in enumerate(zip(minus, plus)) if a != b), 0)


def _tally(report: dict) -> None:
    for p in report["packages"].values():
        for key in ("equivalent", "killed_after_review", "survived_after_review"):
            p[key] = 0
    for m in report["modules"].values():
        p = report["packages"][m["package"]]
        killed, survived, equivalent = m.get("killed", 0) + m.get("timeout", 0), 0, 0
        for sv in m.get("survivors", []):
            verdict = sv.get("review", "")
            if verdict.startswith("equivalent"):
                equivalent += 1
            elif verdict.startswith("killed_now"):
                killed += 1
            else:
                survived += 1
        p["equivalent"] += equivalent
        p["killed_after_review"] += killed
        p["survived_after_review"] += survived
    for p in report["packages"].values():
        judged = p["killed_after_review"] + p["survived_after_review"]
        p["score_after_review"] = round(p["killed_after_review"] / judged, 3) if judged else None


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("cosmic-ray")
    except Exception:  # noqa: BLE001 - version is informative only
        return "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-s", type=float, default=3600.0, help="wall-clock budget for the whole run")
    parser.add_argument("--sample", nargs="*", default=["0"],
                        help="mutants per module (0: all), or PACKAGE=N per package (count=6 analyze=10 ...)")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per test run (a hang is a kill)")
    parser.add_argument("--only", nargs="*", help="module paths under src/roofline to run (prefixes)")
    parser.add_argument("-o", "--out", default=str(REPO / "benchmarks" / "results" / "mutation.json"))
    parser.add_argument("--review-only", action="store_true",
                        help="re-judge the survivors of the report at --out (no new mutants)")
    parser.add_argument("--review-budget-s", type=float, default=900.0)
    args = parser.parse_args()
    if args.review_only:
        report = review(json.loads(Path(args.out).read_text()), args.review_budget_s)
        atomic_write_text(args.out, json.dumps(report, indent=1) + "\n")
        for name, p in report["packages"].items():
            print(f"{name:20s} killed {p['killed_after_review']} survived {p['survived_after_review']} "
                  f"equivalent {p['equivalent']} score {p['score_after_review']}")
        return 0
    if shutil.which(CR) is None:
        raise SystemExit("mutation: cosmic-ray is not installed (pip install -e '.[dev]')")
    sample = {}
    for item in args.sample:
        package, _, n = item.rpartition("=")
        sample[package] = int(n)
    result = review(run(_modules(args.only), args.budget_s, sample, args.seed, args.timeout), args.review_budget_s)
    atomic_write_text(args.out, json.dumps(result, indent=1) + "\n")
    for name, p in result["packages"].items():
        print(f"{name:20s} run {p['run']}/{p['mutants']} killed {p['killed']} survived {p['survived']} "
              f"score {p['score_killed_of_run']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
