"""Issue 19: the decode attention kernel alone, at one context, in KV caches of growing length (max_seq).

    PYTHONPATH=src python3 benchmarks/decode_attention_context.py OUT_DIR [--old-kernel FILE]

The kernel's grid covers the whole cache (one launch serves every step of a CUDA graph), so a cache longer
than the context must cost nothing but programs that return at once. For llama-1b's attention (32 query heads,
4 KV heads, head dim 64; fp16) at context 256, in caches of 328 (benchmarks/decode_fast.py's), 2048 (the lab's
max_seq_len) and 8192 slots, for each tuning candidate (cache slots per program): ``--layers`` launches, each
on its own layer's cache, captured as one CUDA graph and replayed ``--replays`` times between two CUDA events;
the configurations of one cache length are timed in alternating rounds and each row gives the median
microseconds per launch over the rounds, with the interquartile range. Every configuration's output is checked against the torch twin
(attention_torch) twice before it is timed: after one eager launch, and after one replay of its graph (synchronised,
so a fault is its own): the largest absolute differences are in the JSON, and a configuration off by more than
CHECK_TOLERANCE is not timed.

Each cache length runs in a process of its own (a CUDA fault poisons its process's context): where one dies, the
configuration it was checking gets the error in its row and the others of that length run again without it.
Every tensor a graph reads or writes lives as long as the graph: torch.cuda.graph empties the allocator's cache
before each capture, so a tensor freed before then leaves the graph pointing at unmapped memory (the first H200
run kept only the graphs of the 328-slot configurations and died of an illegal memory access in the timed rounds).

``--old-kernel FILE``: also time another version of lab/kernels/triton_attention.py side by side, e.g. the one
before issue 19's change: ``git show 7d80a2d:src/roofline/lab/kernels/triton_attention.py > FILE``. It is
launched with the constants its signature names (the old one's SPLITS_PAD/COLS_PAD/CHUNK are computed here).

``--v2``: also version 2 of the kernel (lab/kernels/triton_attention_v2.py: a lone live slice writes the output
itself, no merge phase; 128-512 slots a program), over its own candidates (decode_fast.T_PER_SPLITS_V2, or
``--v2-t-per-split``), as the column "v2" beside the current kernel's ("new"); "v2/new" compares the fastest row of
each at a cache length.

On CPU (``--device cpu`` under TRITON_INTERPRET=1, a smoke test of this script with tiny sizes) the launches run
in Triton's interpreter and are timed by the wall clock: no figure of such a run is a kernel's.
Writes OUT_DIR/decode_attention_context.json and prints a table last.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import os
import statistics
import sys
import time

OLD_COMMIT = "7d80a2d"  # the last commit with the kernel whose cost followed max_seq
CHECK_TOLERANCE = 1e-2  # largest absolute difference from the torch twin a timed configuration may have (fp16)
CHILD_TIMEOUT_S = 150  # one cache length's process (compiles, checks, timed rounds), should one hang


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--context", type=int, default=256, help="the slot decoded (pos): slots before it are live")
    parser.add_argument("--max-seqs", type=int, nargs="+", default=[328, 2048, 8192])
    parser.add_argument("--t-per-split", type=int, nargs="+", default=None,
                        help="cache slots per program (default: the tuning's candidates)")
    parser.add_argument("--shape", type=int, nargs=3, default=[32, 4, 64], metavar=("HEADS", "KV_HEADS", "HEAD_DIM"))
    parser.add_argument("--layers", type=int, default=22, help="caches launched on in turn (llama-1b has 22)")
    parser.add_argument("--replays", type=int, default=20, help="graph replays per timed loop")
    parser.add_argument("--rounds", type=int, default=7, help="alternating timed loops of every configuration")
    parser.add_argument("--old-kernel", help="another triton_attention.py to time side by side")
    parser.add_argument("--v2", action="store_true", help="also time version 2 of the kernel (triton_attention_v2)")
    parser.add_argument("--v2-t-per-split", type=int, nargs="+", default=None,
                        help="version 2's cache slots per program (default: decode_fast.T_PER_SPLITS_V2)")
    parser.add_argument("--device", default="cuda")
    # A cache length's process (see the module docstring): where it writes its progress, what it leaves out.
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--skip", nargs="*", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    import torch

    from roofline.errors import RooflineError
    from roofline.io import atomic_write_text, check_output_dir
    from roofline.lab.kernels import interpreting, triton_available

    device = torch.device(args.device)
    heads, kv_heads, head_dim = args.shape
    problem = ""
    if min(args.max_seqs) <= args.context or args.context < 0:
        problem = f"--context {args.context} must be a slot of every cache (below {min(args.max_seqs)})"
    elif heads % kv_heads or head_dim % 32 or min(args.layers, args.replays, args.rounds) < 1:
        problem = "--shape: heads a multiple of KV heads, head dim a multiple of 32; --layers/--replays/--rounds >= 1"
    elif args.old_kernel and not os.path.isfile(args.old_kernel):
        problem = f"--old-kernel {args.old_kernel}: no such file"
    elif device.type == "cuda" and not torch.cuda.is_available():
        problem = "no CUDA GPU (use --device cpu under TRITON_INTERPRET=1 for the smoke run)"
    elif device.type != "cuda" and not interpreting():
        problem = "on CPU the kernel runs only in Triton's interpreter: set TRITON_INTERPRET=1"
    elif not triton_available():
        problem = "Triton is not importable here"
    if not problem:
        try:
            out_dir = check_output_dir(args.out_dir)
        except RooflineError as exc:
            problem = str(exc)
    if problem:
        print(f"decode_attention_context.py: error: {problem}", file=sys.stderr)
        return 2

    from roofline.lab.decode_fast import T_PER_SPLITS, T_PER_SPLITS_V2

    import triton

    per_splits = list(args.t_per_split or T_PER_SPLITS)
    if args.v2:  # the union, in order; each kernel is timed at its own candidates only (KERNEL_SPLITS)
        v2_splits = list(args.v2_t_per_split or T_PER_SPLITS_V2)
        KERNEL_SPLITS.update(new=set(per_splits), old=set(per_splits), v2=set(v2_splits))
        per_splits = sorted(set(per_splits) | set(v2_splits))
    if args.child:
        kernels = {"new": None}
        if args.v2:
            kernels["v2"] = 2
        if args.old_kernel:
            kernels["old"] = _load_kernel(args.old_kernel)
        progress = _Progress(args.child)
        rows = measure(device, heads, kv_heads, head_dim, args.context, args.max_seqs[0], per_splits, kernels,
                       layers=args.layers, replays=args.replays, rounds=args.rounds, skip=set(args.skip),
                       progress=progress)
        progress.write(rows=rows)
        return 0

    began = time.perf_counter()
    rows = []
    for max_seq in args.max_seqs:
        rows += isolated(args, max_seq, per_splits)
    results = {
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (Triton interpreter)",
        "torch": torch.__version__, "triton": triton.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join(sys.argv), "shape": {"heads": heads, "kv_heads": kv_heads, "head_dim": head_dim},
        "context": args.context, "layers": args.layers, "replays": args.replays, "rounds": args.rounds,
        "old_kernel": args.old_kernel and {"file": args.old_kernel, "meant_as": f"{OLD_COMMIT}'s kernel"},
        "timing": ("median over alternating rounds of the us per launch of a CUDA graph of --layers launches, "
                   "replayed --replays times between CUDA events; iqr_us: the rounds' interquartile range"
                   if device.type == "cuda" else
                   "wall clock of Triton's interpreter on CPU: a smoke test, not a kernel's figure"),
        "isolation": "one process per cache length; rounds alternate the configurations of one cache length",
        "check_tolerance": CHECK_TOLERANCE, "rows": rows, "seconds": time.perf_counter() - began,
    }
    path = out_dir / "decode_attention_context.json"
    atomic_write_text(path, json.dumps(results, indent=1))
    failed = sum("error" in r for r in rows)
    print(f"decode_attention_context.py: {len(rows)} configurations ({failed} failed) in {results['seconds']:.0f} s"
          f" -> {path}")
    print(table(results))
    return 0


class _Progress:
    """A cache length's process tells its parent, one JSON line at a time, how far it got (written at once)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, **record) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())


