"""Replacing an attribute of a class or module for the length of a recording, with the undo kept.

Shared by the sync detector (capture/syncs.py) and the CUDA graph watcher (capture/cuda_graphs.py): both wrap torch
functions while roofline records and must leave them as found, whether the owner defined the attribute itself or
inherited it (an inherited one is deleted again rather than set, so the owner keeps following its base)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def patch_attribute(owner: Any, name: str, make: Callable[[Callable], Callable],
                    restore: list[Callable[[], None]]) -> None:
    """Set ``owner.name`` to ``make(original)`` and append to ``restore`` the call that puts it back."""
    had_own = name in vars(owner)
    original = getattr(owner, name)
    setattr(owner, name, make(original))

    def undo() -> None:
        if had_own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)

    restore.append(undo)
