"""Which device a trace was recorded on, decided from the trace itself, with how it was decided.

Evidence, strongest first:
1. ``deviceProperties`` naming a GPU model ("NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB").
2. ``deviceProperties`` without a model name (ROCm writes "AMD Radeon Graphics"): the vendor from the
   wavefront size (64 on AMD) and the part from compute units and memory (104 CUs and 64 GB: an MI250 GCD).
3. Kernel names: sm80/ampere/cutlass_80 -> Ampere, sm90/nvjet/wgmma -> Hopper, sm100 -> Blackwell, volta_ ->
   Volta, Cijk_ (Tensile) and gfx9xx -> AMD CDNA; launch calls (cudaLaunchKernel vs hipLaunchKernel) give the
   vendor when kernels alone do not.
4. Other metadata and event categories: MTIA runtime events or an MTIA backend name a Meta MTIA accelerator.
5. No device events, but host events only a GPU run makes (launch calls, NCCL collectives:
   capture/unrecorded_device.py): a GPU whose activity was not recorded, its model unnamed.
6. No device events at all: a CPU trace.

An architecture known only from kernel names maps to datasheet roofs only where one data-center part stands for
it (sm70 -> V100, sm80 -> A100, sm90 -> H100 SXM, sm100 -> B200, gfx90a -> MI250 GCD, gfx942 -> MI300X,
gfx950 -> MI355X), and the report says the part was assumed. Consumer-heavy families (sm75, sm86, sm89, sm120)
span too wide a range of roofs to pick one: they get none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from roofline.device.datasheet import datasheet_key

_GENERIC_NAMES = re.compile(r"^\s*(AMD Radeon Graphics|AMD Radeon\b.*Graphics|Device \w+|gfx\w+|)\s*$", re.I)

# (pattern over a kernel name, architecture, compute capability or gfx target)
_NVIDIA_KERNEL_ARCH: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"sm_?1[02]0[af]?_|cutlass3x_sm1[02]0|sm100|sm120", re.I), "Blackwell", "10.0"),
    (re.compile(r"sm_?90a?_|cutlass3x_sm90|nvjet|wgmma|hopper_|sm90_", re.I), "Hopper", "9.0"),
    (re.compile(r"sm_?89_|ada_", re.I), "Ada", "8.9"),
    (re.compile(r"sm_?86_", re.I), "Ampere", "8.6"),
    (re.compile(r"sm_?80_|cutlass_80_|cutlass_tensorop_.*_80|ampere_", re.I), "Ampere", "8.0"),
    (re.compile(r"sm_?75_|cutlass_75_|turing_", re.I), "Turing", "7.5"),
    (re.compile(r"sm_?70_|cutlass_70_|volta_", re.I), "Volta", "7.0"),
    (re.compile(r"maxwell_|sm_?5\d_", re.I), "Maxwell", "5.x"),
    (re.compile(r"kepler_|sm_?3\d_", re.I), "Kepler", "3.x"),
]
_AMD_KERNEL = re.compile(r"^Cijk_|\bgfx9\d\w*|_ZN\w*hip|\bhipblaslt|\bck::|ck_tile|rocblas|MIOpen|miopen", re.I)
_GFX = re.compile(r"gfx(9[0-9a-f]{2})", re.I)
_GFX_ARCH = {"908": "CDNA 1", "90a": "CDNA 2", "940": "CDNA 3", "941": "CDNA 3", "942": "CDNA 3", "950": "CDNA 4"}

# Architecture known only from kernel names -> the datasheet part assumed for it.
_ASSUMED_PART = {"7.0": "V100 SXM2 16GB", "8.0": "A100 40GB", "9.0": "H100 SXM", "10.0": "B200",
                 "gfx90a": "MI250 GCD", "gfx942": "MI300X", "gfx950": "MI355X"}
# ROCm compute units per device -> part (figures per device as torch sees it).
_AMD_BY_CUS = {104: "MI250 GCD", 110: "MI250X GCD", 304: "MI300X", 256: "MI355X"}

KERNEL_SAMPLE = 5000
UNRECORDED_HOW = "no device activity recorded"  # how a GPU known only from host events is told (step 5 above)


@dataclass(slots=True)
class DeviceIdentity:
    """What the trace says about its device. ``kind``: gpu, accelerator, cpu or unknown."""

    kind: str = "unknown"
    vendor: str = ""
    name: str = ""
    arch: str = ""
    compute_capability: str = ""
    memory_bytes: float | None = None
    datasheet_key: str | None = None
    assumed: bool = False
    how: str = ""
    host_name: str = ""
    evidence: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "vendor": self.vendor, "name": self.name, "arch": self.arch,
                "compute_capability": self.compute_capability, "memory_bytes": self.memory_bytes,
                "datasheet": self.datasheet_key, "assumed": self.assumed, "how": self.how,
                "host_name": self.host_name}


def identify_trace(trace, unrecorded_use: str = "") -> DeviceIdentity:
    """The device of a loaded ``Trace`` (capture.trace_model). ``unrecorded_use``: what in it shows a GPU ran the
    ops though none of its activity was recorded (capture/unrecorded_device.py, which the caller asks: this layer
    reads no trace model)."""
    names: dict[str, None] = {}
    for k in trace.kernels:
        if k.category == "kernel" and k.name not in names:
            names[k.name] = None
            if len(names) >= KERNEL_SAMPLE:
                break
    launches = {launch.name for launch in trace.launches[:KERNEL_SAMPLE]}
    memory_devices = {m.device_type for m in getattr(trace, "memory", ())[:KERNEL_SAMPLE]}
    return identify_device(trace.metadata, names, launches, getattr(trace, "categories", ()),
                           has_device_events=bool(trace.kernels), memory_device_types=memory_devices,
                           unrecorded_use=unrecorded_use)


def identify_gpus(trace) -> dict[int, DeviceIdentity]:
    """Each GPU ``deviceProperties`` lists, by device id (one process may drive GPUs of different models)."""
    props = trace.metadata.get("deviceProperties")
    found: dict[int, DeviceIdentity] = {}
    for entry in props if isinstance(props, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), int) and entry["id"] not in found:
            ident = _from_props(entry)
            if ident is not None:
                ident.host_name = str(trace.metadata.get("host_name") or trace.metadata.get("hostname") or "")
                found[entry["id"]] = ident
    return found


def identify_device(metadata: dict[str, Any], kernel_names: Iterable[str], launch_names: Iterable[str] = (),
                    categories: Iterable[str] = (), *, has_device_events: bool | None = None,
                    memory_device_types: Iterable[int | None] = (), unrecorded_use: str = "") -> DeviceIdentity:
    """``unrecorded_use``: what shows a GPU drove the ops though none of its activity is in the trace
    (capture/unrecorded_device.py), for a trace that names no device."""
    kernel_names = list(kernel_names)
    launch_names = set(launch_names)
    categories = {c.lower() for c in categories}
    host = metadata.get("host_name") or metadata.get("hostname") or ""
    props = _device_props(metadata)
    ident = (_from_props(props) if props else None) or _from_kernels(kernel_names, launch_names) \
        or _from_other(metadata, categories) or _from_memory(set(memory_device_types))
    if ident is None:
        if has_device_events is None:
            has_device_events = bool(kernel_names)
        if has_device_events:
            ident = DeviceIdentity(kind="gpu", name="GPU (model not named)",
                                   how="device events present, but neither deviceProperties nor kernel names "
                                       "name the GPU")
        elif unrecorded_use:
            hip = any(n.lower().startswith("hip") for n in launch_names)
            ident = DeviceIdentity(kind="gpu", vendor="amd" if hip else "", name="GPU (model not named)",
                                   how=f"{UNRECORDED_HOW}, but {unrecorded_use}: a GPU ran the ops")
        else:
            ident = DeviceIdentity(kind="cpu", name="CPU", how="no device events and no device named in the trace")
    if ident.how.startswith("deviceProperties") and metadata.get("computeProperties"):
        ident.how = "computeProperties (Kineto of 2021)" + ident.how[len("deviceProperties"):]
    ident.host_name = str(host)
    return ident


def _device_props(metadata: dict[str, Any]) -> dict[str, Any] | None:
    props = metadata.get("deviceProperties")
    if isinstance(props, list) and props and isinstance(props[0], dict):
        return props[0]
    return None


def _from_props(props: dict[str, Any]) -> DeviceIdentity | None:
    name = props.get("name") if isinstance(props.get("name"), str) else ""
    memory = props.get("totalGlobalMem") if isinstance(props.get("totalGlobalMem"), (int, float)) else None
    major, minor = props.get("computeMajor"), props.get("computeMinor")
    cc = f"{major}.{minor}" if isinstance(major, int) and isinstance(minor, int) else ""
    amd = props.get("warpSize") == 64 or "amd" in name.lower() or bool(re.search(r"\bMI\d{3}", name))
    if name and not _GENERIC_NAMES.match(name):
        key = datasheet_key(name, memory)
        vendor = "amd" if amd else ("nvidia" if re.search(r"nvidia|tesla|geforce|quadro|rtx", name, re.I) else
                                    "intel" if re.search(r"\bintel\b", name, re.I) else "")
        how = f"deviceProperties names it {name!r}"
        if re.search(r"ARTEMIS|MTIA", name, re.I):
            vendor, name = "meta", f"Meta MTIA ({name})"
        elif not vendor and cc and not amd:
            vendor = "nvidia"
        kind = "gpu" if vendor in ("nvidia", "amd", "intel") or key else "accelerator"
        return DeviceIdentity(kind=kind, vendor=vendor, name=name, arch=_nvidia_arch(cc) if vendor == "nvidia" else "",
                              compute_capability=cc, memory_bytes=memory, datasheet_key=key, how=how)
    if amd:
        cus = props.get("numSms") if isinstance(props.get("numSms"), int) else None
        gfx = _GFX.search(str(props.get("gcnArchName") or name))
        key = _AMD_BY_CUS.get(cus) if cus else None
        if key is None and gfx:
            key = _ASSUMED_PART.get(f"gfx{gfx.group(1).lower()}")
        detail = ", ".join(p for p in (f"{cus} compute units" if cus else "",
                                       f"{memory / 2**30:.0f} GiB" if memory else "",
                                       f"gfx{gfx.group(1)}" if gfx else "") if p)
        label = f"AMD Instinct {key.replace(' GCD', '')} (one GCD)" if key and "GCD" in key else (
            f"AMD Instinct {key}" if key else f"AMD GPU ({name or 'unnamed'})")
        how = (f"deviceProperties: {name or 'no name'} with a 64-wide wavefront (AMD)"
               + (f", {detail}" if detail else "")
               + (f" -> {key}" if key else ": the part is not recognised"))
        if key == "MI250 GCD":
            how += " (an MI210 has the same CU count, memory and near-identical figures)"
        return DeviceIdentity(kind="gpu", vendor="amd", name=label, arch="CDNA", compute_capability=cc,
                              memory_bytes=memory, datasheet_key=key, how=how)
    if cc:
        arch = _nvidia_arch(cc)
        key = _ASSUMED_PART.get(cc if cc in _ASSUMED_PART else "")
        return DeviceIdentity(kind="gpu", vendor="nvidia", name=f"NVIDIA {arch} GPU (compute capability {cc})",
                              arch=arch, compute_capability=cc, memory_bytes=memory, datasheet_key=key,
                              assumed=key is not None, how=f"deviceProperties gives compute capability {cc} only")
    return None


def _nvidia_arch(cc: str) -> str:
    return {"6.0": "Pascal", "6.1": "Pascal", "7.0": "Volta", "7.2": "Volta", "7.5": "Turing", "8.0": "Ampere",
            "8.6": "Ampere", "8.7": "Ampere",
            "8.9": "Ada", "9.0": "Hopper", "10.0": "Blackwell", "10.3": "Blackwell", "12.0": "Blackwell"}.get(cc, "")


def _from_kernels(kernel_names: list[str], launch_names: set[str]) -> DeviceIdentity | None:
    votes: dict[tuple[str, str], list[str]] = {}
    amd: list[str] = []
    for name in kernel_names:
        for pattern, arch, cc in _NVIDIA_KERNEL_ARCH:
            if pattern.search(name):
                votes.setdefault((arch, cc), []).append(name)
                break
        else:
            if _AMD_KERNEL.search(name):
                amd.append(name)
    hip = any(n.lower().startswith("hip") for n in launch_names)
    cuda = any(n.lower().startswith(("cuda", "culaunch")) for n in launch_names)
    if amd or (hip and not votes):
        gfx = next((m.group(1).lower() for n in amd if (m := _GFX.search(n))), None)
        target = f"gfx{gfx}" if gfx else ""
        key = _ASSUMED_PART.get(target)
        what = f"{len(amd)} AMD library kernels (e.g. {amd[0][:40]!r})" if amd else "hipLaunchKernel calls"
        return DeviceIdentity(kind="gpu", vendor="amd", name=f"AMD GPU ({target or 'CDNA, part unknown'})",
                              arch=_GFX_ARCH.get(gfx or "", "CDNA"), compute_capability=target, datasheet_key=key,
                              assumed=key is not None, how=f"from kernel names: {what}",
                              evidence=amd[:3])
    if votes:
        # the newest architecture named wins: newer GPUs still run kernels built for older ones
        (arch, cc), names = max(votes.items(), key=lambda kv: _cc_order(kv[0][1]))
        key = _ASSUMED_PART.get(cc)
        how = f"from kernel names: {len(names)} kernel(s) built for {arch} (e.g. {names[0][:48]!r})"
        if key:
            how += f"; roofs of the {key} assumed (the data-center part for compute capability {cc})"
        return DeviceIdentity(kind="gpu", vendor="nvidia", name=f"NVIDIA {arch} GPU (sm{cc.replace('.', '')})",
                              arch=arch, compute_capability=cc, datasheet_key=key, assumed=key is not None, how=how,
                              evidence=names[:3])
    if cuda and kernel_names:
        return DeviceIdentity(kind="gpu", vendor="nvidia", name="NVIDIA GPU (model not named)",
                              how="CUDA launch calls (cudaLaunchKernel) but no kernel names an architecture")
    return None


def _cc_order(cc: str) -> float:
    try:
        return float(cc)
    except ValueError:
        return float(cc.split(".")[0])


# c10::DeviceType of [memory] events (profile_memory=True) whose device torch.profiler records no kernels of
_MEMORY_ONLY_DEVICES = {13: ("apple", "Apple GPU (MPS)", "MPS"), 15: ("intel", "Intel Gaudi (HPU)", "HPU")}


def _from_memory(device_types: set[int | None]) -> DeviceIdentity | None:
    """A device known only from its allocations: torch.profiler records no MPS kernels (nor HPU ones without
    Habana's own profiler), so the trace's times are host times."""
    for code, (vendor, name, short) in _MEMORY_ONLY_DEVICES.items():
        if code in device_types:
            return DeviceIdentity(kind="gpu" if vendor == "apple" else "accelerator", vendor=vendor, name=name,
                                  how=f"[memory] events on {short} (device type {code}); torch.profiler recorded no "
                                      f"{short} kernels, so op times are the host's")
    return None


def _from_other(metadata: dict[str, Any], categories: set[str]) -> DeviceIdentity | None:
    text = " ".join(str(metadata.get(k, "")) for k in ("logical_server_subtype", "distributedInfo"))
    if "hpu_op" in categories:
        return DeviceIdentity(kind="accelerator", vendor="intel", name="Intel Gaudi (HPU)",
                              how="hpu_op events in the trace (Habana's profiler plugin); roofline does not read "
                                  "them as device kernels, so op times are the host's")
    xpu_events = sorted(c for c in categories if c.startswith("xpu_"))
    if xpu_events:
        # torch's XPU profiler (Kineto's PTI plugin) wrote no deviceProperties before 2.9 (intel/torch-xpu-ops#2247)
        return DeviceIdentity(kind="gpu", vendor="intel", name="Intel GPU (XPU, model not named)",
                              how="XPU runtime events in the trace (" + ", ".join(xpu_events) + ") but no "
                                  "deviceProperties naming the part")
    mtia_events = sorted(c for c in categories if c.startswith("mtia"))
    if mtia_events or re.search(r"\bmtia\b|ARTEMIS", text, re.I):
        how = ("MTIA events in the trace (" + ", ".join(mtia_events) + ")") if mtia_events else \
            "the trace's metadata names an MTIA backend"
        return DeviceIdentity(kind="accelerator", vendor="meta", name="Meta MTIA accelerator", arch="MTIA", how=how)
    return None
