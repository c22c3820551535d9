"""One spelling for source locations, whether they come from a live frame or from a profiler trace.

Live frames (sync sites, recorded ops, allocations) give absolute paths; torch.profiler's Python tracer writes
a frame's file relative to the sys.path entry it was imported from (`roofline/lab/generate.py`). A project's
own files are spelled relative to the working directory either way, so one file reads the same in every table
and finding and opens from where the command ran.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import sysconfig

_PACKAGE_DIRS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_ROOFLINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What follows a "roofline" path component in roofline's own files (its subpackages and modules).
_ROOFLINE_ENTRIES = frozenset(name.removesuffix(".py") for name in os.listdir(_ROOFLINE_DIR))
# roofline's built-in workloads and case study are the code being profiled, hence user code.
_ROOFLINE_USER_PACKAGES = frozenset({"models", "lab"})
# Standard-library modules that wrap user code, as a trace spells them (from their sys.path entry: "threading.py",
# "concurrent/futures/thread.py"); a bare "test.py" or "code.py" stays a user file.
_STDLIB_WRAPPERS = frozenset({
    "threading", "contextlib", "functools", "typing", "runpy", "dataclasses", "abc", "copy", "enum", "inspect",
    "importlib", "collections", "concurrent", "asyncio", "weakref", "warnings", "json", "multiprocessing",
    "unittest", "cProfile", "profile", "trace", "pdb", "bdb", "traceback", "logging", "tempfile", "os",
})
_STDLIB_DIRS = tuple(
    {os.path.normpath(d).replace(os.sep, "/") + "/" for d in (sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")) if d}
)
# a standard library, also another machine's: Unix's lib/python3.X/, a Windows install's Lib/ (beside
# Lib/site-packages; only under a drive letter, so a Unix project's own Lib/ folder stays the user's)
_STDLIB_ANYWHERE = re.compile(r"/lib/python\d[^/]*/|^[A-Za-z]:/(?:[^/]+/)*Lib/(?!site-packages/)")


# Code torch.compile generates and runs, which no user can edit: Inductor's output code and kernels
# ({cache}/{key[1:3]}/{key}.py, key "c" + a base32 hash; the cache is /tmp/torchinductor_<user> unless
# TORCHINDUCTOR_CACHE_DIR moves it), its debug dumps (torch_compile_debug/) and Triton's cache (~/.triton/cache,
# TRITON_CACHE_DIR). FX graph modules (<eval_with_key>.N) and <frozen ...> start with "<", as all unreal files do.
_GENERATED = re.compile(r"(?:^|/)(?:torchinductor_[^/]*|torch_compile_debug|\.triton/cache)/|(?:^|/)(\w\w)/c\1\w{40,}\.py$")
_GENERATED_DIR_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")


def is_generated_file(filename: str) -> bool:
    """Whether ``filename`` is code torch.compile (Inductor, Triton) generated: such a frame is never the user's
    line; the user line that called the compiled module or function is (see ``_GENERATED``)."""
    path = filename.replace(os.sep, "/")
    if _GENERATED.search(path):
        return True
    return any(directory and path.startswith(directory.replace(os.sep, "/").rstrip("/") + "/")
               for directory in map(os.environ.get, _GENERATED_DIR_VARIABLES))


@functools.lru_cache(maxsize=16384)
def is_user_file(filename: str) -> bool:
    """Whether a frame of ``filename`` is the user's code: the one test for live frames (absolute paths: sync
    sites, recorded ops, allocations, a user error's line) and trace frames (torch's Python tracer spells a file
    from its sys.path entry, ``transformers/generation/utils.py``; sometimes absolute). The innermost user frame
    is the location a view names.

    Not user code: torch and Triton (a ``torch`` or ``triton`` path component), roofline's machinery (roofline's own files except its
    built-in workloads and case study, ``roofline/models`` and ``roofline/lab``), Python's standard library,
    generated or built-in code (``<frozen ...>``, ``<string>``, ``<built-in ...>``, FX's ``<eval_with_key>``,
    torch.compile's output: ``is_generated_file``) and console-script launchers (``.venv/bin/roofline``). Everything else is, installed packages included: a sync inside HF
    generate() is reported at the library line that waits (``transformers/generation/utils.py:383``, once per
    decode step), which is what the fix changes, not at the user's one call of generate()."""
    path = filename.replace(os.sep, "/")
    if not path or path.startswith("<") or is_generated_file(filename):
        return False
    if "/bin/" in path and not path.endswith(".py"):
        return False
    for marker in ("/site-packages/", "/dist-packages/"):
        at = path.rfind(marker)
        if at >= 0:
            return _owned_by(path[at + len(marker):].split("/")) in (None, "user")
    parts = path.split("/")
    owner = _owned_by(parts)
    if owner is not None:
        return owner == "user"
    if path.startswith(_STDLIB_DIRS) or _STDLIB_ANYWHERE.search(path):
        return False
    return os.path.isabs(filename) or parts[0].removesuffix(".py") not in _STDLIB_WRAPPERS


# torch and the Triton runtime it compiles with: machinery a user calls, never the line they edit (a @triton.jit
# kernel launched from a forward is placed at the launch in the user's code, not in triton/backends/nvidia/driver.py).
_RUNTIMES = frozenset({"torch", "triton"})


def _owned_by(parts: list[str]) -> str | None:
    """``torch`` (torch or Triton), ``roofline`` (its machinery) or ``user`` (its built-in workloads) when a path
    component says so,
    else None: decided by components, so that a file spelled from its package (a trace's frame) and one spelled
    in full (a live frame, or roofline installed under a lib/python directory) agree."""
    for i, part in enumerate(parts[:-1]):
        if part in _RUNTIMES:
            return "torch"
        if part == "roofline" and parts[i + 1].removesuffix(".py") in _ROOFLINE_ENTRIES:
            return "user" if parts[i + 1] in _ROOFLINE_USER_PACKAGES else "roofline"
    return None


def short_path(filename: str) -> str:
    """``filename`` relative to the working directory, unless that climbs more than one level out of it; an
    installed package's file from its package on (``transformers/generation/utils.py``), as traces spell it."""
    for marker in _PACKAGE_DIRS:
        at = filename.rfind(marker)
        if at >= 0:
            return filename[at + len(marker):]
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if relative.startswith(".." + os.sep + "..") else relative


def local_trace_path(file: str) -> str:
    """A trace frame's file relative to the working directory, as short_path spells live frames' files: an
    absolute path shortened alike, a project file found through a sys.path entry spelled from the working
    directory (`src/roofline/lab/generate.py` for the trace's `roofline/lab/generate.py`).

    Installed packages, a trace recorded elsewhere and files this machine lacks keep the trace's spelling."""
    return _local_trace_path(file, os.getcwd())


@functools.lru_cache(maxsize=4096)
def _local_trace_path(file: str, cwd: str) -> str:
    if os.path.isabs(file):
        return short_path(file) if os.path.isfile(file) else file
    if os.path.isfile(os.path.join(cwd, file)):
        return file
    for entry in sys.path:
        candidate = os.path.abspath(os.path.join(entry or cwd, file))
        if _is_project_file(candidate, cwd) and os.path.isfile(candidate):
            return os.path.relpath(candidate, cwd)
    return file


def _is_project_file(path: str, cwd: str) -> bool:
    """Under the working directory and not an installed package (a virtual environment may sit there too)."""
    parts = path.split(os.sep)
    return path.startswith(cwd + os.sep) and "site-packages" not in parts and "dist-packages" not in parts
