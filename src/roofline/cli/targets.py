"""What the user asked to run: a built-in workload name, or `path/to/file.py:factory` returning (model, inputs)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from roofline.errors import RooflineError


def load_target(target: str | None, model: str | None, **options: Any):
    """A Workload-like object (name, model, inputs, loss_fn, description)."""
    if target and model:
        raise RooflineError("give either --model NAME or path/to/file.py:factory, not both")
    if model:
        from roofline.models import get_workload

        return get_workload(model, **options)
    if not target:
        raise RooflineError("nothing to analyse: give --model NAME or path/to/file.py:factory")
    return load_factory(target, device=options.get("device"))


def load_factory(target: str, device: str | None = None):
    path_text, _, func_name = target.rpartition(":")
    if not path_text or not func_name:
        raise RooflineError(f"{target!r}: expected path/to/file.py:factory")
    path = Path(path_text)
    if not path.is_file():
        raise RooflineError(f"{path}: no such file")
    spec = importlib.util.spec_from_file_location(f"roofline_user_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise RooflineError(f"{path}: cannot be imported as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the user's file: report it in one line
        raise RooflineError(f"{path} raised {type(exc).__name__} on import: {exc}") from None
    finally:
        sys.path.pop(0)
    factory = getattr(module, func_name, None)
    if not callable(factory):
        raise RooflineError(f"{path} has no callable {func_name!r}")
    try:
        made = factory()
    except Exception as exc:  # noqa: BLE001
        raise RooflineError(f"{target} raised {type(exc).__name__}: {exc}") from None
    if not (isinstance(made, tuple) and len(made) == 2):
        raise RooflineError(f"{target} must return (model, inputs), got {type(made).__name__}")
    model, inputs = made
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    if device is not None:
        import torch

        model = model.to(device)
        inputs = tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs)
    return SimpleNamespace(name=f"{path.name}:{func_name}", model=model, inputs=inputs, loss_fn=None,
                           description=f"{target} (user factory)")
