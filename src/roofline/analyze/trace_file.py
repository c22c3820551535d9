"""A trace file a user brings: which device it ran on, which roofs it is judged against, and its Report.

The roofs come from, in order: ``--ceilings FILE``; this machine's measured ceilings from the cache, only for a
device of this machine (a GPU named in the trace and measured here, or a CPU trace whose ``host_name`` is this
host's and not a generic default such as "localhost" or a container id); the datasheet of the device the trace names
or its kernels imply. Nothing is ever measured here: a trace recorded elsewhere is never judged against this
machine. A trace whose ops ran on the CPU though its ``deviceProperties`` name a GPU (analyze/unused_gpu.py) is a
CPU trace here. A device with no known roofs still gets a report (times, breakdown, attribution and every finding
that needs no roof) with one note saying what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np

from roofline.analyze.rank_timeline import own_rank_row
from roofline.analyze.unused_gpu import ran_on_host_only, record_unused_gpu, say_device_not_recorded
from roofline.capture.trace_model import Trace, op_columns
from roofline.capture.unrecorded_device import unrecorded_device_use
from roofline.device.datasheet import datasheet_refusal, with_datasheet_cache
from roofline.device.identify import UNRECORDED_HOW, DeviceIdentity, identify_gpus, identify_trace
from roofline.errors import RooflineError
from roofline.report import Ceilings, OpRecord, Report
from roofline.time_text import fmt_time

ASSUMED_LAUNCH_S = 5e-6
_HOW_TO_SUPPLY = ("write them with `roofline ceilings --json FILE` on that machine (or by hand: "
                  "memory_bandwidth_bytes_per_s and peak_flops_per_s per dtype) and pass --ceilings FILE")


def ceilings_for_trace(trace, ceilings_file: str | None = None, identity: DeviceIdentity | None = None) -> Ceilings:
    """The roofs to judge ``trace`` against (``source == "none"`` when no roof is known: ``has_roofs()`` false)."""
    from roofline.device.cache import cached_ceilings, load_ceilings
    from roofline.device.datasheet import DATASHEET

    identity = identity or identify_trace(trace, unrecorded_device_use(trace))
    if ceilings_file:
        return load_ceilings(ceilings_file)
    if identity.kind == "cpu":
        return _cpu_ceilings(identity)
    if identity.kind == "gpu" and not trace.kernels:
        record = ("torch.profiler records no MPS kernels" if identity.vendor == "apple" else
                  "record with ProfilerActivity.CUDA for device times")
        named = f"the trace names {identity.name} but holds" if not identity.how.startswith(UNRECORDED_HOW) else \
            "a GPU ran the ops but the trace holds"
        return no_ceilings(identity, f"no roofs: {named} no device activity "
                                     "(kernels were not recorded), so op times are host times and are not judged "
                                     f"against a device's roofs; {record}, or pass "
                                     "--ceilings FILE to judge them anyway")
    if identity.name and not identity.assumed:
        cached = cached_ceilings(identity.name)
        if cached is not None:
            return cached
    if identity.datasheet_key:
        return _from_datasheet(identity, DATASHEET[identity.datasheet_key])
    what = identity.name or "this device"
    refusal = datasheet_refusal(identity.name)
    why = (f"no datasheet entry on purpose ({refusal}), hence" if refusal else
           "its memory bandwidth and peak FLOP/s per dtype are missing, so")
    return no_ceilings(identity, f"no roofs known for {what}: {why} ops get no roofline bound and findings that "
                                 "need a roof are left out; " + _HOW_TO_SUPPLY)


def no_ceilings(identity: DeviceIdentity, why: str) -> Ceilings:
    device = {"gpu": "cuda", "cpu": "cpu"}.get(identity.kind, identity.vendor or "unknown")
    return Ceilings(device=device, device_name=identity.name, source="none", method=why)


def _from_datasheet(identity: DeviceIdentity, sheet) -> Ceilings:
    assumed = (f"; the part is assumed from the architecture ({identity.arch or identity.compute_capability}): "
               "pass --ceilings FILE if it was another" if identity.assumed else "")
    return with_datasheet_cache(Ceilings(
        device="cuda",
        device_name=identity.name,
        memory_bandwidth_bytes_per_s=sheet.memory_bandwidth_bytes_per_s,
        peak_flops_per_s=dict(sheet.peak_flops_per_s),
        launch_overhead_s=ASSUMED_LAUNCH_S,
        datasheet=sheet,
        source="datasheet (assumed part)" if identity.assumed else "datasheet",
        method=(f"datasheet peaks of the {sheet.name} ({sheet.source}); launch overhead assumed "
                f"{ASSUMED_LAUNCH_S * 1e6:g} us (not measured on this GPU){assumed}"),
    ))


def _cpu_ceilings(identity: DeviceIdentity) -> Ceilings:
    from roofline.device.cache import cached_ceilings
    from roofline.device.host import cpu_name, generic_host_name, host_name

    here = host_name()
    if identity.host_name and generic_host_name(identity.host_name):
        return no_ceilings(identity, f"no roofs: the trace's host name {identity.host_name!r} is a generic default "
                                     "(many machines and containers share it), so it is no evidence the trace was "
                                     "recorded on this machine, and it is not judged against this machine's CPU; if "
                                     "it was, pass this machine's ceilings (`roofline ceilings --device cpu --json "
                                     "FILE`, then --ceilings FILE)")
    if identity.host_name and identity.host_name == here:
        cached = cached_ceilings(cpu_name(), allow_quick=True)
        if cached is not None:
            cached.method = f"the trace was recorded on this host ({here}): its cached CPU ceilings. {cached.method}"
            return cached
        return no_ceilings(identity, f"no roofs: this host's CPU ceilings are not measured yet; run `roofline "
                                     "ceilings --device cpu` once (then traces recorded here use them), or pass --ceilings FILE")
    where = f"on {identity.host_name}" if identity.host_name else "on a host the trace does not name"
    return no_ceilings(identity, f"no roofs: a CPU trace recorded {where} is not judged against this machine's CPU; "
                                 "for roofs, " + _HOW_TO_SUPPLY)


def analyze_trace_file(path: str | Path, ceilings_file: str | None = None, *, partial: bool = False,
                       placed: Callable[[Report], None] | None = None,
                       trace_read: Callable[[], None] | None = None) -> Report:
    """The Report of one trace file, undiagnosed: the entry point that asked for it runs the doctor.
    ``trace_read``: called once the file's events are read, before they are put in order and the report is built
    from them (``load_trace``'s ``events_read``).

    A trace cut short (truncated gzip, JSON that stops mid-list) is refused unless ``partial``: then its report
    says so first.

    For the console's one-shot command (roofline/quickexit.py armed) the Trace is kept until the process ends:
    freeing a 1 M-event trace's objects took 0.26 s of the main process, the command's critical path, right
    before the doctor's and the PNG's children are started."""
    from roofline import quickexit
    from roofline.capture.kineto import load_trace

    trace = load_trace(path, split=True, events_read=trace_read)
    quickexit.keep_until_exit(trace)
    return analyze_trace(trace, ceilings_file, partial=partial, placed=placed)


def analyze_trace(trace: Trace, ceilings_file: str | None = None, *, partial: bool = False,
                  placed: Callable[[Report], None] | None = None) -> Report:
    """``analyze_trace_file`` of a trace already loaded (the distributed merge reads each rank's trace once).
    ``placed``: as ``report_from_trace``'s."""
    from roofline.analyze.pipeline import report_from_trace

    path = trace.path
    if trace.cut and not partial:
        raise RooflineError(f"{path} is cut short ({'; '.join(_cut_reason(trace))}; {trace.events_read} events "
                            "read): pass --partial for a report of what was read")
    identity = identify_trace(trace, unrecorded_device_use(trace))
    # Kineto names every GPU present in deviceProperties, kernels or not: one named there that ran nothing.
    gpu = identity if identity.kind == "gpu" and identity.how.startswith("deviceProperties") and \
        ran_on_host_only(trace) else None
    if gpu is not None:
        identity = _host_of(gpu)
    ceilings = ceilings_for_trace(trace, ceilings_file, identity)
    by_device = _ceilings_by_device(trace, identity) if gpu is None and not ceilings_file else {}
    report = report_from_trace(trace, ceilings, kind="trace", workload=Path(path).name, placed=placed,
                               ceilings_by_device=by_device or None)
    if by_device:
        report.extra["roofs_by_device"] = {str(d): f"{c.device_name}, {c.source}" for d, c in by_device.items()}
        report.extra["ceilings_by_device"] = {str(d): msgspec.to_builtins(c) for d, c in by_device.items()}
    if not report.ops and not trace.kernels and not _collectives_note(trace):
        # Nothing to report: no op, no kernel, no collective (a gloo job's CPU trace may hold only its collectives,
        # whose times the report's note and a merge of the ranks still give).
        from roofline.capture.kineto import RECORD_THE_MODEL

        raise RooflineError(f"{path} holds no op to place on a roofline: {_what_it_holds(trace)}; {RECORD_THE_MODEL}")
    if gpu is not None:
        record_unused_gpu(report, gpu.name, "the trace's deviceProperties name it, and it holds no device activity "
                                            "nor any call that launches device work", _gpu_roofs(gpu),
                          {"intel": "xpu", "apple": "mps"}.get(gpu.vendor, "cuda"), cpu_name="")
    _describe_device(report, identity, ceilings, ceilings_file)
    if gpu is None:
        say_device_not_recorded(report, trace, identity)
    own = own_rank_row(trace, report)
    if own is not None:
        report.ranks = [own]
    written = _written_by_roofline(trace)
    if written:
        report.extra["written_by_roofline"] = written
    if trace.cut:
        report.extra["partial"] = {"events_read": trace.events_read, "why": _cut_reason(trace)}
        report.summary.notes.insert(0, f"PARTIAL: the trace is cut short; this report covers the {trace.events_read} "
                                       "events read before the cut")
    _describe_missing(report, trace)
    return report


def _written_by_roofline(trace: Trace) -> dict[str, str]:
    """Which roofline run wrote this trace (the trace.json.gz of `analyze`/`profile`, render/trace_augment.py), so
    `roofline diff` can tell that run's report and this one are one run read two ways; empty for other traces."""
    stamp = trace.metadata.get("roofline")
    if not isinstance(stamp, dict) or not stamp.get("workload"):
        return {}
    found = {"workload": str(stamp["workload"]), "report_kind": str(stamp.get("report_kind") or ""),
             "captured_at": str(stamp.get("captured_at") or ""), "trace_name": str(trace.metadata.get("traceName") or "")}
    return {k: v for k, v in found.items() if v}


def _ceilings_by_device(trace: Trace, identity: DeviceIdentity) -> dict[int, Ceilings]:
    """Each GPU's roofs, by device id, when the GPUs that ran kernels are not all one model (else empty: the
    trace's roofs are every GPU's). Found as a single GPU's are: measured here (cached), else the datasheet."""
    if identity.kind != "gpu":
        return {}
    gpus = identify_gpus(trace)
    used = [d for d in _devices_used(trace) if d in gpus]
    if len({gpus[d].name for d in used}) < 2:
        return {}
    return {d: ceilings_for_trace(trace, None, gpus[d]) for d in used}


def _devices_used(trace) -> list[int]:
    return sorted({k.device for k in trace.kernels if isinstance(k.device, int)})


def _host_of(gpu: DeviceIdentity) -> DeviceIdentity:
    """The CPU that ran a trace's ops when the GPU it names ran none of them (analyze/unused_gpu.py)."""
    return DeviceIdentity(kind="cpu", name="CPU", host_name=gpu.host_name,
                          how=f"no device activity in the trace, though it names {gpu.name}: its ops ran on the CPU")


def _gpu_roofs(gpu: DeviceIdentity) -> Ceilings | None:
    """The roofs of a GPU the trace names but did not use: measured here (cached), else its datasheet's."""
    from roofline.device.cache import cached_ceilings
    from roofline.device.datasheet import DATASHEET

    cached = cached_ceilings(gpu.name) if gpu.name and not gpu.assumed else None
    if cached is not None:
        return cached
    return _from_datasheet(gpu, DATASHEET[gpu.datasheet_key]) if gpu.datasheet_key else None


def _cut_reason(trace) -> list[str]:
    """The reader's line on where the trace stops (its other warnings, on shapes or steps, come after it)."""
    return [w for w in trace.warnings if "ends early" in w][-1:] or trace.warnings[-1:]


def _describe_device(report: Report, identity: DeviceIdentity, ceilings: Ceilings, ceilings_file: str | None) -> None:
    roofs = f"--ceilings {ceilings_file}" if ceilings_file else ceilings.source
    name, whose = identity.name, roofs
    if identity.kind == "cpu":
        name, whose = _cpu_label(identity), _cpu_roofs_of(identity, ceilings, roofs, ceilings_file)
    report.extra["device"] = {**identity.to_dict(), "roofs": roofs}
    if identity.kind == "cpu":
        report.extra["device"]["roofs_of"] = whose
    report.environment.device_name = name or report.environment.device_name
    if "device_name" in report.environment.unknown and report.environment.device_name:
        report.environment.unknown.remove("device_name")
    report.summary.notes.insert(0, f"Device: {name} ({identity.how}); roofs: {whose}")
    if not ceilings.has_roofs():
        report.summary.notes.insert(1, f"warning: {ceilings.method}")
    other = _other_kind_of_device(identity, ceilings) if ceilings_file else None
    if other:
        report.summary.notes.insert(1, other)
        report.summary.stale_ceilings = None  # its "re-measure" advice is for the roofs' own device, not this trace's


def _other_kind_of_device(identity: DeviceIdentity, ceilings: Ceilings) -> str | None:
    """A warning when a --ceilings file describes a CPU and the trace ran on a GPU (or the reverse): every % of roof
    is then against the wrong kind of device, which the stale-ceilings check took for roofs measured low."""
    roofs_on_cpu = ceilings.device.startswith("cpu")
    if identity.kind not in ("gpu", "cpu") or roofs_on_cpu == (identity.kind == "cpu") or not ceilings.device:
        return None
    described = ceilings.device_name or ceilings.device
    ran = identity.name or ("a CPU" if identity.kind == "cpu" else "a GPU")
    return (f"warning: the --ceilings file describes {described} ({ceilings.device}) and the trace ran on {ran}: "
            "every % of roof compares it with another kind of device; pass that device's ceilings (`roofline "
            "ceilings --json FILE` on it), or none to use its datasheet")


# Kineto records no CPU model (its deviceProperties list only GPUs): a CPU trace's device is named as this, never as
# the CPU of the machine reading it.
CPU_NOT_RECORDED = "CPU (model not recorded in the trace)"


def _cpu_label(identity: DeviceIdentity) -> str:
    """The name a CPU trace's device is shown by: the model the trace names, else ``CPU_NOT_RECORDED``."""
    return identity.name if identity.name not in ("", "CPU") else CPU_NOT_RECORDED


def _cpu_roofs_of(identity: DeviceIdentity, ceilings: Ceilings, roofs: str, ceilings_file: str | None) -> str:
    """Whose roofs a CPU trace is judged against, in words: the trace does not say which CPU ran it, so roofs of a
    named CPU are always someone's choice (the file given, or this machine's because the host names agree)."""
    named = f"{ceilings.device_name}, {ceilings.source}" if ceilings.device_name else ceilings.source
    if ceilings_file:
        return f"{roofs} ({named or 'no device named in it'})"
    if not ceilings.has_roofs():
        return roofs
    return (f"this machine's measured CPU ceilings ({named}), because the trace's host name "
            f"{identity.host_name!r} is this machine's; the trace does not record which CPU ran it")


def _describe_missing(report: Report, trace) -> None:
    """What the trace lacks, said once (the reader's own warnings cover shapes, steps and launches)."""
    if not trace.kernels and trace.launches and "cuda_profiler_range" in trace.categories:
        report.summary.notes.append("the trace holds CUPTI range-profiler events but no kernel activity: device "
                                    "times, idle time and kernel attribution are unavailable")
    if trace.kernels and not trace.ops:
        by_name: dict[str, float] = {}
        for k in trace.kernels:
            by_name[k.name] = by_name.get(k.name, 0.0) + k.dur_us
        top = sorted(by_name.items(), key=lambda kv: -kv[1])[:5]
        listed = "; ".join(f"{name[:60]} {fmt_time(us / 1e6)}" for name, us in top)
        report.summary.notes.append(f"ops are absent (no cpu_op events): a kernel-level report of "
                                    f"{len(trace.kernels)} device events ({fmt_time(sum(by_name.values()) / 1e6)}); "
                                    f"by time: {listed}")
    if trace.ops and not report.ops:
        report.summary.notes.append(f"none of the trace's {len(trace.ops)} host events is an op with recorded work "
                                    "inside the profiled steps: nothing to place on a roofline")
    devices = _devices_note(trace, report)
    if devices:
        report.summary.notes.append(devices)
    collectives = _collectives_note(trace)
    if collectives:
        report.summary.notes.append(collectives)


def _devices_note(trace, report: Report) -> str:
    """One process driving several GPUs (model parallel, or tensors on cuda:1): which ran kernels, and whose roofs
    each op was judged against."""
    used = _devices_used(trace)
    if len(used) < 2:
        return ""
    props = trace.metadata.get("deviceProperties")
    names = {p.get("id"): p.get("name") for p in props if isinstance(p, dict)} if isinstance(props, list) else {}
    listed = ", ".join(f"{d} ({names[d]})" if names.get(d) else str(d) for d in used)
    by_device = report.extra.get("roofs_by_device")
    if by_device:
        roofs = ("GPUs of different models: each op judged against the roofs of the GPU its kernels ran on ("
                 + "; ".join(f"device {d}: {r}" for d, r in by_device.items())
                 + f"; the ceilings tables show each); kernel-class % of roof and the doctor's roof-based estimates "
                 f"use {report.ceilings.device_name}'s")
    elif len({names.get(d) for d in used}) > 1:
        roofs = (f"GPUs of different models, all judged against one set of roofs ({report.ceilings.source}"
                 + (f", {report.ceilings.device_name}" if report.ceilings.device_name else "") + ")")
    elif names.get(used[0]):
        roofs = "all judged against that model's roofs"
    else:
        roofs = "judged against one GPU's roofs (the trace does not name the GPUs)"
    return (f"kernels ran on {len(used)} GPUs of this process (devices {listed}): each op's time is its own "
            f"kernels' on whichever GPU ran them, {roofs}; kernel-class times are summed over the GPUs")


def _what_it_holds(trace: Trace) -> str:
    """What a trace with no op to place holds instead, in a few words ("only 1 record_function range ('setup')")."""
    ranges = [op.name for op in trace.ops if op.is_annotation and not op.name.startswith("ProfilerStep#")]
    ops = [op.name for op in trace.ops if not op.is_annotation]
    parts = []
    if ops:
        lie = "lies" if len(ops) == 1 else "lie"
        where = f"outside its {_count(len(trace.steps), 'profiled step')}" if trace.steps else "with no recorded work"
        parts.append(f"its {_count(len(ops), 'op')} ({_names(ops)}) {lie} {where}")
    if ranges:
        parts.append(f"{_count(len(ranges), 'record_function range')} ({_names(ranges)})")
    if trace.steps and not ops:
        parts.append(_count(len(trace.steps), "ProfilerStep range"))
    if trace.memory:
        parts.append(_count(len(trace.memory), "memory event"))
    if not parts:
        return "it holds no op"
    return ("" if ops else "only ") + ", ".join(parts)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _names(names: list[str]) -> str:
    distinct = list(dict.fromkeys(names))
    return ", ".join(repr(n) for n in distinct[:3]) + (f" and {len(distinct) - 3} more" if len(distinct) > 3 else "")


def _collectives_note(trace) -> str:
    """The job's collectives in one line (host calls such as gloo:all_reduce, which CPU traces carry)."""
    from roofline.analyze.communication import is_communication_op

    calls: dict[str, list] = {}
    ops = trace.ops
    if not ops:
        return ""
    is_comm = op_columns(trace).named(is_communication_op)  # per distinct name: a few thousand, not a million
    for i in np.flatnonzero(is_comm).tolist():
        op = ops[i]
        if op.parent < 0 or not is_comm[op.parent]:
            calls.setdefault(op.name, []).append(op)
    if not calls:
        return ""
    info = trace.metadata.get("distributedInfo")
    job = ""
    if isinstance(info, dict) and info.get("backend"):
        job = f" (backend {info['backend']}" + (f", rank {info['rank']} of {info['world_size']}"
                                                if "rank" in info and "world_size" in info else "") + ")"
    top = sorted(calls.items(), key=lambda kv: -sum(op.dur_us for op in kv[1]))[:4]
    return f"collectives{job}: " + ", ".join(_calls_time(name, spans) for name, spans in top)


def _calls_time(name: str, calls: list) -> str:
    """One collective name's calls and their time, counted once where calls ran at once on several threads (gloo
    runs queued collectives on its worker threads side by side): the wall time they span, with the sum beside it."""
    from roofline.intervals import length, union

    summed = sum(op.dur_us for op in calls)
    spanned = length(union([(op.ts_us, op.end_us) for op in calls]))
    if spanned >= summed * 0.999:
        return f"{name} x{len(calls)} ({fmt_time(summed / 1e6)} host time)"
    threads = len({op.tid for op in calls})
    return (f"{name} x{len(calls)} ({fmt_time(spanned / 1e6)} of wall time; {fmt_time(summed / 1e6)} summed over the "
            f"{threads} threads that ran them at once)")

