"""One module per rule; importing this package registers them all."""

from roofline.doctor.rules import (  # noqa: F401
    host_sync,
    launch_overhead,
    unfused_chain,
    precision_island,
    layout_copy,
    recomputation,
    unbatched_loop,
    tf32,
    half_alignment,
    host_input,
    warm_up,
    exposed_communication,
    straggler,
    tiny_collectives,
    collective_host_sync,
    undersized_memory_bound,
    excess_traffic,
    onnx_nodes,
    sdpa_math_fallback,
    model_on_cpu,
)
