"""Running an unmodified script under the harness, and finding its steps without code changes.

A step ends, by the first rule that applies:
1. at each ``optimizer.step()`` (training), through torch's global optimizer step hook;
2. else at the end of each top-level ``forward`` of the largest module seen (by parameter count; on a tie, a module
   that holds the largest takes its place: a wrapper around a model first called bare), through torch's global
   module hooks;
3. else at each ``step()`` of the script's own ``torch.profiler.profile``, which is replaced by a stand-in
   that records nothing (two profilers cannot run at once); so is a ``roofline.ProfilingContext`` the script makes
   (its report is roofline's: asking for it ends the script).
Once a higher rule fires, lower ones stop counting. After the profiled steps the script is stopped (unless
``run_to_end``), so a long training run does not have to finish.
"""

from __future__ import annotations

import contextlib
import functools
import os
import runpy
import sys
import threading
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch

from roofline.capture.kineto import CALL_SITE_PREFIX
from roofline.capture.source_paths import is_user_file, short_path

if TYPE_CHECKING:
    from roofline.capture.profiling import StepProfiler

_RANK = {"profiler": 1, "forward": 2, "optimizer": 3}
_profiler_enabled = torch._C._autograd._profiler_enabled
_FastRange = getattr(getattr(torch._C, "_profiler", None), "_RecordFunctionFast", None)


class StopScript(BaseException):
    """Raised from a step hook once the profiled window is done; a BaseException so user code does not catch it."""


def weight_elements(module: torch.nn.Module) -> int:
    """Elements of the module's weights, however it stores them: its state dict's tensors (parameters, buffers,
    and the prepacked weights of quantized modules, which are not parameters: a dynamic-int8 model has none)."""
    try:
        values = list(module.state_dict(keep_vars=True).values())
    except Exception:  # noqa: BLE001 - a module's own state-dict hooks: fall back to its parameters
        return sum(p.numel() for p in module.parameters())
    total, stack = 0, values
    while stack:
        value = stack.pop()
        if isinstance(value, torch.Tensor):
            total += value.numel()
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return total


