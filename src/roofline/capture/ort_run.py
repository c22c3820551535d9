"""Running an ONNX model under ONNX Runtime with its profiler on: warm-up runs, then timed runs, all in one
profile (the warm-up runs are told apart later by their order). Needs onnxruntime (the ``onnx`` extra).

Inputs are random (floats normal, integers zero, which every embedding table can look up) at the shapes the
model declares, with dynamic dimensions bound by ``--inputs`` (``x=1x3x224x224`` per input, or ``batch=1,seq=128``
per named dimension); a dimension left unbound is 1, and the run says so.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from roofline.errors import RooflineError

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
OPT_LEVELS = ("disable", "basic", "extended", "all")
RUN_ANNOTATION = "roofline::ort_run"  # the record_function range around each session.run in the device trace


@dataclass(slots=True)
class OrtRun:
    profile_path: Path
    optimized_model: Path | None
    provider: str
    providers_available: list[str]
    inputs: dict[str, tuple[list[int], str]]
    warmup: int
    iters: int
    opt_level: str
    ort_version: str
    threads: int | None
    notes: list[str] = field(default_factory=list)
    device_trace: Path | None = None  # torch.profiler's trace of the same runs (CUDA provider, torch with CUDA)
    profiling_start_ns: int | None = None  # ORT's profiling start on its clock (session.get_profiling_start_time_ns)
    device_trace_why_not: str | None = None


def _import_ort():
    try:
        import onnxruntime as ort
    except ImportError:
        raise RooflineError("roofline ort needs onnxruntime: pip install 'roofline[onnx]' (onnxruntime-gpu for "
                            "the CUDA provider)") from None
    return ort


_SHAPE = re.compile(r"^\d+(x\d+)*$")


def parse_inputs_spec(spec: str | None) -> tuple[dict[str, list[int]], dict[str, int]]:
    """``x=1x3x224x224,ids=1x128`` -> per-input shapes; ``batch=1,seq=128`` -> named dimensions. Both may mix."""
    shapes: dict[str, list[int]] = {}
    dims: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in (spec or "").split(","))):
        name, eq, value = part.partition("=")
        if not eq or not name or not _SHAPE.match(value.strip()):
            raise RooflineError(f"--inputs: {part!r} is not NAME=SHAPE (1x3x224x224) or DIM=N")
        sizes = [int(v) for v in value.strip().split("x")]
        if "x" in value:
            shapes[name.strip()] = sizes
        else:
            dims[name.strip()] = sizes[0]
    return shapes, dims


def provider_name(provider: str) -> str:
    if provider not in PROVIDERS:
        raise RooflineError(f"unknown provider {provider!r}: use {' or '.join(PROVIDERS)}")
    return PROVIDERS[provider]


def run_profiled(model: str | Path, provider: str = "cpu", inputs_spec: str | None = None, *, warmup: int = 3,
                 iters: int = 10, opt_level: str = "all", threads: int | None = None,
                 workdir: str | Path | None = None) -> OrtRun:
    """Run ``model`` warmup + iters times with ORT's profiler on; the profile and the optimised graph ORT ran
    (for the fused nodes' attributes) are written under ``workdir`` (a temporary directory by default)."""
    import numpy as np

    ort = _import_ort()
    wanted = provider_name(provider)
    available = list(ort.get_available_providers())
    if wanted not in available:
        raise RooflineError(f"the {wanted} is not in this onnxruntime {ort.__version__} (available: "
                            f"{', '.join(available)}); install onnxruntime-gpu for --provider cuda")
    if opt_level not in OPT_LEVELS:
        raise RooflineError(f"unknown optimisation level {opt_level!r}: use one of {', '.join(OPT_LEVELS)}")
    shapes, dims = parse_inputs_spec(inputs_spec)
    work = Path(workdir or tempfile.mkdtemp(prefix="roofline-ort-"))
    work.mkdir(parents=True, exist_ok=True)
    ort.set_default_logger_severity(3)  # ORT's own error lines (a failed load) would add to our one line
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(work / "ort_profile")
    so.graph_optimization_level = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL, "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[opt_level]
    optimized = work / "optimized.onnx"
    so.optimized_model_filepath = str(optimized)
    # the optimised graph is read for its nodes' attributes only: weights go to a side file (no 2 GB protobuf limit)
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "optimized.onnx.data")
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    if threads:
        so.intra_op_num_threads = threads
    # fatal only: a model that fails to load raises (one line below), and the session's teardown would add ORT's
    # own "Could not write a profile because no model was loaded" error line on stderr
    so.log_severity_level = 4
    providers = [wanted] + (["CPUExecutionProvider"] if wanted != "CPUExecutionProvider" else [])
    try:
        session = ort.InferenceSession(str(model), so, providers=providers)
    except FileNotFoundError:
        raise RooflineError(f"ONNX model not found: {model}") from None
    except Exception as exc:  # noqa: BLE001 - ORT raises its own exception types for every bad model
        raise RooflineError(f"onnxruntime cannot load {model}: {str(exc).splitlines()[0][:250]}") from None
    notes: list[str] = []
    feeds, used = _feeds(session, shapes, dims, notes, np)
    unknown = set(shapes) - {i.name for i in session.get_inputs()} - set(dims)
    if unknown:
        raise RooflineError(f"--inputs names {', '.join(sorted(unknown))}, which the model has no input of "
                            f"(inputs: {', '.join(i.name for i in session.get_inputs())})")
    tracer = _device_tracer(wanted, work)
    try:
        with tracer:
            for _ in range(warmup + iters):
                with tracer.run():
                    session.run(None, feeds)
    except Exception as exc:  # noqa: BLE001 - a shape ORT rejects: one line
        session.end_profiling()
        raise RooflineError(f"onnxruntime could not run {model} with inputs "
                            f"{ {k: v[0] for k, v in used.items()} }: {str(exc).splitlines()[0][:250]}") from None
    start_ns = session.get_profiling_start_time_ns()
    profile = Path(session.end_profiling())
    return OrtRun(profile, optimized if optimized.exists() else None, wanted, available, used, warmup, iters,
                  opt_level, ort.__version__, threads, notes, tracer.path, start_ns, tracer.why_not)


