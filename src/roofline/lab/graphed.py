"""A decode loop with no host work between steps: several decode steps captured in one CUDA graph, replayed.

Why: on the H200 host a compiled decode step with reduce-overhead still costs ~1.7 ms per token for the 1.1B
shape while its kernels need ~0.5 ms (the lab's batch sweep shows the same ms/step from batch 1 to 16), so the
plain loop measures the host, not the memory roof. Capturing ``steps_per_graph`` steps, each feeding its token
and position to the next on the device, leaves the GPU nothing to wait for. The step must not synchronise and
must already be compiled (the warm-up calls compile it, before capture).
"""

from __future__ import annotations

import torch

from roofline.lab.generate import DecodeStep
from roofline.models.llama import Transformer


class GraphedDecoder:
    """``run(token, pos, steps)`` -> (batch, steps) greedy tokens from ``token`` (batch, 1) at slot ``pos``.

    On CUDA the steps run as replays of one graph of ``steps_per_graph`` steps (``steps`` must be a multiple);
    elsewhere as a plain loop over the same step, so the logic is testable without a GPU.
    """

    def __init__(self, model: Transformer, step: DecodeStep, pad: torch.Tensor, steps_per_graph: int = 16,
                 warmup: int = 2) -> None:
        self.model, self.step, self.pad = model, step, pad
        self.steps_per_graph = steps_per_graph
        device = pad.device
        self.graph: torch.cuda.CUDAGraph | None = None
        self._token = torch.zeros(pad.shape[0], 1, dtype=torch.long, device=device)
        self._pos = torch.zeros(1, dtype=torch.long, device=device)
        self._out = torch.zeros(pad.shape[0], steps_per_graph, dtype=torch.long, device=device)
        if device.type != "cuda":
            return
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(warmup):
                self._body()
        torch.cuda.current_stream(device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.no_grad():
            self._body()

    def _body(self) -> None:
        token = self._token
        for i in range(self.steps_per_graph):
            token = self.step(self.model, token, self._pos, self.pad)[:, None]
            self._out[:, i : i + 1].copy_(token)
            self._pos.add_(1)
        self._token.copy_(token)

    def run(self, token: torch.Tensor, pos: int, steps: int) -> torch.Tensor:
        if steps % self.steps_per_graph:
            raise ValueError(f"steps ({steps}) must be a multiple of steps_per_graph ({self.steps_per_graph})")
        self._token.copy_(token)
        self._pos.fill_(pos)
        chunks = []
        with torch.no_grad():
            for _ in range(steps // self.steps_per_graph):
                if self.graph is not None:
                    self.graph.replay()
                else:
                    self._body()
                chunks.append(self._out.clone())
        return torch.cat(chunks, dim=1)