def _child_argv(args, max_seq: int, progress: str, skip: list[str]) -> list[str]:
    argv = [sys.executable, os.path.abspath(__file__), args.out_dir, "--child", progress, "--max-seqs", str(max_seq),
            "--context", str(args.context), "--shape", *map(str, args.shape), "--layers", str(args.layers),
            "--replays", str(args.replays), "--rounds", str(args.rounds), "--device", args.device]
    if args.t_per_split:
        argv += ["--t-per-split", *map(str, args.t_per_split)]
    if args.old_kernel:
        argv += ["--old-kernel", args.old_kernel]
    if args.v2:
        argv += ["--v2"] + (["--v2-t-per-split", *map(str, args.v2_t_per_split)] if args.v2_t_per_split else [])
    return argv + (["--skip", *skip] if skip else [])


def isolated(args, max_seq: int, per_splits: list[int]) -> list[dict]:
    """One cache length's rows, measured in a process of its own; run again without a configuration it died on."""
    import subprocess
    import tempfile

    kernels = ["new"] + (["v2"] if args.v2 else []) + (["old"] if args.old_kernel else [])
    skip, failed = [], {}
    while True:
        with tempfile.TemporaryDirectory() as tmp:
            progress = os.path.join(tmp, "progress.jsonl")
            try:
                done = subprocess.run(_child_argv(args, max_seq, progress, skip), capture_output=True, text=True,
                                      timeout=CHILD_TIMEOUT_S)
                death = f"exit code {done.returncode}: {_tail(done.stderr)}"
            except subprocess.TimeoutExpired as exc:
                death = f"timed out after {CHILD_TIMEOUT_S} s: {_tail(exc.stderr)}"
            records = []
            if os.path.exists(progress):
                with open(progress) as f:
                    records = [json.loads(line) for line in f if line.endswith("\n")]
        finished = [r["rows"] for r in records if "rows" in r]
        if finished:
            rows = finished[0]
            break
        checking = [r["checking"] for r in records if "checking" in r]
        checked = [r["checked"] for r in records if "checked" in r]
        if checking and len(checked) < len(checking):  # it died checking this configuration: leave it out
            faults = [r["fault"] for r in records if "fault" in r]
            key = checking[-1]
            failed[_key(key["t_per_split"], key["kernel"])] = faults[0] if faults else {
                **key, "error": f"the process died: {death}"}
            skip.append(_key(key["t_per_split"], key["kernel"]))
            continue
        # It died before any configuration's check (e.g. importing) or in the timed rounds: no culprit to leave out.
        when = "in the timed rounds" if checked else "before any check"
        rows = checked or [_row_head(max_seq, p, k, args.shape[1], args.context) for p in per_splits for k in kernels
                           if _key(p, k) not in skip and _times(k, p)]
        rows = [{**r, "error": r.get("error") or f"the process died {when}: {death}"} for r in rows]
        break
    rows = rows + list(failed.values())
    order = {_key(p, k): i for i, (p, k) in enumerate((p, k) for p in per_splits for k in ("new", "v2", "old"))}
    return sorted(rows, key=lambda r: order.get(_key(r["t_per_split"], r["kernel"]), len(order)))