class _NoTracer:
    """The host-time path: no device trace (CPU provider, or no torch with CUDA in this process)."""

    path = None

    def __init__(self, why_not: str | None = None):
        self.why_not = why_not

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def run(self):
        return contextlib.nullcontext()


class _TorchTracer:
    """torch.profiler (CPU + CUDA activities) around the runs, each run in a record_function range: CUPTI records
    every kernel launched in the process, ORT's included, with the runtime call that launched it."""

    def __init__(self, torch, work: Path):
        self.torch, self.path, self.why_not, self.name = torch, work / "device_trace.json", None, RUN_ANNOTATION
        self._prof = None

    def __enter__(self):
        profiler = self.torch.profiler
        try:
            prof = profiler.profile(activities=[profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA])
            prof.__enter__()
        except Exception as exc:  # noqa: BLE001 - no device trace is a note, not a failed run
            self._stop(f"torch.profiler could not start ({str(exc).splitlines()[0][:160]})")
        else:
            self._prof = prof
        return self

    def __exit__(self, *exc) -> None:
        if self._prof is None:
            return
        self._prof.__exit__(*exc)
        if exc[0] is None:
            try:
                self._prof.export_chrome_trace(str(self.path))
            except Exception as err:  # noqa: BLE001
                self._stop(f"torch.profiler could not write its trace ({str(err).splitlines()[0][:160]})")

    def _stop(self, why: str) -> None:
        self.path, self.why_not = None, why + ": GPU nodes keep ORT's host times"

    def run(self):
        return self.torch.profiler.record_function(self.name)


def _device_tracer(provider: str, work: Path):
    if provider != "CUDAExecutionProvider":
        return _NoTracer()
    try:
        import torch
    except ImportError:
        return _NoTracer("torch is not installed: GPU nodes keep ORT's host times")
    if not torch.cuda.is_available():
        return _NoTracer("torch sees no CUDA device: GPU nodes keep ORT's host times")
    return _TorchTracer(torch, work)


_NUMPY = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
          "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int8)": "int8", "tensor(uint8)": "uint8",
          "tensor(bool)": "bool"}


def _feeds(session, shapes, dims, notes, np):
    rng = np.random.default_rng(0)
    feeds, used = {}, {}
    for inp in session.get_inputs():
        if inp.name in shapes and len(shapes[inp.name]) > 1:
            shape = shapes[inp.name]
        else:
            shape = []
            for d in inp.shape:
                if isinstance(d, int) and d > 0:
                    shape.append(d)
                elif isinstance(d, str) and d in dims:
                    shape.append(dims[d])
                else:
                    shape.append(1)
                    notes.append(f"input {inp.name}: dimension {d!r} not given (--inputs {d}=N): 1 used")
        dtype = _NUMPY.get(inp.type)
        if dtype is None:
            raise RooflineError(f"input {inp.name} has type {inp.type}, which roofline ort cannot fill")
        if dtype.startswith("float"):
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[inp.name] = np.zeros(shape, dtype=dtype)
        used[inp.name] = (list(shape), dtype)
    return feeds, used

