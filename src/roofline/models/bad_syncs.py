"""The course's deliberately bad model: every iteration stalls the host on the device, twice."""

from __future__ import annotations

import torch
import torch.nn as nn


class BadSyncs(nn.Module):
    """Linear + ReLU applied ``iterations`` times; each time a Python-side check reads a mean with ``.item()``
    and the activation makes a round trip through host memory with ``.cpu().to(device)``."""

    def __init__(self, width: int = 1024, iterations: int = 10):
        super().__init__()
        self.iterations = iterations
        self.fc = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        device = x.device
        for _ in range(self.iterations):
            x = torch.relu(self.fc(x))
            if x.mean().item() > 1e4:
                x = x / 2
            x = x.cpu().to(device)
        return x
