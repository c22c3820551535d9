"""A profiled run's raw record (capture.profiling.ProfileRecord) -> its Report, undiagnosed.

The per-op roofline comes from the exported trace (report_from_trace); this module adds what only the live run
knows: true vs profiled step time, the live sync sites, and how the schedule went (``Report.profile``).
"""

from __future__ import annotations

from collections.abc import Callable

from roofline.analyze.inflated_profile import note_inflated_profile
from roofline.analyze.pipeline import report_from_trace
from roofline.analyze.roofline import host_time_by_op
from roofline.analyze.unused_gpu import drop_no_kernels_note, ran_on_host_only, record_unused_gpu
from roofline.capture.kineto import NO_STEPS_WARNING, load_trace
from roofline.capture.trace_model import Trace
from roofline.capture.profiling import ProfileRecord
from roofline.report import Ceilings, Environment, ProfileInfo, Report, Timing

TIMING_METHOD = (
    "wall time between step() calls (time.perf_counter), the device synchronised at each boundary; "
    "the true steps ran without the profiler or any detector"
)

_AFTER_PROFILER_CAVEAT = (
    "; caveat: timed after the whole-block profiler had run in this process (whole_block=True); on the H200, "
    "steps timed after a profiler had run were seen slower in some runs: use whole_block=False"
)


def _this_cpu() -> Ceilings:
    from roofline.device import ceilings_for_run

    return ceilings_for_run("cpu")


def report_from_profile(record: ProfileRecord, ceilings: Ceilings | None = None, *,
                        cpu_ceilings: Callable[[], Ceilings] | None = _this_cpu) -> Report:
    """The Report of the profiled steps, with syncs, memory and true vs profiled time; undiagnosed (the entry
    point runs the doctor). Roofs: ``ceilings``, else the run's own, else this machine's for the run's device.

    Steps run on a GPU device that launched no GPU work (the model stayed on the CPU) are judged against
    ``cpu_ceilings()`` (this machine's CPU roofs; None keeps the run's roofs, a --ceilings FILE; ``ceilings``
    given are always kept), and the report says the GPU went unused (analyze/unused_gpu.py)."""
    if ceilings is not None:
        cpu_ceilings = None
    ceilings = ceilings or record.ceilings
    if ceilings is None:
        from roofline.device import ceilings_for_run

        ceilings = ceilings_for_run(record.device)
    trace = load_trace(record.trace_path)
    unfinished = _drop_unfinished_step(trace, record)
    gpu = ceilings if record.device.startswith("cuda") and ran_on_host_only(trace, device_recorded=True) else None
    if gpu is not None and cpu_ceilings is not None:
        ceilings = cpu_ceilings()
    device_name = ceilings.device_name if gpu is not None else trace.device_name or ceilings.device_name
    # The GPU allocator's peak says nothing of a CPU step's memory (buffers the process left on the GPU).
    reference = record.reference_peak_bytes if gpu is None else None
    report = report_from_trace(trace, ceilings, None, kind="profile", workload=record.workload,
                               reference_peak_bytes=reference,
                               environment=Environment.capture(device_name), graphs=record.graphs)
    if gpu is not None:
        record_unused_gpu(report, gpu.device_name or trace.device_name or record.device,
                          f"the run's device was {record.device}, and the profiled steps launched no GPU kernel", gpu)
    elif record.device == "cpu":
        drop_no_kernels_note(report)
    # Kineto's own cuda_sync view, kept beside the live detector's for cross-checking; context syncs with
    # no op are the harness's own step boundaries, left out.
    trace_syncs = [s for s in report.syncs if not (s.kind == "cuda.synchronize" and s.location == "<unknown>")]
    _fill_timing_and_syncs(report, record)
    if unfinished:
        report.summary.notes.append(unfinished)
    if record.device == "cpu":
        note_inflated_profile(report)
    host_rows, host_total = host_time_by_op(report.ops)
    report.profile = ProfileInfo(schedule=dict(record.schedule), steps_seen=record.steps_seen,
                                 whole_block=record.whole_block, device=record.device,
                                 syncs_from_trace=trace_syncs, error=record.error, host_time_by_op=host_rows,
                                 host_time_total_s=host_total)
    return report


def _drop_unfinished_step(trace: Trace, record: ProfileRecord) -> str | None:
    """A run that ends before the schedule's last active step leaves the profiler recording what ran after its
    last step() call (the rest of the script, an evaluation...): part of no step, so its ops are left out (a
    step-less op is no row). Returns the note that says so, or None."""
    finished = len(record.profiled_step_s)
    if record.whole_block or len(trace.steps) <= finished:
        return None
    del trace.steps[finished:]
    for op in trace.ops:
        if op.step is not None and op.step >= finished:
            op.step = None
    trace.columns = None  # its step column still names the steps dropped: read again from the ops when asked
    schedule = record.schedule
    needed = sum(schedule.get(k, 0) for k in ("wait", "timed", "warmup", "active"))
    return (f"{finished} of the {schedule.get('active', finished)} active steps profiled: the run ended after "
            f"{record.steps_seen} steps, the schedule needs {needed} (wait {schedule.get('wait', 0)} + timed "
            f"{schedule.get('timed', 0)} + warmup {schedule.get('warmup', 0)} + active {schedule.get('active', 0)}); "
            "what ran after the last step() call is part of no step and left out")


PARTIAL_STEP_WARMUP_NOTE = (
    "warmup 0 asked, yet 1 step was profiled and thrown away: the steps were forwards when profiling began, and an "
    "optimizer.step() becoming the step boundary then would have ended that first profiled step mid-iteration (a "
    "part of one)")


def _fill_timing_and_syncs(report: Report, record: ProfileRecord) -> None:
    if record.whole_block:
        report.profiled_step_time = Timing.from_samples(
            [record.block_s], "wall time of the block (step() never called, or no step reached the profiler)"
        )
        report.step_time = None
        report.steps = 1
        # The harness made the block one step: the trace reader's advice on marking ProfilerStep#N spans with a
        # torch.profiler schedule is for a trace the user profiled, not for `profile --whole` (sweep 5).
        report.summary.notes[:] = [n for n in report.summary.notes if not n.startswith(NO_STEPS_WARNING)]
        report.summary.notes.append(
            "true step time not measured: the whole block was profiled as one step (`roofline profile --whole`, "
            "or no step() call); without --whole, or calling step() between steps, times steps without the profiler"
        )
    else:
        method = TIMING_METHOD + (_AFTER_PROFILER_CAVEAT if record.timed_after_profiler else "")
        report.step_time = Timing.from_samples(record.true_step_s, method) if record.true_step_s else None
        report.profiled_step_time = Timing.from_samples(record.profiled_step_s, TIMING_METHOD.split(";")[0])
        report.steps = len(record.profiled_step_s)
    if record.partial_step_warmup and not record.whole_block:
        report.summary.notes.append(PARTIAL_STEP_WARMUP_NOTE)
    if record.syncs is not None:
        report.syncs = record.syncs
        report.summary.notes.append(
            f"syncs: counted live over {record.sync_steps} step(s) "
            + ("(the warmup steps, so the kept profile is free of the detector's cost)" if record.syncs_in_warmup
               else "(the profiled steps)")
        )
        if record.syncs_simulated and record.syncs:
            report.summary.notes.append(
                "syncs found on CPU tensors: sites that would synchronise host and device on an accelerator"
            )