class StepFinder:
    """Calls ``on_step()`` at each step boundary of code that never calls it itself. Only boundaries on the thread
    that entered it count: a forward or optimizer step on a worker thread interleaves with the others (no nesting
    depth to follow), and the profiler is stepped, and the script stopped, from the script's own thread.
    ``off_thread`` counts the boundaries seen on other threads. ``call_sites``: while the profiler runs, each
    top-level forward is wrapped in a range naming the user line that called it (``_open_call_site``)."""

    def __init__(self, on_step: Callable[[], None], on_switch: Callable[[], None] | None = None, *,
                 call_sites: bool = True) -> None:
        self.on_step = on_step
        self.on_switch = on_switch
        self.call_sites = call_sites and _FastRange is not None
        self.source: str | None = None
        self.counts = {name: 0 for name in _RANK}
        self._depth = 0
        self._largest: tuple[int, int] | None = None
        self._largest_ref: weakref.ref | None = None
        self._wrapping: dict[tuple[int, int], bool] = {}
        self._largest_optimizer: tuple[int, int] | None = None
        self._sizes: dict[int, int] = {}
        self._handles: list[Any] = []
        self._saved: list[tuple[Any, str, Any]] = []  # (module, attribute, original) of each stand-in
        self._thread: int | None = None
        self._pid = os.getpid()
        self.off_thread = 0
        self._call_site: Any = None

    def __enter__(self) -> "StepFinder":
        self._thread, self._pid = threading.get_ident(), os.getpid()
        from torch.nn.modules import module as nn_module
        from torch.optim import optimizer as optim_module

        try:
            self._handles.append(optim_module.register_optimizer_step_post_hook(self._after_optimizer_step))
            self._handles.append(nn_module.register_module_forward_pre_hook(self._before_forward))
            self._handles.append(nn_module.register_module_forward_hook(self._after_forward))
            self._replace_script_profiler()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        if self._call_site is not None:  # a forward that raised: its range is still open
            _close_call_site(self._call_site)
            self._call_site = None
        for module, name, original in reversed(self._saved):
            setattr(module, name, original)
        self._saved = []

    def _fire(self, source: str) -> None:
        """A boundary of ``source``. When a better kind of boundary shows up (an optimizer step after forwards
        were taken as steps), the step that ends here began mid-iteration: ``on_switch`` is told first."""
        self.counts[source] += 1
        switched = self.source is not None and _RANK[source] > _RANK[self.source]
        if self.source is None or switched:
            self.source = source
        if source == self.source:
            if switched and self.on_switch is not None:
                self.on_switch()
            self.on_step()

    def _on_my_thread(self) -> bool:
        """Also False while Dynamo traces a torch.compile'd module (checked first: threading.get_ident breaks its
        graph): traced, the hooks split a small MLP into 8 compiled regions and 9 cache lookups a step instead of 1.
        The compiled module's own call (its OptimizedModule) still runs them, outside the trace. False in a process
        the script forked, too: its steps are not the profiled process's."""
        return (not torch.compiler.is_compiling() and threading.get_ident() == self._thread
                and os.getpid() == self._pid)

    def _after_optimizer_step(self, optimizer: Any, *_: Any) -> None:
        """Several optimizers stepping in one iteration (a GAN's generator and discriminator) would each end a
        step, of different work: only the one holding the most parameter elements does, as the largest module's
        forward does for forwards."""
        if not self._on_my_thread():
            self.off_thread += not torch.compiler.is_compiling()
            return
        size = self._sizes.get(id(optimizer))
        if size is None:
            size = self._sizes[id(optimizer)] = sum(
                p.numel() for group in getattr(optimizer, "param_groups", []) for p in group.get("params", [])
                if isinstance(p, torch.Tensor))
        if self._largest_optimizer is None or size > self._largest_optimizer[1]:
            self._largest_optimizer = (id(optimizer), size)
        if self._largest_optimizer[0] == id(optimizer):
            self._fire("optimizer")

    def _before_forward(self, module: torch.nn.Module, _inputs: Any) -> None:
        if self._on_my_thread():
            if not self._depth and self.call_sites and _profiler_enabled():
                self._call_site = _open_call_site(sys._getframe(1))
            self._depth += 1

    def _after_forward(self, module: torch.nn.Module, _inputs: Any, _output: Any) -> None:
        if not self._on_my_thread():
            self.off_thread += not torch.compiler.is_compiling()
            return
        self._depth = max(self._depth - 1, 0)
        if self._depth:
            return
        if self._call_site is not None:
            _close_call_site(self._call_site)
            self._call_site = None
        if _is_weight_access(module):
            return
        size = self._sizes.get(id(module))
        if size is None:
            size = self._sizes[id(module)] = weight_elements(module)
        if self._largest is None or size > self._largest[1] or (
                size == self._largest[1] and id(module) != self._largest[0] and self._wraps_largest(module)):
            self._largest = (id(module), size)
            self._largest_ref = weakref.ref(module)
        if self._largest[0] == id(module):
            self._fire("forward")

    def _wraps_largest(self, module: torch.nn.Module) -> bool:
        """Whether MODULE holds the largest module so far: a wrapper of no weights of its own (a CUDA-graph replayer,
        a DDP-like shell) around a model first called bare (a warm-up, a graph capture) ties with it on size, and
        its forwards, which call the model only nested or not at all, are then the steps. Asked once a pair."""
        key = (id(module), self._largest[0])
        if key not in self._wrapping:
            largest = self._largest_ref() if self._largest_ref is not None else None
            self._wrapping[key] = largest is not None and any(sub is largest for sub in module.modules())
        return self._wrapping[key]

    def _replace_script_profiler(self) -> None:
        finder = self

        class ScriptProfiler:
            """Stands in for torch.profiler.profile inside a profiled script: its step() marks our steps."""

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                pass

            def __enter__(self) -> "ScriptProfiler":
                return self

            def __exit__(self, *exc: Any) -> None:
                return None

            def start(self) -> None:
                pass

            def stop(self) -> None:
                pass

            def step(self) -> None:
                finder._fire("profiler")

            def export_chrome_trace(self, path: str) -> None:
                pass

            def key_averages(self, *args: Any, **kwargs: Any) -> Any:
                return _EmptyTable()

        class ScriptContext(ScriptProfiler):
            """Stands in for a roofline.ProfilingContext (any StepProfiler) the script makes: its steps, step() or
            calls of the function it decorates, mark ours; its report is the one roofline writes once the script
            ends, so asking for it ends the script."""

            def __call__(self, fn: Callable) -> Callable:
                @functools.wraps(fn)
                def wrapper(*args: Any, **kwargs: Any) -> Any:
                    result = fn(*args, **kwargs)
                    self.step()
                    return result

                wrapper.profiler = self  # type: ignore[attr-defined]
                return wrapper

            def report(self, *args: Any, **kwargs: Any) -> Any:
                raise StopScript()

            build_report = record = report

        from roofline.capture import profiling

        self._stand_in(torch.profiler, "profile", ScriptProfiler)
        self._stand_in(profiling, "script_stand_in", ScriptContext)

    def _stand_in(self, module: Any, name: str, stand_in: Any) -> None:
        self._saved.append((module, name, getattr(module, name)))
        setattr(module, name, stand_in)


