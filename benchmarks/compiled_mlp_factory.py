"""A torch.compile'd MLP as a `roofline analyze` factory (benchmarks/results/h200/ceilings_fp64_2026-12-03: its counting
pass on CUDA with compiled code run eagerly): `roofline analyze benchmarks/compiled_mlp_factory.py:compiled_mlp`."""

import torch


def compiled_mlp():
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.LayerNorm(4096),
                                torch.nn.Linear(4096, 1024)).to(device)
    return torch.compile(model), (torch.randn(256, 1024, device=device),)
