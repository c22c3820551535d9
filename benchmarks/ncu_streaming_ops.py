"""The byte model's ground truth as one workload: the twelve streaming ops of the H200 ncu fixture
(tests/data/ncu_h200/ncu_ops.py) plus the two that move more than their minimum (cross_entropy, a 16384^3 matmul),
each in its own submodule so a report's op rows name their case (``op.module``).

    roofline analyze benchmarks/ncu_streaming_ops.py:factory --device cuda --ncu

Sizes are the fixture's (far past the 60 MB L2) on a GPU; on a CPU they shrink 64x per side so the factory can be
tested anywhere. Inputs are made on the device directly (16 GiB of randn on a CPU would take minutes).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

STREAMING = ("add", "gelu", "layer_norm", "rms_norm", "softmax", "sum_lastdim", "transpose_copy", "cat", "embedding",
             "sdpa_causal", "depthwise_conv", "to_fp32")
EXCESS = ("cross_entropy", "mm")


class Case(torch.nn.Module):
    def __init__(self, fn, first: int, count: int) -> None:
        super().__init__()
        self.fn, self.first, self.count = fn, first, count

    def forward(self, args):
        return self.fn(*args[self.first:self.first + self.count])


class StreamingOps(torch.nn.Module):
    def __init__(self, cases: dict) -> None:
        super().__init__()
        for name, (fn, first, count) in cases.items():
            self.add_module(name, Case(fn, first, count))

    def forward(self, *args):
        return [case(args) for case in self.children()]


def factory(scale: int | None = None):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    s = scale or (1 if device == "cuda" else 64)
    h = torch.float16
    gen = torch.Generator(device=device).manual_seed(0)

    def t(*shape, dtype=h):
        return torch.randn(*shape, device=device, dtype=dtype, generator=gen)

    def idx(high, n):
        return torch.randint(0, high, (n,), device=device, generator=gen)

    n, d, rows = 16384 // s, 4096 // s, 65536 // s
    tensors: list[torch.Tensor] = []
    cases: dict = {}

    def case(name, fn, *inputs):
        cases[name] = (fn, len(tensors), len(inputs))
        tensors.extend(inputs)

    x, y = t(n, n), t(n, n)
    case("add", lambda a, b: a + b, x, y)
    case("gelu", F.gelu, x)
    case("layer_norm", lambda a, w, b: F.layer_norm(a, (d,), w, b), t(rows, d), t(d), t(d))
    case("rms_norm", lambda a, w: F.rms_norm(a, (d,), w), t(rows, d), t(d))
    case("softmax", lambda a: torch.softmax(a, -1), x)
    case("sum_lastdim", lambda a: a.sum(-1), x)
    case("transpose_copy", lambda a: a.t().contiguous(), x)
    case("cat", lambda a, b: torch.cat([a, b]), t(n // 2, n), t(n // 2, n))
    case("embedding", F.embedding, idx(131072 // s, rows), t(131072 // s, d))
    case("sdpa_causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
         t(8, 16, 8192 // s, 128), t(8, 16, 8192 // s, 128), t(8, 16, 8192 // s, 128))
    case("depthwise_conv", lambda a, w: F.conv2d(a, w, padding=1, groups=256),
         t(64 // min(s, 64), 256, 128 // s, 128 // s), t(256, 1, 3, 3))
    case("to_fp32", lambda a: a.float(), x)
    case("cross_entropy", F.cross_entropy, t(n, 32768 // s, dtype=torch.float32), idx(32768 // s, n))
    case("mm", lambda a, b: a @ b, x, y)
    return StreamingOps(cases).eval(), tuple(tensors)