def _is_weight_access(module: torch.nn.Module) -> bool:
    """A parametrization's forward (torch.nn.utils.parametrize: weight_norm, spectral_norm, orthogonal) runs
    whenever its weight is read, also outside any forward: while a model is built and initialised (EnCodec's
    weight-normed convolutions, sweep 5). Called at top level it is a weight access, never a step, though it holds
    the weight; inside a forward it nests as before."""
    from torch.nn.utils.parametrize import ParametrizationList

    return isinstance(module, ParametrizationList)


_spelled: dict[str, str] = {}


def _open_call_site(frame: Any) -> Any:
    """A range named with the user line that called the top-level module (None where no user frame called it):
    the trace reader places the ops inside it at that line where torch records no call site itself (older torch
    writes no CallFrom, and a frame already running when profiling began is named by a stale line). One range per
    top-level forward, only while the profiler runs: 3-5 us each (_RecordFunctionFast and a walk up a few
    frames, each file spelled once)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if is_user_file(filename):
            path = _spelled.get(filename)
            if path is None:
                path = _spelled[filename] = short_path(filename)
            handle = _FastRange(f"{CALL_SITE_PREFIX}{path}:{frame.f_lineno}")
            handle.__enter__()
            return handle
        frame = frame.f_back
    return None


def _close_call_site(handle: Any) -> None:
    handle.__exit__(None, None, None)


class _EmptyTable(list):
    def table(self, *args: Any, **kwargs: Any) -> str:
        return "(profiled by roofline: see its report)"


def check_script(path: str | os.PathLike[str]) -> Path:
    """The script to run, refused when it is missing or is not a file (a folder named x.py)."""
    from roofline.errors import RooflineError

    script = Path(path)
    if script.is_dir():
        raise RooflineError(f"{script} is a directory, not a script")
    if not script.is_file():
        raise RooflineError(f"script not found: {script}")
    if script.name.lower().endswith((".json", ".json.gz", ".gz")):
        raise RooflineError(f"{script} is a JSON file, not a Python script to run: for a torch.profiler trace use "
                            f"`roofline trace {script}`, for a roofline report `roofline doctor {script}`")
    return script


def run_script(path: str | os.PathLike[str], args: list[str]) -> None:
    """Run ``path`` as ``__main__`` with ``sys.argv = [path, *args]``; argv, sys.path and the working directory
    (a script's os.chdir would move a relative -o) are restored after.

    A process the script forks (os.fork) runs the rest of the script, as it would under ``python SCRIPT``, and ends
    there: it never comes back into roofline, which would profile and write the report a second time."""
    script = check_script(path)
    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
    pid = os.getpid()
    sys.argv = [str(script), *args]
    sys.path.insert(0, str(script.resolve().parent))
    try:
        with hard_exit_raises():
            runpy.run_path(str(script.resolve()), run_name="__main__")  # an absolute __file__, as `python SCRIPT` gives
    except SystemExit as exc:
        if os.getpid() != pid:
            _end_forked_child(exc)
        if exc.code not in (None, 0):
            raise
    except BaseException as exc:
        if os.getpid() != pid:
            _end_forked_child(exc)
        raise
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path
        with contextlib.suppress(OSError):
            os.chdir(saved_cwd)
    if os.getpid() != pid:
        _end_forked_child(None)


class HardExit(SystemExit):
    """The user's code called os._exit(code) in the profiled process (see ``hard_exit_raises``)."""


@contextlib.contextmanager
def hard_exit_raises() -> Iterator[None]:
    """While the user's code runs, its os._exit(code) in this process raises HardExit instead of ending the process
    on the spot, silently, without a report or a line saying why; in a process it forked it exits as always (a
    multiprocessing worker's normal end). os._exit is restored after, whatever the code raised."""
    real, pid = os._exit, os.getpid()

    def _exit(code: int) -> None:
        if os.getpid() != pid:
            real(code)
        raise HardExit(code)

    os._exit = _exit  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


def _end_forked_child(exc: BaseException | None) -> None:
    """End a process the script forked, where the script ended in it, with the exit code ``python SCRIPT`` would
    give (0, sys.exit's code, or 1 and the error's line)."""
    code = 0
    if isinstance(exc, SystemExit):
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    elif isinstance(exc, StopScript):
        code = 0
    elif exc is not None:
        code = 1
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def script_error_line(exc: BaseException, script: str | os.PathLike[str]) -> str:
    """One line naming the error and the deepest line of the script it came from."""
    target = str(Path(script).resolve())
    name = Path(script).name
    return _error_line(exc, name, lambda filename: str(Path(filename).resolve()) == target, lambda filename: name)


def user_error_line(exc: BaseException, what: str) -> str:
    """One line for an error raised by the user's code called from roofline (a factory, a model's forward): the
    error and the innermost line outside torch and roofline where it was raised."""
    return _error_line(exc, what, is_user_file, short_path)


def _error_line(exc: BaseException, what: str, counts: Callable[[str], bool], spell: Callable[[str], str]) -> str:
    """'WHAT raised Type: first line (at FILE:LINE)' with the innermost traceback frame whose file ``counts``."""
    where = ""
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if counts(filename):
            where = f" (at {spell(filename)}:{tb.tb_lineno})"
        tb = tb.tb_next
    if isinstance(exc, SystemExit):
        return f"{what} called {'os._exit' if isinstance(exc, HardExit) else 'sys.exit'}({exc.code!r}){where}"
    message = str(exc).splitlines()[0] if str(exc) else ""
    hint = next((f"; {h}" for known, h in _PROFILER_HINTS.items() if known in message), "")
    return f"{what} raised {type(exc).__name__}{': ' + message if message else ''}{where}{hint}"


# torch's error when a profiler is stopped that another session already stopped: raised inside the user's call
# stack by roofline's own step boundary, so "the script raised" alone would blame the script.
KINETO_STOPPED = "Can't disable Kineto profiler when it's not running"
PROFILER_STOPPED_HINT = ("another torch.profiler session in the program stopped roofline's (on a GPU, torch.compile "
                         "can time its autotuning candidates with one when it compiles during the profiled steps, as "
                         "FlexAttention did with an empty compile cache on an H200): run the script once without "
                         "roofline to fill the compile cache, or compile before profiling starts (a larger --wait)")
# torch's error when a second profiler starts: the script's own, where no stand-in can take its place (torch.profiler
# runs on torch.autograd.profiler.profile, so that one cannot be replaced while roofline's runs).
PROFILER_RUNNING = "Profiler is already enabled on this thread"
PROFILER_RUNNING_HINT = ("the script runs a profiler of its own (torch.autograd.profiler.profile) while roofline's runs, "
                         "and two cannot: remove it for `roofline profile` (torch.profiler.profile "
                         "and roofline.ProfilingContext can stay: they stand in)")
_PROFILER_HINTS = {KINETO_STOPPED: PROFILER_STOPPED_HINT, PROFILER_RUNNING: PROFILER_RUNNING_HINT}


@dataclass
class ScriptRun:
    """How a profiled script ended: its own error (None when it finished or was stopped after the profiled steps)
    and which boundary its steps were found at (``StepFinder.source``; None when no step was found)."""

    error: BaseException | None
    step_source: str | None
    steps_seen: int
    off_thread_boundaries: int = 0
    threads_left: tuple[str, ...] = ()
    """Names of the threads the script started that are still running (not daemons): a plain exit would wait for
    them, forever if they loop."""


def profile_script(context: "StepProfiler", script: str | os.PathLike[str], script_args: Sequence[str] = (),
                   *, whole: bool = False, run_to_end: bool = False) -> ScriptRun:
    """Run ``script`` unchanged under ``context`` (not yet entered), one context step per step the finder sees.

    ``whole``: no step detection (the context's whole-block recording is the profile). ``run_to_end``: let the
    script finish after the profiled steps instead of stopping it there. The script's own exception is returned,
    not raised, so the steps profiled before it still make a report; a RooflineError or Ctrl-C propagates.
    The context is closed on return.
    """
    from roofline.errors import RooflineError

    def on_step() -> None:
        context.step()
        if context.steps_done >= context.total_steps and not run_to_end:
            raise StopScript()

    finder = StepFinder((lambda: None) if whole else on_step, on_switch=context.extend_wait,
                        call_sites=context.with_stack)
    if not whole:
        context.boundaries_may_switch = lambda: finder.source != "optimizer"
    error: BaseException | None = None
    before = set(threading.enumerate())
    try:
        with context, finder:
            run_script(script, list(script_args))
    except StopScript:
        context.error = None
    except (RooflineError, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - the script's own error (SystemExit included): one line, outputs kept
        error = exc
    finally:
        context.close()
    left = tuple(t.name for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon)
    return ScriptRun(error, finder.source, context.steps_done, finder.off_thread, left)
