"""A step that ran on the CPU where a GPU is present: the model or its inputs never moved to it (`.to("cuda")`
forgotten), or CPU training by choice.

Such a trace holds no device activity at all, yet names the GPU (Kineto writes ``deviceProperties`` for every GPU
present, kernels or not; the profiling harness knows the device it resolved). Its op times are the CPU's own
durations, so they are judged against the CPU's roofs, never the GPU's; the GPU's roofs are kept in
``report.extra['unused_gpu']`` for the doctor's estimate of what moving the model would save
(doctor/rules/model_on_cpu.py).

A trace whose ops drove a device whose activity went unrecorded (profiled with ProfilerActivity.CPU only) is not
this case: its kernel-launch or copy calls, its NCCL collectives (capture/unrecorded_device.py), or its CUDA
allocations show it, and their host times are launch costs, not the work.
"""

from __future__ import annotations

from roofline.capture.kineto import NO_KERNELS_WARNING
from roofline.capture.trace_model import Trace
from roofline.capture.unrecorded_device import unrecorded_device_use
from roofline.device.identify import DeviceIdentity
from roofline.report import Ceilings, Report

# c10::DeviceType::CPU in a [memory] event's "Device Type" (CUDA is 1, MPS 13, HPU 15)
CPU_DEVICE_TYPE = 0


def ran_on_host_only(trace: Trace, *, device_recorded: bool = False) -> bool:
    """Whether the trace's ops ran on the CPU alone: some op, no device activity, nothing that shows a GPU drove
    them (capture/unrecorded_device.py: a launch or copy call, an NCCL collective), and, unless the device's
    activity is known to be recorded (``device_recorded``: the profiling harness asks for it on a GPU), no allocation on
    another device than the CPU (an MPS run allocates on its GPU and records no kernel). With it recorded, an
    allocation the harness or the process made outside the model (a buffer left by the ceilings' measurement) says
    nothing about where the ops ran."""
    if trace.kernels or not trace.ops:
        return False
    if unrecorded_device_use(trace):
        return False
    return device_recorded or all(m.device_type in (None, CPU_DEVICE_TYPE) for m in trace.memory)


def say_device_not_recorded(report: Report, trace: Trace, identity: DeviceIdentity) -> None:
    """Replace the trace reader's "no GPU kernels ... a CPU-only profile, or the device's activity was not recorded"
    with the second alone, plainly, where the trace shows a GPU (CUDA, ROCm or XPU) drove the ops: their times are
    the host's launch times, not the device's work. MPS is left as it is: torch.profiler records no MPS kernels."""
    if trace.kernels or identity.kind != "gpu" or identity.vendor == "apple":
        return
    activity = "XPU" if identity.vendor == "intel" else "CUDA"
    plain = ("the GPU's activity was not recorded: the trace holds no kernel, so each op's time is the host's "
             "time to launch it, not the device's work, and no finding judges it as work done on the CPU; the "
             f"profiler ran without ProfilerActivity.{activity}, or the kernels were stripped: record with "
             f"activities=[ProfilerActivity.CPU, ProfilerActivity.{activity}] for device times")
    notes = report.summary.notes
    at = next((i for i, n in enumerate(notes) if n.startswith(NO_KERNELS_WARNING)), None)
    if at is None:
        notes.append(plain)
    else:
        notes[at] = plain
    report.extra["device_not_recorded"] = identity.how


def drop_no_kernels_note(report: Report) -> None:
    """Leave out the trace reader's "no GPU kernels ... a CPU-only profile, or the device's activity was not
    recorded" from a run the harness itself made on the CPU: nothing was left unrecorded, and the note would only
    alarm a user who asked for the CPU."""
    report.summary.notes[:] = [n for n in report.summary.notes if not n.startswith(NO_KERNELS_WARNING)]


def record_unused_gpu(report: Report, name: str, how: str, gpu: Ceilings | None, device: str = "cuda",
                      cpu_name: str | None = None) -> None:
    """Say in ``report`` that the ops ran on the CPU though the GPU ``name`` is present (``how``: what shows it),
    keeping the GPU's roofs (``gpu``; None when none are known) for the doctor's estimate; ``device``: torch's name
    for its type (``cuda``, ``xpu``), for the advice's ``.to(...)``. ``cpu_name``: the CPU's model as the note names
    it (default: the CPU ceilings'; "" for a trace, which records none: its ceilings are this machine's at most)."""
    roofs = None
    if gpu is not None and gpu.has_roofs():
        roofs = {"memory_bandwidth_bytes_per_s": gpu.memory_bandwidth_bytes_per_s,
                 "peak_flops_per_s": dict(gpu.peak_flops_per_s), "launch_overhead_s": gpu.launch_overhead_s,
                 "source": gpu.source}
    report.extra["unused_gpu"] = {"name": name, "how": how, "roofs": roofs, "device": device}
    # the reader's "no GPU kernels ... a CPU-only profile, or the device's activity was not recorded": said below
    drop_no_kernels_note(report)
    c = report.ceilings
    if cpu_name is None:
        cpu_name = c.device_name if c.device == "cpu" else ""
    cpu = f" ({cpu_name})" if cpu_name not in ("", "CPU") else ""
    if not c.has_roofs():
        judged = "not judged against any roof (no CPU roofs are known)"
    elif c.device == "cpu":
        judged = "judged against the CPU's roofs"
    else:
        judged = f"judged against the roofs given ({c.device_name or c.device}), as asked"
    report.summary.notes.insert(0, f"the ops ran on the CPU{cpu} though {name} is present ({how}): their times "
                                   f"are the CPU's, {judged}; unless the CPU is deliberate, move the model and its "
                                   f"inputs with .to('{device}') (doctor rule model-on-cpu)")
