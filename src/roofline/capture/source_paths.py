"""One spelling for source locations, whether they come from a live frame or from a profiler trace.

Live frames (sync sites, recorded ops, allocations) give absolute paths; torch.profiler's Python tracer writes
a frame's file relative to the sys.path entry it was imported from (`roofline/lab/generate.py`). A project's
own files are spelled relative to the working directory either way, so one file reads the same in every table
and finding and opens from where the command ran.
"""

from __future__ import annotations

import functools
import os
import sys


_PACKAGE_DIRS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


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
        return short_path(file)
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
