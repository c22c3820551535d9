"""StepProfiler, the capture half of roofline.ProfilingContext: torch.profiler with a schedule, true (unprofiled)
step times, memory and sync points, handed on as a ProfileRecord.

Steps are counted by ``step()`` calls (or by calls of a decorated function). For step ``i``:

    i < wait                          runs untouched (compile, cudnn autotune, allocator warm-up)
    wait <= i < wait+timed            timed WITHOUT the profiler: the true step time
    ... + warmup                      under the profiler, discarded (its start-up cost); the SyncDetector runs
    ... + active                      profiled: ops, kernels, [memory] events, cuda_sync events

torch.profiler adds 12-89% to wall step time (ANCHORS.md), so both figures go in the Report: ``step_time``
(true) and ``profiled_step_time``, each a wall-clock time between step() calls, the device synchronised at
each boundary. The SyncDetector runs in the warmup steps (or, without any, the active ones), never in the
timed ones.

If ``step()`` is never called, the whole block is one profiled step (``whole_block=True``, the default): the
profiler runs from ``__enter__`` until the first ``step()``, and that recording is used when no scheduled step
got profiled; the first step then counts as a wait step. But steps timed after a profiler has run in the same
process were seen slower on the H200 in some runs (ResNet-50: 5.4 -> 8.3 ms per step in one run, unchanged in
another), so code that calls ``step()`` should pass ``whole_block=False`` (the decorator, ``profile_schedule`` and
the CLI do): then nothing is profiled before the true steps are timed.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any, Callable

import torch
from torch.profiler import ProfilerActivity, schedule
from torch.profiler import profile as torch_profile

from roofline.capture import one_session
from roofline.capture.cuda_graphs import GraphCaptures
from roofline.capture.recording import CapturedGraph
from roofline.capture.syncs import SyncDetector
from roofline.errors import RooflineError
from roofline.report import Ceilings, SyncSite


@dataclasses.dataclass
class ProfileRecord:
    """A profiled run as raw data: the exported Kineto trace, the step times (true and profiled), the live sync
    sites and how the schedule went. Nothing here is analysed; ``error`` is the user code's own error, if any."""

    trace_path: Path
    device: str
    workload: str
    ceilings: Ceilings | None
    schedule: dict[str, int]
    steps_seen: int
    whole_block: bool
    block_s: float
    true_step_s: list[float]
    profiled_step_s: list[float]
    timed_after_profiler: bool
    reference_peak_bytes: int | None
    syncs: list[SyncSite] | None
    sync_steps: int
    syncs_in_warmup: bool
    syncs_simulated: bool
    error: str | None
    # the CUDA graphs captured (or replayed after a capture under roofline) while the context was open, by capture
    # number (capture/cuda_graphs.py); None where none was watched
    graphs: dict[int, CapturedGraph] | None = None
    partial_step_warmup: int = 0  # a warmup step the schedule took for a step that may have begun mid-iteration


def _experimental_config() -> Any:
    """Kineto cuda_sync events (Stream/Event/Context Sync), where this torch knows them."""
    config_class = getattr(getattr(torch._C, "_profiler", None), "_ExperimentalConfig", None)
    if config_class is None:
        return None
    try:
        return config_class(enable_cuda_sync_events=True)
    except TypeError:
        return None


def release_results(profiler: Any) -> None:
    """Free a finished torch.profiler session's recorded events now (its trace is exported, or it is thrown away):
    torch's profile object sits in a reference cycle, so they would wait for a garbage collection, holding their
    memory until then and being freed at a moment nobody chose."""
    inner = getattr(profiler, "profiler", None)  # torch.profiler.profile's torch.autograd.profiler.profile
    if inner is not None and getattr(inner, "kineto_results", None) is not None:
        inner.kineto_results = None


# Set while a script runs under `roofline profile` (capture/script_runner.py): a context the script makes (a
# roofline.ProfilingContext) is then this stand-in, whose steps are the harness's: two profilers cannot run at once.
script_stand_in: Callable[[], Any] | None = None


