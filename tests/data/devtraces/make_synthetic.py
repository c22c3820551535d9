"""Writes the synthetic traces of this folder (see README.md for the source each field follows).

Run from the repository root: `python tests/data/devtraces/make_synthetic.py`. Each trace is small (one step of a
linear layer or two) and follows what the cited Kineto source or public trace writes, not what roofline's own writer
does."""

from __future__ import annotations

import json
import pathlib

HERE = pathlib.Path(__file__).parent
PID, TID = 4242, 4242


def _props(name, mem, major, minor, sms, dev=0, warp=32):
    return {"id": dev, "name": name, "totalGlobalMem": mem, "computeMajor": major, "computeMinor": minor,
            "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
            "warpSize": warp, "sharedMemPerBlock": 49152, "numSms": sms, "regsPerMultiprocessor": 65536,
            "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472}


def _op(name, ts, dur, ext, dims=None, types=None, cat="cpu_op", tid=TID, seq=None):
    args = {"External id": ext, "Record function id": 0, "Ev Idx": ext}
    if dims is not None:
        args["Input Dims"] = dims
        args["Input type"] = types
    if seq is not None:
        args["Sequence number"] = seq
        args["Fwd thread id"] = 0
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _launch(name, ts, dur, corr, ext, cat="cuda_runtime", extra=None):
    args = {"External id": ext, "cbid": 211, "correlation": corr}
    args.update(extra or {})
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": dur, "args": args}


def _kernel(name, ts, dur, corr, ext, device=0, stream=7, cat="kernel", extra=None):
    args = {"External id": ext, "queued": 0, "device": device, "context": 1, "stream": stream,
            "correlation": corr, "registers per thread": 32, "shared memory": 0, "blocks per SM": 1.0,
            "warps per SM": 4.0, "grid": [132, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 6}
    args.update(extra or {})
    return {"ph": "X", "cat": cat, "name": name, "pid": device, "tid": stream, "ts": ts, "dur": dur, "args": args}


def _flow(corr, ts_cpu, ts_gpu, device=0, stream=7):
    return [{"ph": "s", "id": corr, "pid": PID, "tid": TID, "ts": ts_cpu, "cat": "ac2g", "name": "ac2g"},
            {"ph": "f", "id": corr, "pid": device, "tid": stream, "ts": ts_gpu, "cat": "ac2g", "name": "ac2g",
             "bp": "e"}]


def _tail(start, end):
    return [{"name": "process_name", "ph": "M", "ts": start, "pid": PID, "tid": 0, "args": {"name": "python"}},
            {"name": "process_labels", "ph": "M", "ts": start, "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
            {"ph": "X", "cat": "Trace", "ts": start, "dur": end - start, "pid": "Spans", "tid": "PyTorch Profiler",
             "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
            {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
             "tid": "Trace PyTorch Profiler", "ts": start},
            {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": end + 50}]


def _linear_step(t0, ext0, corr0, launch="cudaLaunchKernel", launch_cat="cuda_runtime",
                 gemm="sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                 device=0, dtype="c10::Half", m=4096, step=0, kernel_extra=None, launch_extra=None):
    """One ProfilerStep with aten::linear -> aten::addmm (one GEMM kernel) and aten::relu (one elementwise kernel)."""
    ev = [_op(f"ProfilerStep#{step}", t0, 900, ext0, cat="user_annotation"),
          _op("aten::linear", t0 + 10, 300, ext0 + 1, [[m, 4096], [4096, 4096], [4096]], [dtype] * 3),
          _op("aten::addmm", t0 + 20, 280, ext0 + 2, [[4096], [m, 4096], [4096, 4096], [], []],
              [dtype, dtype, dtype, "Scalar", "Scalar"]),
          _launch(launch, t0 + 200, 8, corr0, ext0 + 2, launch_cat, launch_extra),
          _kernel(gemm, t0 + 230, 420, corr0, ext0 + 2, device, extra=kernel_extra),
          _op("aten::relu", t0 + 320, 60, ext0 + 3, [[m, 4096]], [dtype]),
          _launch(launch, t0 + 350, 6, corr0 + 1, ext0 + 3, launch_cat, launch_extra),
          _kernel("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
                  "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
                  "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::"
                  "operator()() const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2> >"
                  "(int, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, "
                  "c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::"
                  "{lambda()#7}::operator()() const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2>)",
                  t0 + 660, 30, corr0 + 1, ext0 + 3, device, extra=kernel_extra)]
    ev += _flow(corr0, t0 + 200, t0 + 230, device) + _flow(corr0 + 1, t0 + 350, t0 + 660, device)
    return ev


def _trace(props, events, **extra):
    base = {"schemaVersion": 1, "deviceProperties": props, "cupti_version": 24, "cuda_runtime_version": 12080,
            "cuda_driver_version": 12080, "record_shapes": 1, "trace_id": "A1B2C3", "displayTimeUnit": "ms",
            "baseTimeNanoseconds": 1743000000000000000}
    base.update(extra)
    base["traceEvents"] = events
    return base


def device_traces():
    """One step on each device name, as torch writes deviceProperties for it (names from torch.cuda.get_device_name
    as reported in public issues; memory, SM counts and compute capability from the vendors' specifications)."""
    devices = {
        "h100_sxm": ("NVIDIA H100 80GB HBM3", 85045231616, 9, 0, 132),
        "h100_pcie": ("NVIDIA H100 PCIe", 85029158912, 9, 0, 114),
        "b200": ("NVIDIA B200", 191537299456, 10, 0, 148),
        "l4": ("NVIDIA L4", 23580639232, 8, 9, 58),
        "rtx4090": ("NVIDIA GeForce RTX 4090", 25385107456, 8, 9, 128),
        "rtx3060": ("NVIDIA GeForce RTX 3060", 12622168064, 8, 6, 28),
        "rtx_a6000": ("NVIDIA RTX A6000", 51041271808, 8, 6, 84),
        "rtx5090": ("NVIDIA GeForce RTX 5090", 33669840896, 12, 0, 170),
        "a10g": ("NVIDIA A10G", 23609475072, 8, 6, 80),
    }
    for key, (name, mem, major, minor, sms) in devices.items():
        gemm = ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
                "kernel__5x_cublas" if major == 9 else "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn")
        ev = _linear_step(1000.0, 10, 100, gemm=gemm) + _tail(1000.0, 1900.0)
        yield f"device_{key}.json", _trace([_props(name, mem, major, minor, sms)], ev)


def new_torch():
    """torch 2.6+ with torch.compile: Triton kernels launched by cuLaunchKernelEx (cuda_driver), gpu_user_annotation
    spans on the GPU lanes, an 'overhead' span, ac2g flows, [memory] instant events (profile_memory) and
    python_function events (with_stack)."""
    t0 = 5000.0
    ev = [_op("ProfilerStep#3", t0, 1200, 1, cat="user_annotation"),
          {"ph": "X", "cat": "python_function", "name": "train.py(41): <module>", "pid": PID, "tid": TID,
           "ts": t0 + 1, "dur": 1150, "args": {"Python parent id": 0, "Python id": 1, "Python thread": 0}},
          {"ph": "X", "cat": "python_function", "name": "torch/_dynamo/eval_frame.py(632): _fn", "pid": PID,
           "tid": TID, "ts": t0 + 2, "dur": 1100, "args": {"Python parent id": 1, "Python id": 2,
                                                             "Python thread": 0}},
          _op("Torch-Compiled Region: 0/0", t0 + 5, 1000, 2, cat="cpu_op"),
          _op("CompiledFunction", t0 + 10, 900, 3, [[512, 1024], [1024, 1024]], ["c10::BFloat16"] * 2),
          _op("## Call CompiledFxGraph fxnkqwxy3k ##", t0 + 12, 880, 4, cat="user_annotation"),
          _op("aten::mm", t0 + 20, 100, 5, [[512, 1024], [1024, 1024]], ["c10::BFloat16"] * 2),
          _launch("cudaLaunchKernel", t0 + 60, 7, 500, 5),
          _kernel("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", t0 + 80, 40, 500, 5),
          _op("triton_poi_fused_add_relu_0", t0 + 130, 40, 6, [[512, 1024], [512, 1024]], ["c10::BFloat16"] * 2),
          _launch("cuLaunchKernelEx", t0 + 140, 9, 501, 6, cat="cuda_driver"),
          _kernel("triton_poi_fused_add_relu_0", t0 + 160, 12, 501, 6,
                  extra={"kernel_backend": "triton", "kernel_file": "/tmp/torchinductor_u/ab/cab.py",
                         "kernel_hash": "cabxyz"}),
          _op("triton_red_fused_sum_1", t0 + 180, 40, 7, [[512, 1024]], ["c10::BFloat16"]),
          _launch("cuLaunchKernel", t0 + 190, 8, 502, 7, cat="cuda_driver"),
          _kernel("triton_red_fused_sum_1", t0 + 200, 25, 502, 7),
          {"ph": "X", "cat": "gpu_user_annotation", "name": "## Call CompiledFxGraph fxnkqwxy3k ##", "pid": 0,
           "tid": 7, "ts": t0 + 80, "dur": 145, "args": {"External id": 4}},
          {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#3", "pid": 0, "tid": 7, "ts": t0 + 80,
           "dur": 145, "args": {"External id": 1}},
          {"ph": "X", "cat": "overhead", "name": "Instrumentation", "pid": -1, "tid": 0, "ts": t0 + 300,
           "dur": 20, "args": {}},
          {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID, "tid": TID,
           "ts": t0 + 21, "args": {"Total Reserved": 4194304, "Total Allocated": 1048576, "Bytes": 1048576,
                                   "Addr": 139880000000000, "Device Id": 0, "Device Type": 1}},
          {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID, "tid": TID,
           "ts": t0 + 230, "args": {"Total Reserved": 4194304, "Total Allocated": 0, "Bytes": -1048576,
                                    "Addr": 139880000000000, "Device Id": 0, "Device Type": 1}},
          _launch("cudaDeviceSynchronize", t0 + 1100, 50, 503, 0)]
    ev += _flow(500, t0 + 60, t0 + 80) + _flow(501, t0 + 140, t0 + 160) + _flow(502, t0 + 190, t0 + 200)
    ev += _tail(t0, t0 + 1200)
    yield "torch26_compiled_h100.json", _trace([_props("NVIDIA H100 80GB HBM3", 85045231616, 9, 0, 132)], ev,
                                               with_stack=1, profile_memory=1)


def two_gpus():
    """One process driving two GPUs (model parallel): deviceProperties of both, kernels on device 0 and 1 at the
    same time (the same step), as Kineto writes them (pid = device index)."""
    props = [_props("NVIDIA A100-SXM4-80GB", 85198045184, 8, 0, 108, dev=0),
             _props("NVIDIA A100-SXM4-80GB", 85198045184, 8, 0, 108, dev=1)]
    gemm = "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage5_warpsize2x2x1_tensor16x8x16_kernel"
    ev = _linear_step(1000.0, 10, 100, gemm=gemm, device=0)
    second = _linear_step(1000.0, 20, 200, gemm=gemm, device=1)
    ev += [e for e in second if not e["name"].startswith("ProfilerStep")]
    # the second device's ops run right after the first's on the host
    for e in second:
        if e.get("pid") == PID:
            e["ts"] += 400
    ev += _tail(1000.0, 1900.0)
    yield "two_gpus_one_process_a100.json", _trace(props, ev)


def two_gpus_taking_turns():
    """One process driving two GPUs of different models in turn (a pipeline split over an A100 and an H100): GPU 0
    runs the first layer, then idles while GPU 1 runs the second. On one merged timeline neither gap shows."""
    props = [_props("NVIDIA A100-SXM4-80GB", 85198045184, 8, 0, 108, dev=0),
             _props("NVIDIA H100 80GB HBM3", 85045231616, 9, 0, 132, dev=1)]
    ev = []
    for step in (0, 1):
        t0 = 1000.0 + 2000 * step
        first = _linear_step(t0, 10 + 100 * step, 100 + 100 * step, device=0,
                             gemm="sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage5_warpsize2x2x1_"
                                  "tensor16x8x16_kernel")
        second = _linear_step(t0, 50 + 100 * step, 150 + 100 * step, device=1)
        for e in second:
            if e.get("pid") == PID:
                e["ts"] += 400  # launched after the first layer's ops on the host
            elif e["name"] != "ac2g" or e["ph"] == "f":
                e["ts"] += 700  # runs once GPU 0 is done (the activation copied over)
        ev.append(_op(f"ProfilerStep#{step + 5}", t0, 2000, 10 + 100 * step, cat="user_annotation"))
        ev += [e for e in first + second if not e["name"].startswith("ProfilerStep")]
    ev += _tail(1000.0, 5000.0)
    yield "two_gpus_taking_turns_a100_h100.json", _trace(props, ev)


def cuda_graph():
    """A CUDA graph replay: one cudaGraphLaunch, several kernels sharing its correlation id, no per-kernel launch
    (as in HTA's and vLLM's traces: kernels carry 'graph id'/'graph node id')."""
    t0 = 2000.0
    ev = [_op("ProfilerStep#5", t0, 600, 1, cat="user_annotation"),
          _op("CUDAGraph.replay", t0 + 10, 40, 2),
          _launch("cudaGraphLaunch", t0 + 15, 30, 900, 2)]
    for i in range(6):
        ev.append(_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1_execute_"
                          "segment_k_off_kernel__5x_cublas" if i % 2 == 0 else "triton_poi_fused_mul_silu_0",
                          t0 + 60 + i * 40, 30, 900, 2, extra={"graph id": 3, "graph node id": 100 + i}))
    ev += [_launch("cudaStreamSynchronize", t0 + 60, 300, 901, 0)]
    ev += _tail(t0, t0 + 600)
    yield "cuda_graph_replay_h100.json", _trace([_props("NVIDIA H100 80GB HBM3", 85045231616, 9, 0, 132)], ev)


def nccl():
    """An NCCL all-reduce as torch 2.x records it: record_param_comms with 'Collective name', 'In msg nelems',
    'Out msg nelems', 'Group size', 'dtype' on the cpu_op and on the kernel."""
    t0 = 3000.0
    comm = {"Collective name": "allreduce", "In msg nelems": 16777216, "Out msg nelems": 16777216,
            "Group size": 8, "dtype": "BFloat16", "In split size": "[]", "Out split size": "[]",
            "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]",
            "Rank": 0}
    op = _op("record_param_comms", t0 + 20, 30, 3)
    op["args"].update(comm)
    ev = [_op("ProfilerStep#1", t0, 2000, 1, cat="user_annotation"), _op("c10d::allreduce_", t0 + 10, 50, 2), op,
          _launch("cudaLaunchKernel", t0 + 30, 10, 700, 3),
          _kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", t0 + 45, 1500,
                  700, 3, stream=20, extra=comm)]
    ev += _linear_step(t0 + 100, 10, 100, step=2)[1:]
    ev += _tail(t0, t0 + 2000)
    props = [_props("NVIDIA H100 80GB HBM3", 85045231616, 9, 0, 132)]
    yield "nccl_allreduce_h100.json", _trace(props, ev, distributedInfo={"backend": "nccl", "rank": 0,
                                                                          "world_size": 8, "pg_count": 1})


def xpu():
    """Intel XPU (torch 2.8+ with ProfilerActivity.XPU): xpu_runtime urEnqueueKernelLaunch / xpu_driver
    zeCommandListAppendLaunchKernel calls with 'correlation', kernels with 'device', 'sycl queue', 'l0 queue' (no
    'stream'), memcpy named as memcpyName() with PTI's strings, 'Memcpy M2D (MEMORY(Unknown) -> DEVICE)' for a copy from malloc'd memory; deviceProperties empty (intel/torch-xpu-ops#2247)."""
    t0 = 8000.0
    kargs = {"appended": "8000.100", "submitted": "8000.200", "context": "0x000055d1e3c0", "sycl queue": 64,
             "l0 queue": "0x000055d1e400", "kernel_id": 11, "sycl_node_id": 0, "sycl_invocation_id": 0}

    def kern(name, ts, dur, corr, ext):
        args = {"correlation": corr, "device": 0, "External id": ext, **kargs}
        return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 64, "ts": ts, "dur": dur, "args": args}

    def rt(name, ts, dur, corr, ext, cat="xpu_runtime"):
        return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID, "ts": ts, "dur": dur,
                "args": {"correlation": corr, "External id": ext}}

    ev = [_op("ProfilerStep#0", t0, 900, 1, cat="user_annotation"),
          _op("aten::linear", t0 + 10, 300, 2, [[2048, 2048], [2048, 2048], [2048]], ["c10::BFloat16"] * 3),
          _op("aten::addmm", t0 + 20, 280, 3, [[2048], [2048, 2048], [2048, 2048], [], []],
              ["c10::BFloat16"] * 3 + ["Scalar", "Scalar"]),
          rt("urEnqueueKernelLaunch", t0 + 200, 15, 40, 3),
          rt("zeCommandListAppendLaunchKernel", t0 + 205, 8, 40, 3, cat="xpu_driver"),
          kern("gemm_kernel", t0 + 260, 300, 40, 3),
          _op("aten::relu", t0 + 320, 60, 4, [[2048, 2048]], ["c10::BFloat16"]),
          rt("urEnqueueKernelLaunch", t0 + 330, 12, 41, 4),
          rt("zeCommandListAppendLaunchKernel", t0 + 333, 6, 41, 4, cat="xpu_driver"),
          kern("at::native::xpu::VectorizedElementwiseKernel<8, at::native::xpu::ClampScalarFunctor<c10::BFloat16>,"
               " at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int> >", t0 + 570, 20, 41, 4),
          _op("aten::copy_", t0 + 400, 100, 5, [[2048, 2048], [2048, 2048], []], ["c10::BFloat16"] * 2 + ["Scalar"]),
          rt("urEnqueueUSMMemcpy", t0 + 410, 20, 42, 5),
          {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy M2D (MEMORY(Unknown) -> DEVICE)", "pid": 0, "tid": 64,
           "ts": t0 + 600, "dur": 200, "args": {"correlation": 42, "device": 0, "External id": 5,
                                                "l0 call": "zeCommandListAppendMemoryCopy", "bytes": 8388608,
                                                "memory bandwidth (GB/s)": 41.9, **kargs}},
          # a barrier the GPU waits on (relu after the GEMM): PTI reports it as a synchronization too, not a host wait
          _xpu_sync("zeCommandListAppendBarrier", t0 + 334, 2, 46, 4, "GPU_BARRIER_EXECUTION"),
          # loss.item(): a device-to-host copy into malloc'd memory, then the host waits for its event
          _op("aten::item", t0 + 820, 60, 6, [[]], ["c10::BFloat16"]),
          _op("aten::_local_scalar_dense", t0 + 822, 56, 7, [[]], ["c10::BFloat16"]),
          rt("urEnqueueUSMMemcpy", t0 + 825, 10, 44, 7),
          {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy D2M (DEVICE -> MEMORY(Unknown))", "pid": 0, "tid": 64,
           "ts": t0 + 830, "dur": 2, "args": {"correlation": 44, "device": 0, "External id": 7,
                                              "l0 call": "zeCommandListAppendMemoryCopy", "bytes": 2,
                                              "memory bandwidth (GB/s)": 1.0, **kargs}},
          rt("zeEventHostSynchronize", t0 + 836, 40, 45, 7, cat="xpu_driver"),
          _xpu_sync("zeEventHostSynchronize", t0 + 836, 40, 45, 7, "HOST_EVENT")]
    ev += _tail(t0, t0 + 900)
    yield "xpu_linear.json", _trace([], ev)
    props = [{"id": 0, "name": "Intel(R) Data Center GPU Max 1550", "totalGlobalMem": 68719476736,
              "numSms": 448, "maxThreadsPerBlock": 1024, "warpSize": 32}]
    yield "xpu_linear_pvc_props.json", _trace(props, ev)


def _xpu_sync(name, ts, dur, corr, ext, kind):
    """An xpu_sync event as Kineto's XPU plugin writes it (XpuptiActivityHandlers.cpp,
    handleSynchronizationActivity; output_json.cpp's handleActivity): the API call's name, pid -1 (the activity's
    device), tid the calling thread, 'External id' of the linked op, then the plugin's metadata; 'Type' is PTI's
    synchronization type (GPU_BARRIER_* on the device, HOST_* when the host waits)."""
    return {"ph": "X", "cat": "xpu_sync", "name": name, "pid": -1, "tid": TID, "ts": ts, "dur": dur,
            "args": {"External id": ext, "correlation": corr, "Type": kind, "Context_handle": "0x000055d1e3c0",
                     "Queue_handle": "0x000055d1e400", "Event_handle": "0x000055d1f0a8",
                     "Number_wait_events": 0 if kind.startswith("HOST") else 1, "Return_code": 0}}


def mps():
    """Apple MPS: torch.profiler records CPU ops only (no device activity for MPS); the ops' names and
    'Input type' are the CPU ones; deviceProperties empty."""
    t0 = 100.0
    ev = [_op("ProfilerStep#0", t0, 2000, 1, cat="user_annotation"),
          _op("aten::linear", t0 + 10, 900, 2, [[256, 1024], [1024, 1024], [1024]], ["float"] * 3),
          _op("aten::addmm", t0 + 20, 880, 3, [[1024], [256, 1024], [1024, 1024], [], []],
              ["float"] * 3 + ["Scalar", "Scalar"]),
          _op("aten::relu", t0 + 950, 40, 4, [[256, 1024]], ["float"])]
    yield "mps_cpu_ops_only.json", {"schemaVersion": 1, "deviceProperties": [], "record_shapes": 1,
                                    "traceEvents": ev + _tail(t0, t0 + 2000)[:1]}
    # profile_memory=True: the MPS allocator reports its allocations with c10::DeviceType::MPS (13)
    ev = ev + [{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": PID, "tid": TID,
                "ts": t0 + 25, "args": {"Total Reserved": 2097152, "Total Allocated": 1048576, "Bytes": 1048576,
                                        "Addr": 5033164800, "Device Id": 0, "Device Type": 13}}]
    yield "mps_profile_memory.json", {"schemaVersion": 1, "deviceProperties": [], "record_shapes": 1,
                                    "traceEvents": ev + _tail(t0, t0 + 2000)[:1]}


def broken():
    """A run that crashed while the trace was written (cut mid-event), and one with garbage after the object."""
    ev = _linear_step(1000.0, 10, 100) + _tail(1000.0, 1900.0)
    text = json.dumps(_trace([_props("NVIDIA H100 80GB HBM3", 85045231616, 9, 0, 132)], ev), indent=1)
    yield "truncated_h100.json", text[: int(len(text) * 0.7)]
    yield "trailing_garbage_h100.json", text + "\n\x00\x00\x00garbage {\"a\": 1}\n"


def main():
    for gen in (device_traces, new_torch, two_gpus, two_gpus_taking_turns, cuda_graph, nccl, xpu, mps, broken):
        for name, body in gen():
            text = body if isinstance(body, str) else json.dumps(body, indent=1)
            (HERE / name).write_text(text)


if __name__ == "__main__":
    main()
