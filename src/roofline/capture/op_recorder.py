"""The counting pass: every aten op a model runs, with shapes, dtypes, strides, module path and source line.

A TorchDispatchMode sees each op once, after autograd and after composite ops (linear, matmul, einsum) have
decomposed, so what it records is what launches kernels. This pass is never timed: timing happens in a
separate profiler pass and the two are joined afterwards (analyze/join.py), so the instrumentation here cannot
distort the measured times.
"""

from __future__ import annotations

import contextlib

import sys
from collections.abc import Callable
from typing import Any

import torch

from roofline.capture.dispatch import EagerDispatchMode, op_cost
from roofline.capture.syncs import user_location
from roofline.count.counting import normalize_op_name
from roofline.capture.recording import OpRecording, RecordedOp, Tf32Flags, op_dtype  # noqa: F401 - re-exported


_current_node = getattr(torch._C, "_current_autograd_node", None)
_sequence_nr = getattr(getattr(torch._C, "_autograd", None), "_get_sequence_nr", None)


class _Recorder(EagerDispatchMode):
    """Records each dispatched op. A backward op takes the module and source line of the forward op that made its
    autograd node (matched by the node's sequence number): hooks on module outputs cannot tell, as an identity
    module (eval Dropout, nn.Identity) returns its input and would claim every backward op after it."""

    def __init__(self, recording: OpRecording, tracker: Any, root_prefix: Callable[[], str]):
        super().__init__()
        self.recording = recording
        self.tracker = tracker
        self.root_prefix = root_prefix
        self.forward_of: dict[int, tuple[str, str | None]] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = normalize_op_name(func)
        meta_args, _, meta_out, cost = op_cost(name, args, kwargs, out)
        node = _current_node() if _current_node is not None else None
        recompute = node is not None and torch.is_grad_enabled() and self._forward_running()
        if node is not None and not recompute:
            module, source = self.forward_of.get(node._sequence_nr(), ("", None))
            phase = "backward"
        else:
            module, phase = self._module()
            phase = "recompute" if recompute else phase
            source = user_location(sys._getframe().f_back, unknown=None)
            if _sequence_nr is not None and torch.is_grad_enabled():
                # below autograd: the node this op made (if any) took the number just before the counter
                self.forward_of.setdefault(_sequence_nr() - 1, (module, source))
        self.recording.ops.append(
            RecordedOp(name, meta_args, meta_out, cost, op_dtype(meta_args, meta_out), module, phase, source)
        )
        return out

    def _forward_running(self) -> bool:
        """A module's forward entered inside the backward is running: activation checkpointing recomputing it
        (both torch.utils.checkpoint flavours rerun the module under enable_grad), a ``recompute`` op that takes
        the module and line of the forward it reruns. A forward that takes a gradient itself (a gradient penalty)
        entered its modules before that backward began: its backward stays backward."""
        return bool(self.tracker.entered_in_backward)

    def _module(self) -> tuple[str, str]:
        parents = [p for p in self.tracker.parents if p != "Global"]
        phase = "backward" if getattr(self.tracker, "is_bw", False) else "forward"
        if not parents:
            return "", phase
        deepest = max(parents, key=lambda p: (p.count("."), len(p)))
        prefix = self.root_prefix()
        if prefix and deepest.startswith(prefix + "."):
            deepest = deepest[len(prefix) + 1:]
        elif deepest == prefix:
            deepest = ""
        return deepest, phase


def _forward_module_tracker() -> Any:
    """torch's ModuleTracker without its backward hooks. Those (register_multi_grad_hook on every module's inputs
    and outputs) make torch.autograd.grad raise "A leaf node was passed to _will_engine_execute_node" when a
    forward takes a gradient itself (a gradient penalty, torch.func.grad); the recorder names a backward op's
    module from its autograd node instead (``_Recorder.forward_of``), so it needs only the forward half."""
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    from torch.utils.module_tracker import ModuleTracker

    class ForwardModuleTracker(ModuleTracker):
        """Also knows which running forwards were entered inside a backward: activation checkpointing's."""

        def __init__(self) -> None:
            super().__init__()
            self.entered_in_backward: set[str] = set()

        def __enter__(self):
            # always_call: a forward that raises leaves too (non-reentrant checkpointing stops its recomputation
            # by raising inside the module), else later ops would be taken for a recomputation of it
            self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
            self._fw_post_handle = register_module_forward_hook(self._fw_post_hook, always_call=True)
            return self

        def _fw_pre_hook(self, mod, input) -> None:
            name = self._get_mod_name(mod)
            self._get_append_fn(name, False)()
            if torch._C._current_graph_task_id() != -1:
                self.entered_in_backward.add(name)

        def _fw_post_hook(self, mod, input, output) -> None:
            name = self._get_mod_name(mod)
            self._get_pop_fn(name, False)()
            self.entered_in_backward.discard(name)

    return ForwardModuleTracker()


def record_ops(step: Callable[[], Any], root: torch.nn.Module | None = None) -> OpRecording:
    """Run ``step()`` once under the recorder and return every aten op it dispatched, in order."""
    recording = OpRecording(tf32=Tf32Flags(matmul=_tf32_matmul_enabled(), cudnn=_tf32_cudnn_enabled()))
    tracker = _forward_module_tracker()
    root_name = type(root).__name__ if root is not None else ""
    with tracker, _eager(), _Recorder(recording, tracker, lambda: root_name):
        step()
    return recording


def _eager():
    """torch.compile'd code runs eagerly while the ops are recorded: the counting pass wants the model's own aten ops
    (what Inductor fuses), and Dynamo, asked to compile under the recorder's dispatch mode, traced into it and broke
    the graph at every op (a compiled MLP: a graph break per op, each a recompilation against the user's cache
    limit). ``torch.compiler.set_stance`` exists from torch 2.6; before, compiled code is recorded as it runs."""
    set_stance = getattr(getattr(torch, "compiler", None), "set_stance", None)
    return set_stance("force_eager") if set_stance is not None else contextlib.nullcontext()


def _tf32_matmul_enabled() -> bool:
    try:
        return bool(torch.backends.cuda.matmul.allow_tf32) or torch.get_float32_matmul_precision() != "highest"
    except Exception:  # noqa: BLE001 - older torch without the precision API
        return False


def _tf32_cudnn_enabled() -> bool:
    try:
        return bool(torch.backends.cudnn.allow_tf32)
    except Exception:  # noqa: BLE001 - a torch build without cuDNN
        return False