class StepProfiler:
    """``with StepProfiler(...) as prof: for ...: train_step(); prof.step()`` then ``prof.record()``.

    Capture only: the Report (and the doctor) come from roofline.ProfilingContext, this class with ``report()``.
    Also a decorator: ``@StepProfiler(wait=1, warmup=1, active=3)`` on a step function makes each call a
    step; the context opens on the first call and closes once the active steps are done.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return object.__new__(cls) if script_stand_in is None else script_stand_in()

    def __init__(
        self,
        *,
        wait: int = 1,
        warmup: int = 1,
        active: int = 3,
        timed: int | None = None,
        device: str | torch.device | None = None,
        record_shapes: bool = True,
        profile_memory: bool = True,
        with_stack: bool = True,
        detect_syncs: bool = True,
        sync_mode: str = "silent",
        ceilings: Ceilings | None = None,
        workload: str = "",
        whole_block: bool = True,
    ) -> None:
        if min(wait, warmup, active) < 0 or active < 1:
            raise RooflineError("profile schedule: wait and warmup must be >= 0 and active >= 1")
        self.whole_block_fallback = whole_block
        self._requested_wait = wait
        self.wait = max(wait, 1) if whole_block else wait
        self.warmup, self.active = warmup, active
        self.timed = active if timed is None else timed
        self.device = torch.device(device) if device is not None else torch.device(
            "cuda" if torch.cuda.is_available() else "cpu"
        )
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.detect_syncs, self.sync_mode = detect_syncs, sync_mode
        self.ceilings, self.workload = ceilings, workload
        self.steps_done = 0
        self.true_step_s: list[float] = []
        self.profiled_step_s: list[float] = []
        self.reference_peak_bytes: int | None = None
        self.trace_path: Path | None = None
        self.syncs: SyncDetector | None = None
        self.sync_steps = 0
        self.error: BaseException | None = None
        self._cuda = self.device.type == "cuda"
        self._synchronize = torch.cuda.synchronize if self._cuda else None
        self._block_profiler: Any = None
        self._profiler: Any = None
        self._phase_start = 0.0
        self._entered_at = 0.0
        self._block_s = 0.0
        self._block_reference: int | None = None
        self._open = False
        self._closed = False
        self._in_session = False  # holding the process's profiler (capture/one_session.py)
        self._graphs = GraphCaptures()
        # A step finder's boundaries may still switch (forwards -> optimizer.step()) while this says True: with no
        # warmup steps the profiler then starts with one of its own (``_enter_phase``). None: they never switch.
        self.boundaries_may_switch: Callable[[], bool] | None = None
        self.partial_step_warmup = 0  # that step, 1 when taken
        self._dir = Path(tempfile.mkdtemp(prefix="roofline-profile-"))
        weakref.finalize(self, shutil.rmtree, str(self._dir), True)

    # -- schedule ------------------------------------------------------------------------------------------
    @property
    def first_timed(self) -> int:
        return self.wait

    @property
    def first_warmup(self) -> int:
        return self.wait + self.timed

    @property
    def first_active(self) -> int:
        return self.wait + self.timed + self.warmup

    @property
    def total_steps(self) -> int:
        return self.first_active + self.active

    def extend_wait(self) -> None:
        """Count the step about to end as one more waiting step, if no step has been timed yet: a step finder
        that switched boundaries mid-iteration (forward -> optimizer.step) would otherwise time a partial step.

        With no timed steps the profiler may have started as this step began. It is never restarted: a second
        session started on top of it crashed the process when torch freed the first one's records, and one
        started after stopping it, inside the step, corrupted torch's records (segfaults, both). With warmup
        steps this step becomes one more of the running session's warmup steps; with none it is already recorded
        and stays the first profiled step, unless the profiler started with a warmup step of its own for this
        (``partial_step_warmup``): then this step is that warmup step, thrown away."""
        if self.steps_done > self.wait:
            return
        if self.partial_step_warmup and self.steps_done == self.first_warmup:
            return
        if self._profiler is not None:
            if not self.warmup or self.profiled_step_s:
                return
            self._profiler.schedule = self._schedule(extra_warmup=1)
        self.wait += 1

    @property
    def finished(self) -> bool:
        return self._closed

    def _activities(self) -> list[Any]:
        activities = [ProfilerActivity.CPU]
        if self._cuda:
            activities.append(ProfilerActivity.CUDA)
        return activities

    def _new_profiler(self, schedule: Any = None) -> Any:
        kwargs: dict[str, Any] = dict(
            activities=self._activities(),
            record_shapes=self.record_shapes,
            profile_memory=self.profile_memory,
            with_stack=self.with_stack,
            schedule=schedule,
        )
        config = _experimental_config() if self._cuda else None
        if config is not None:
            kwargs["experimental_config"] = config
        return torch_profile(**kwargs)

    def _start_session(self, schedule: Any = None) -> Any:
        """A new torch.profiler session, entered: the process's only one while it runs (capture/one_session.py).
        Under `roofline profile` a profiler the script runs itself is left to torch's own error, which
        script_runner names (the script's line, and which profiler)."""
        if not self._in_session:
            one_session.claim("ProfilingContext", user_profiler=script_stand_in is None)
            self._in_session = True
        profiler = self._new_profiler(schedule)
        profiler.__enter__()
        return profiler

    def _end_session(self) -> None:
        if self._in_session:
            one_session.release("ProfilingContext")
            self._in_session = False

    def _sync(self) -> None:
        if self._synchronize is not None:
            self._synchronize()

    def _capturing(self) -> bool:
        return self._cuda and torch.cuda.is_current_stream_capturing()

    # -- context manager -----------------------------------------------------------------------------------
    def __enter__(self) -> "StepProfiler":
        if self._open or self._closed:
            raise RooflineError("a ProfilingContext runs once: make a new one for another run")
        self._open = True
        self._graphs.__enter__()  # from the start: a capture in the first (waiting) steps is seen
        try:
            self._sync()
            self._reset_peak()
            if self.whole_block_fallback:
                self._block_profiler = self._start_session()
                self._start_syncs()
            self._entered_at = self._phase_start = time.perf_counter()
            self._enter_phase()
        except BaseException:
            self._graphs.close()
            self._end_session()
            raise
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self.error = exc
        self.close()

    def step(self) -> None:
        """Mark the end of one step (one training iteration, one forward, one generated token...).

        A step that ends while the current stream captures a CUDA graph is not one: capture records kernels without
        running them, and the sync a step boundary makes would end the user's capture with an error."""
        if not self._open or self._closed or self._capturing():
            return
        self._sync()
        now = time.perf_counter()
        i = self.steps_done
        if self.syncs is not None and self.syncs._active:
            self.sync_steps += 1
        if i == 0 and self._block_profiler is not None:
            self._stop_syncs()
            self._block_s = now - self._entered_at
            self._block_reference = self._peak_allocated()
            self._block_profiler.__exit__(None, None, None)
            if self._profiler is None:  # the scheduled session, started with it (no wait, no timed steps), runs on
                self._end_session()
        if self.first_timed <= i < self.first_warmup:
            self.true_step_s.append(now - self._phase_start)
        elif self.first_active <= i < self.total_steps:
            self.profiled_step_s.append(now - self._phase_start)
        if i + 1 == self.total_steps:
            self._stop_syncs()
            self.reference_peak_bytes = self._peak_allocated()
        if self._profiler is not None and i < self.total_steps:
            self._profiler.step()
        self.steps_done = i + 1
        self._enter_phase()
        self._sync()
        self._phase_start = time.perf_counter()

    def _enter_phase(self) -> None:
        """The profiler starts with the warmup steps. The SyncDetector runs in the warmup steps (profiled and
        thrown away anyway), so neither the true steps nor the kept profile carry its cost; with no warmup
        steps it runs in the active ones."""
        if self.steps_done == self.first_warmup and self._profiler is None:
            if not self.warmup and self.boundaries_may_switch is not None and self.boundaries_may_switch():
                # Forwards are the steps so far and an optimizer.step() may yet end one mid-iteration: that step,
                # under the profiler already, would be the first profiled one (a part of an iteration; the session
                # cannot be restarted, extend_wait). One warmup step, thrown away, is the one that may be partial.
                self.warmup = self.partial_step_warmup = 1
            self._profiler = self._start_session(self._schedule())
            if self.warmup:
                self._start_syncs()
        if self.steps_done == self.first_active:
            if self.warmup:
                self._stop_syncs()
            else:
                self._start_syncs()
            self._reset_peak()

    def _schedule(self, extra_warmup: int = 0) -> Any:
        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Profiler won't be using warmup")
            return schedule(wait=0, warmup=self.warmup + extra_warmup, active=self.active, repeat=1)

    def _start_syncs(self) -> None:
        if self.detect_syncs:
            self.sync_steps = 0
            self.syncs = SyncDetector(self.sync_mode)
            self.syncs.start()

    def _stop_syncs(self) -> None:
        if self.syncs is not None:
            self.syncs.stop()

    def _reset_peak(self) -> None:
        if self._cuda:
            self._sync()
            torch.cuda.reset_peak_memory_stats(self.device)

    def _peak_allocated(self) -> int | None:
        return int(torch.cuda.max_memory_allocated(self.device)) if self._cuda else None

    def close(self) -> None:
        """Stop everything, restore every patch, keep the exported trace (safe to call twice)."""
        if self._closed or not self._open:
            return
        self._closed = True
        if self.syncs is not None and self.syncs._active:
            self.sync_steps += 1
        try:
            self._graphs.close()
            self._stop_syncs()
        finally:
            block_running = self.steps_done == 0 and self._block_profiler is not None
            if block_running:
                self._sync()
                self._block_s = time.perf_counter() - self._entered_at
                self._block_reference = self._peak_allocated()
                self._block_profiler.__exit__(None, None, None)
            if self._profiler is not None:
                self._profiler.__exit__(None, None, None)
            if self.profiled_step_s:
                self._export(self._profiler)
            elif self._block_profiler is not None:
                self._export(self._block_profiler)
                self.reference_peak_bytes = self._block_reference
            release_results(self._profiler)
            release_results(self._block_profiler)
            self._end_session()

    def _export(self, profiler: Any) -> None:
        path = self._dir / "trace.json"
        try:
            profiler.export_chrome_trace(str(path))
        except (RuntimeError, AssertionError):
            return
        self.trace_path = path

    # -- decorator -----------------------------------------------------------------------------------------
    def __call__(self, fn: Callable) -> Callable:
        self.whole_block_fallback = False
        self.wait = self._requested_wait
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if self._closed:
                return fn(*args, **kwargs)
            if not self._open:
                self.__enter__()
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                self.error = exc
                self.close()
                raise
            self.step()
            if self.steps_done >= self.total_steps:
                self.close()
            return result

        wrapper.profiler = self  # type: ignore[attr-defined]
        return wrapper

    # -- results -------------------------------------------------------------------------------------------
    @property
    def whole_block(self) -> bool:
        """True when the recording is the whole block (step() never called, or no step got profiled)."""
        return self.steps_done == 0 or not self.profiled_step_s

    def record(self) -> ProfileRecord:
        """What the run left behind, unanalysed (closes the context first); roofline.analyze.profiled turns it
        into a Report."""
        self.close()
        if self.trace_path is None:
            raise RooflineError(
                "nothing was profiled: call step() after each step, enough times for the schedule "
                f"({self.total_steps}), or use ProfilingContext(whole_block=True) to profile a block without steps"
            )
        return ProfileRecord(
            trace_path=self.trace_path, device=str(self.device), workload=self.workload, ceilings=self.ceilings,
            schedule={"wait": self.wait, "timed": self.timed, "warmup": self.warmup, "active": self.active},
            steps_seen=self.steps_done, whole_block=self.whole_block, block_s=self._block_s,
            true_step_s=list(self.true_step_s), profiled_step_s=list(self.profiled_step_s),
            timed_after_profiler=self._cuda and self._block_profiler is not None,
            reference_peak_bytes=self.reference_peak_bytes,
            syncs=self.syncs.sites(steps=max(self.sync_steps, 1)) if self.syncs is not None else None,
            sync_steps=self.sync_steps, syncs_in_warmup=bool(self.warmup) and not self.whole_block,
            syncs_simulated=self.syncs is not None and self.syncs.simulated,
            error=f"{type(self.error).__name__}: {self.error}" if self.error is not None else None,
            graphs=dict(self._graphs.graphs),
            partial_step_warmup=self.partial_step_warmup,
        )


def profile_schedule(
    fn: Callable[[], Any], *, wait: int = 1, warmup: int = 1, active: int = 3, timed: int | None = None, **options: Any
) -> StepProfiler:
    """Run ``fn`` as many times as the schedule needs, under a StepProfiler; returns the closed context."""
    options.setdefault("whole_block", False)
    context = StepProfiler(wait=wait, warmup=warmup, active=active, timed=timed, **options)
    with context:
        for _ in range(context.total_steps):
            fn()
            context.step()
    return context