def _row_head(max_seq: int, per_split: int, kernel: str, kv_heads: int, context: int) -> dict:
    from roofline.lab.kernels.attention import splits_for

    return {"max_seq": max_seq, "t_per_split": per_split, "kernel": kernel,
            "programs": kv_heads * splits_for(max_seq, per_split),
            "live_programs": kv_heads * (context // per_split + 1)}


KERNEL_SPLITS: dict[str, set[int]] = {}  # with --v2: each kernel's own slots per program (main fills it)


def _times(kernel: str, per_split: int) -> bool:
    return kernel not in KERNEL_SPLITS or per_split in KERNEL_SPLITS[kernel]


def _key(per_split: int, kernel: str) -> str:
    return f"{per_split}:{kernel}"


def _tail(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return " | ".join(lines[-3:])[-400:] or "(nothing on stderr)"


def _load_kernel(path: str):
    """decode_attention_kernel of another triton_attention.py (imported as a module of its own)."""
    spec = importlib.util.spec_from_file_location("triton_attention_compared", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Triton reads the kernel's source through its module
    spec.loader.exec_module(module)
    return module.decode_attention_kernel


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _launch_other(kernel, qkv, kc, vc, cos, sin, pos, out, scratch, heads, kv_heads, per_split):
    """Another version of the kernel, with the constants its signature names (PDL off, 4 warps as by default)."""
    from roofline.lab.kernels.attention import launch_constants

    head_dim, max_seq = kc.shape[-1], kc.shape[2]
    consts = launch_constants(heads, kv_heads, head_dim, max_seq, per_split, min(per_split, 64))
    splits, cols = consts["SPLITS"], _pow2(heads // kv_heads * head_dim)
    consts.update(SPLITS_PAD=_pow2(splits), COLS_PAD=cols, CHUNK=max(16, min(cols, 2048 // _pow2(splits))), PDL=False)
    names = inspect.signature(getattr(kernel, "fn", kernel)).parameters
    kernel[(kv_heads, splits)](qkv, kc, vc, cos, sin, pos, out, scratch.partial, scratch.counters,
                               1.0 / math.sqrt(head_dim), max_seq, **{k: v for k, v in consts.items() if k in names},
                               num_warps=4)


def measure(device, heads, kv_heads, head_dim, context, max_seq, per_splits, kernels, *, layers, replays, rounds,
            skip=frozenset(), progress=None) -> list[dict]:
    """One cache length's configurations: each checked (eagerly, then its graph's first replay), then timed."""
    import torch

    from roofline.lab.kernels.attention import attention_torch, decode_attention, scratch_floats, splits_for
    from roofline.lab.kernels.gemv import Scratch
    from roofline.models.llama import LlamaConfig, rope_tables

    report = progress.write if progress else (lambda **record: None)
    torch.manual_seed(0)
    dt = torch.float16
    cos, sin = (t.to(device, dt) for t in rope_tables(LlamaConfig(heads * head_dim, 1, heads, kv_heads, 64, 10),
                                                      max_seq))
    qkv = torch.randn((heads + 2 * kv_heads) * head_dim, dtype=dt, device=device) * 0.5
    pos = torch.tensor([context], device=device)
    caches = [(torch.randn(1, kv_heads, max_seq, head_dim, dtype=dt, device=device),
               torch.randn(1, kv_heads, max_seq, head_dim, dtype=dt, device=device)) for _ in range(layers)]
    first, last = (attention_torch(qkv, kc.clone(), vc.clone(), cos, sin, pos,
                                   torch.empty(heads * head_dim, dtype=dt, device=device), n_heads=heads,
                                   n_kv_heads=kv_heads) for kc, vc in (caches[0], caches[-1]))
    scratch = Scratch(device, scratch_floats(kv_heads, heads, head_dim, splits_for(max_seq, min(per_splits))),
                      max(64, kv_heads))
    out = torch.empty_like(first)
    configs, timers = [], {}
    for per_split in per_splits:
        for name, kernel in kernels.items():
            if _key(per_split, name) in skip or not _times(name, per_split):
                continue

            def launch_one(kc, vc, kernel=kernel, per_split=per_split):
                if kernel is None or kernel == 2:
                    decode_attention(qkv, kc, vc, cos, sin, pos, out, n_heads=heads, n_kv_heads=kv_heads,
                                     scratch=scratch, t_per_split=per_split, version=2 if kernel == 2 else 1)
                else:
                    _launch_other(kernel, qkv, kc, vc, cos, sin, pos, out, scratch, heads, kv_heads, per_split)

            def launch_all(launch_one=launch_one):
                for kc, vc in caches:
                    launch_one(kc, vc)

            key = (per_split, name)
            row = _row_head(max_seq, per_split, name, kv_heads, context)
            report(checking=row)
            try:
                scratch.counters.zero_()  # whatever an earlier configuration left (it may have failed half-way)
                launch_one(*caches[0])
                row["max_abs_error_vs_torch"] = (out.float() - first.float()).abs().max().item()
                row["counters_reset"] = int(scratch.counters.abs().sum()) == 0
                timer = _Timer(launch_all, device, layers, replays)
                row["graph_max_abs_error_vs_torch"] = (out.float() - last.float()).abs().max().item()
                row["counters_reset"] &= int(scratch.counters.abs().sum()) == 0
                worst = max(row["max_abs_error_vs_torch"], row["graph_max_abs_error_vs_torch"])
                if not worst <= CHECK_TOLERANCE:
                    row["error"] = f"off the torch twin by {worst:.3g} (more than {CHECK_TOLERANCE}): not timed"
                elif not row["counters_reset"]:
                    row["error"] = "arrival counters left non-zero: not timed"
                else:
                    timers[key] = timer
            except Exception as exc:  # noqa: BLE001 - one configuration's failure is its row
                row["error"] = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
                if _poisoned(device):  # a CUDA fault: nothing after it in this process would be its own
                    report(fault=row)
                    sys.stdout.flush()
                    os._exit(3)
            report(checked=row)
            configs.append((key, row))
    samples = {key: [] for key in timers}
    for _ in range(rounds):
        for key, timer in timers.items():
            samples[key].append(timer())
    rows = []
    for key, row in configs:
        if key in samples:
            q = statistics.quantiles(samples[key], n=4) if len(samples[key]) > 1 else [samples[key][0]] * 3
            row.update(median_us=statistics.median(samples[key]), iqr_us=[q[0], q[2]], rounds_us=samples[key])
        rows.append(row)
    return rows


def _poisoned(device) -> bool:
    """The CUDA context is unusable (a sticky error, such as an illegal memory access, answers every later call)."""
    import torch

    if device.type != "cuda":
        return False
    try:
        torch.cuda.synchronize(device)
        torch.zeros(1, device=device).item()
    except Exception:  # noqa: BLE001 - whatever it raises, the context is gone
        return True
    return False


class _Timer:
    """Microseconds per launch of one timed loop of ``launch_all`` (on CUDA: of its graph, replayed ``replays`` times).

    Made, it has run ``launch_all`` once more, synchronised: on CUDA as the graph's first replay, so a fault there is
    this configuration's. It holds ``launch_all``, hence every tensor the graph reads or writes (a graph does not)."""

    def __init__(self, launch_all, device, launches: int, replays: int) -> None:
        import torch

        self.launch_all, self.device, self.launches, self.replays = launch_all, device, launches, replays
        self.graph = None
        if device.type != "cuda":
            launch_all()
            return
        launch_all()
        torch.cuda.synchronize(device)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            launch_all()
        self.graph.replay()
        torch.cuda.synchronize(device)
        self.start, self.end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def __call__(self) -> float:
        if self.graph is None:
            began = time.perf_counter()
            self.launch_all()
            return 1e6 * (time.perf_counter() - began) / self.launches
        self.start.record()
        for _ in range(self.replays):
            self.graph.replay()
        self.end.record()
        self.end.synchronize()
        return 1e3 * self.start.elapsed_time(self.end) / (self.replays * self.launches)


def table(results: dict) -> str:
    """One line per cache length and slots per program: each kernel's median us per launch (IQR)."""
    shape = results["shape"]
    kernels = list(dict.fromkeys(r["kernel"] for r in results["rows"]))
    head = (f"attention {shape['heads']}/{shape['kv_heads']}x{shape['head_dim']} at context {results['context']} "
            f"on {results['gpu']} ({results['timing'].split(';')[0]})\n\n"
            f"| max_seq | slots/program | programs (live) | " + " | ".join(f"{k} us (IQR)" for k in kernels)
            + (" | new/old |" if "old" in kernels else " |"))
    lines = [head, "|" + "---|" * (3 + len(kernels) + ("old" in kernels))]
    by = {(r["max_seq"], r["t_per_split"], r["kernel"]): r for r in results["rows"]}
    for max_seq, per_split in dict.fromkeys((r["max_seq"], r["t_per_split"]) for r in results["rows"]):
        cells, medians = [], {}
        for k in kernels:
            r = by.get((max_seq, per_split, k))
            if r is None:
                cells.append("-")
            elif "median_us" in r:
                medians[k] = r["median_us"]
                cells.append(f"{r['median_us']:.2f} ({r['iqr_us'][0]:.2f}-{r['iqr_us'][1]:.2f})")
            else:
                cells.append("failed")
        r = next(by[(max_seq, per_split, k)] for k in kernels if (max_seq, per_split, k) in by)
        ratio = [f"{medians['new'] / medians['old']:.2f}" if {"new", "old"} <= set(medians) else "-"] \
            if "old" in kernels else []
        lines.append(f"| {max_seq} | {per_split} | {r['programs']} ({r['live_programs']}) | "
                     + " | ".join(cells + ratio) + " |")
    if "v2" in kernels:
        lines += ["", "| max_seq | new: best us (slots/program) | v2: best us (slots/program) | v2/new |", "|---|---:|---:|---:|"]
        for max_seq, best in best_per_kernel(results).items():
            new, v2 = best.get("new"), best.get("v2")
            cell = lambda b: f"{b[0]:.2f} ({b[1]})" if b else "failed"  # noqa: E731
            lines.append(f"| {max_seq} | {cell(new)} | {cell(v2)} | "
                         + (f"{v2[0] / new[0]:.2f} |" if new and v2 else "- |"))
    return "\n".join(lines)


def best_per_kernel(results: dict) -> dict[int, dict[str, tuple[float, int]]]:
    """Per cache length, each kernel's fastest timed row: (median us per launch, slots per program)."""
    best: dict[int, dict[str, tuple[float, int]]] = {}
    for r in results["rows"]:
        if "median_us" in r:
            seen = best.setdefault(r["max_seq"], {}).get(r["kernel"])
            if seen is None or r["median_us"] < seen[0]:
                best[r["max_seq"]][r["kernel"]] = (r["median_us"], r["t_per_split"])
    return best


if __name__ == "__main__":
    sys.exit(main())
