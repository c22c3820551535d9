"""Whether a run's ops say its ceilings are stale: measured on a busy machine, ops then run clearly above them.

A compute roof cannot be beaten (cache reuse does not add FLOP/s), so compute-bound time clearly above it means the
roof was measured low. Memory-bound ops above the DRAM roof are often cache hits, so only a large share of the time
there counts. Datasheet ceilings are not measurements and are never called stale.
"""

from __future__ import annotations

from roofline.device.cache import remeasure_command
from roofline.report import Ceilings, Environment, OpRecord

CLEARLY_ABOVE = 1.15
COMPUTE_SHARE = 0.01
COMPUTE_OPS = 5
MEMORY_SHARE = 0.25


def stale_ceilings_note(ops: list[OpRecord], ceilings: Ceilings) -> str | None:
    """A note naming the evidence, then the command on a line of its own (so no wrapping splits it), or None when
    the roofs look sound."""
    if not ceilings.source.startswith("measured"):
        return None
    total = sum(op.time_s for op in ops)
    if total <= 0:
        return None
    above = {bound: [op for op in ops if op.modeled and op.bound == bound and op.efficiency > CLEARLY_ABOVE]
             for bound in ("compute", "memory")}
    share = {bound: sum(op.time_s for op in found) / total for bound, found in above.items()}
    stale = [b for b in ("compute", "memory")
             if share[b] >= (COMPUTE_SHARE if b == "compute" else MEMORY_SHARE)
             or (b == "compute" and len(above[b]) >= COMPUTE_OPS)]
    if not stale:
        return None
    found = [op for b in stale for op in above[b]]
    worst = max(op.efficiency for op in found)
    roofs = " and ".join({"compute": "FLOP/s", "memory": "bandwidth"}[b] for b in stale)
    when = f" at {ceilings.measured_at}" if ceilings.measured_at else ""
    load = (f" (load average {ceilings.load_average[0]:g}" + (f", {ceilings.threads} threads)" if ceilings.threads else ")")
            if ceilings.load_average else "")
    return (f"ceilings look stale: {len(found)} op(s), {100 * sum(share[b] for b in stale):.1f}% of op time, run up to "
            f"{100 * worst:.0f}% of the {roofs} roof measured{when}{load}. Re-measure on a quiet machine:\n"
            f"    {remeasure_command(ceilings)}")


def thread_count_note(environment: Environment | None, ceilings: Ceilings) -> str | None:
    """A CPU run on another number of threads than its measured roofs: its % of roof is against what that many
    threads reach (compute scales about with the threads, memory bandwidth less), so it reads low with fewer
    (OMP_NUM_THREADS=1 against 2-thread roofs read up to 2x low in a model sweep) and can pass 100% with more.
    None for a GPU, a trace (threads not known) or datasheet roofs (no thread count)."""
    if environment is None or not ceilings.device.startswith("cpu"):
        return None
    run, roofs = environment.threads, ceilings.threads
    if not run or not roofs or run == roofs:
        return None
    return (f"threads: this run used {run} CPU thread(s), the CPU roofs were measured with {roofs}: % of roof "
            f"compares it with what {roofs} thread(s) reach. Run with OMP_NUM_THREADS={roofs}, or measure roofs for "
            f"{run} thread(s) (this replaces the cached ones) and pass them with --ceilings FILE:\n"
            f"    OMP_NUM_THREADS={run} roofline ceilings --device cpu --remeasure --json FILE")
