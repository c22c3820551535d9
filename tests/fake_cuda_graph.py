"""A stand-in for torch.cuda.CUDAGraph where there is no GPU (tests of capture/cuda_graphs.py and its live paths)."""

from __future__ import annotations


class FakeGraph:
    """Capture and replay do nothing of their own: the ops run between capture_begin and capture_end run eagerly,
    as a real capture dispatches them, and replay() only counts its calls."""

    def __init__(self) -> None:
        self.replays = 0
        self.capturing = False

    def capture_begin(self, *args, **kwargs) -> None:
        self.capturing = True

    def capture_end(self) -> None:
        if not self.capturing:
            raise RuntimeError("capture_end without capture_begin")
        self.capturing = False

    def replay(self) -> None:
        self.replays += 1
