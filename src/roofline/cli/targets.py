"""What the user asked to run: a built-in workload name, or `path/to/file.py:factory` returning (model, inputs)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

from roofline.errors import RooflineError


def load_target(target: str | None, model: str | None, **options: Any):
    """A Workload-like object (name, model, inputs, loss_fn, description)."""
    if target and model:
        raise RooflineError("give either --model NAME or path/to/file.py:factory, not both")
    if model:
        from roofline.models import get_workload

        return get_workload(model, **{**options, "dtype": options.get("dtype") or "float32"})
    if not target:
        raise RooflineError("nothing to analyse: give --model NAME or path/to/file.py:factory")
    sized = [flag for flag in ("batch", "seq") if options.get(flag) is not None]
    if sized:
        raise RooflineError(f"--{' and --'.join(sized)} size a built-in --model; {target} builds its own inputs: "
                            "change their size in the factory")
    return load_factory(target, device=options.get("device"), dtype=options.get("dtype"))


def load_factory(target: str, device: str | None = None, dtype: str | None = None):
    """The factory's model and inputs, moved to ``device`` and, when ``dtype`` is given, the model and its
    floating-point inputs cast to it (integer inputs, token ids, stay as they are)."""
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
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's file: report it in one line
        from roofline.capture.script_runner import user_error_line

        raise RooflineError(user_error_line(exc, f"importing {path}")) from None
    finally:
        sys.path.pop(0)
    factory = getattr(module, func_name, None)
    if not callable(factory):
        raise RooflineError(f"{path} has no callable {func_name!r}")
    from roofline.capture.script_runner import hard_exit_raises

    try:
        with hard_exit_raises():
            made = factory()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code: one line naming its line
        from roofline.capture.script_runner import user_error_line

        raise RooflineError(user_error_line(exc, target)) from None
    model, inputs = check_factory_result(made, target)
    if device is not None or dtype:
        model, inputs = _to_device(model, inputs, device, target, dtype)
    return SimpleNamespace(name=f"{path.name}:{func_name}", model=model, inputs=inputs, loss_fn=None,
                           description=f"{target} (user factory)")


def check_factory_result(made: Any, target: str) -> tuple[Any, tuple | dict]:
    """(model, inputs) from what a factory returned: inputs a tensor or a list (one argument), a tuple of positional
    arguments or a dict of keyword arguments (``model(**inputs)``, the Hugging Face way), holding a tensor; or
    (model, args, kwargs), made one dict of keyword arguments (``_as_keywords``)."""
    import torch

    if isinstance(made, (tuple, list)) and len(made) == 3 and isinstance(made[2], Mapping):
        made = (made[0], _as_keywords(made[0], made[1], made[2], target))
    if not (isinstance(made, (tuple, list)) and len(made) == 2):
        raise RooflineError(f"{target} must return (model, inputs) or (model, args, kwargs), got {_describe(made)}")
    model, inputs = made
    if not isinstance(model, torch.nn.Module):
        hint = ": return its .module()" if hasattr(model, "module") and hasattr(model, "graph_signature") else ""
        raise RooflineError(f"{target} returned {_describe(model)} as the model: expected a torch.nn.Module{hint}")
    if isinstance(inputs, (torch.Tensor, list)):
        inputs = (inputs,)  # a list is one argument (torchvision detection models take a list of images)
    elif isinstance(inputs, Mapping):
        if not all(isinstance(k, str) for k in inputs):
            raise RooflineError(f"{target} returned a dict of inputs whose keys are not all argument names")
        inputs = dict(inputs)
    elif not isinstance(inputs, tuple):
        raise RooflineError(f"{target} returned {_describe(inputs)} as the inputs: expected a tensor, a tuple of "
                            "arguments or a dict of keyword arguments")
    if not _holds_tensor(inputs):
        raise RooflineError(f"{target} returned inputs with no tensor in them ({_describe(inputs)})")
    return model, inputs


def _as_keywords(model: Any, args: Any, kwargs: Mapping, target: str) -> Any:
    """(model, args, kwargs), as torch.export takes them, as one dict of keyword arguments: the positional ones
    bound to the names of the model's forward (``inspect.signature(...).bind``), so the model is called as
    ``model(**inputs)``. What does not bind (too many arguments, a forward taking ``*args``) is one line."""
    import inspect

    import torch

    if not isinstance(model, torch.nn.Module):
        return model  # check_factory_result says what is wrong with the model
    if isinstance(args, (torch.Tensor, list)):
        args = (args,)
    if not isinstance(args, tuple):
        raise RooflineError(f"{target} returned {_describe(args)} as the positional arguments: expected a tuple")
    if not all(isinstance(k, str) for k in kwargs):
        raise RooflineError(f"{target} returned a dict of inputs whose keys are not all argument names")
    try:
        signature = inspect.signature(model.forward)
    except (TypeError, ValueError):
        signature = None
    if signature is None or (args and any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values())):
        raise RooflineError(f"{target} returned (model, args, kwargs) for a forward whose positional arguments have "
                            "no names: return (model, args) or (model, kwargs)")
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise RooflineError(f"{target}: its args and kwargs do not fit {type(model).__name__}.forward: {exc}") from None
    keywords = dict(bound.arguments)
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_KEYWORD:  # forward(x, **kwargs): its extra keywords, as given
            keywords.update(keywords.pop(parameter.name, {}))
    return keywords


def _holds_tensor(value: Any) -> bool:
    """Whether a tensor is anywhere in the inputs: a batch dict passed as one argument (``model(batch)``) or a list
    of dicts of tensors (detection targets) holds its tensors one level or more down."""
    import torch

    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, Mapping):
        return any(_holds_tensor(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    return False


def _to_device(model: Any, inputs: tuple | dict, device: str | None, target: str,
               dtype: str | None = None) -> tuple[Any, tuple | dict]:
    import torch

    cast = getattr(torch, dtype) if dtype else None

    def to(x: torch.Tensor) -> torch.Tensor:
        return x.to(device=device, dtype=cast if cast is not None and x.is_floating_point() else None)

    def move(x: Any) -> Any:
        if isinstance(x, torch.nn.utils.rnn.PackedSequence):
            return x.to(device=device, dtype=cast if x.data.is_floating_point() else None)  # batch_sizes stay on the CPU
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)._make(move(v) for v in x)  # a namedtuple's constructor takes fields, not an iterable
        if isinstance(x, (list, tuple)):
            return type(x)(move(v) for v in x)
        if isinstance(x, Mapping):
            return type(x)({k: move(v) for k, v in x.items()})  # detection targets: a list of dicts of tensors
        return to(x) if isinstance(x, torch.Tensor) else x

    try:
        model = model.to(device=device, dtype=cast)
        moved = {k: move(v) for k, v in inputs.items()} if isinstance(inputs, dict) else tuple(move(x) for x in inputs)
    except (RuntimeError, AssertionError) as exc:
        raise RooflineError(f"{target}: cannot move the model or its inputs to {' '.join(filter(None, [device, dtype]))}: "
                            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    return model, moved


def _describe(value: Any) -> str:
    text = repr(value) if isinstance(value, (int, float, str, bool, type(None))) else type(value).__name__
    if isinstance(value, (tuple, list)):
        text = f"a {type(value).__name__} of {len(value)} ({', '.join(_describe(v) for v in value[:4])})"
    return text[:80]


@contextlib.contextmanager
def user_code(what: str) -> Iterator[None]:
    """Errors raised in the user's model while it runs under roofline become one line naming where they were
    raised (set ROOFLINE_DEBUG=1 for the full traceback)."""
    try:
        yield
    except (RooflineError, KeyboardInterrupt):
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's code: one line, exit 2
        if os.environ.get("ROOFLINE_DEBUG"):
            raise
        from roofline.capture.script_runner import user_error_line

        raise RooflineError(user_error_line(exc, what)) from None
