"""What of a big report's files needs only its ops, worked out by one forked child from the moment the ops are
placed (analyze/pipeline.py's ``ops_placed``), while this process builds the rest of the report: report.json's op
list, encoded into an unnamed temporary file, then report.html's op table and chart (render/html.py's
``ops_parts``), pickled back.

Why one child with both: on issue 23's 1 M-event trace the op list's JSON is ~0.3 s of CPU. Encoded at the end, it
shared the command's last second and two cores with the doctor's child and the PNG's drawer, all CPU-bound; here it
runs while the report's summary is built, when the second core has only the op table to do. A second child there
would make three processes on two cores and slow the build, the command's critical path.

The child works on the ops as they are at the fork: they must not change afterwards (the doctor and the PNG only
read them). Whatever goes wrong in the child (it dies, cannot write the file, a full disk), the caller gets None
for the op list (the report encodes it itself) and the op table is built in-process: the same bytes either way.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterator
from typing import Any

from roofline.forked import can_fork, fork_running
from roofline.report import OpRecord, ops_json_records

READ_BYTES = 8 << 20


class PlacedOpsWork:
    """The child, its temporary file (already unlinked: nothing is left behind, whatever happens) and the pipe on
    which it says the op list is written (its size) and then sends the op table."""

    def __init__(self, ops: list[OpRecord], html: bool) -> None:
        self._ops, self._html = ops, html
        self._file = tempfile.TemporaryFile()
        read, write = os.pipe()
        self._pid: int | None = fork_running(_work_on, ops, html, self._file.fileno(), write, close=(read,))
        os.close(write)
        self._pipe = os.fdopen(read, "rb")
        self._json_asked = False

    @classmethod
    def start(cls, ops: list[OpRecord], html: bool = True) -> "PlacedOpsWork | None":
        """The child, forked now; None where fork is unavailable or unsafe (another thread)."""
        return cls(ops, html) if can_fork() else None

    def op_records(self) -> Iterator[bytes] | None:
        """report.json's op records as the child wrote them (``Report.json_chunks``' ``op_records``), read back a
        piece at a time; None if the child could not write them."""
        self._json_asked = True
        size = self._receive("json")
        if not self._html:
            self._reap()  # the child sends nothing more
        if size is None:
            self._file.close()
            return None
        return self._read_back(size)

    def html_parts(self) -> dict[str, Any]:
        """report.html's ``ops_parts`` of the ops: the child's, or built here if the child sent none."""
        if not self._json_asked:
            self.op_records()
        parts = self._receive("html") if self._html else None
        self._reap()
        if parts is None:
            from roofline.render.html import ops_parts

            parts = ops_parts(self._ops)
        return parts

    def result(self) -> dict[str, Any]:
        """``html_parts``, for HtmlRenderer.prepare's ``early`` (anything with a ``result()``)."""
        return self.html_parts()

    def _read_back(self, size: int) -> Iterator[bytes]:
        fd = self._file.fileno()
        try:
            offset = 0
            while offset < size:
                piece = os.pread(fd, min(READ_BYTES, size - offset), offset)
                if not piece:
                    raise OSError(f"report.json's op list ends at {offset} of {size} bytes in its temporary file")
                offset += len(piece)
                yield piece
        finally:
            self._file.close()

    def _receive(self, what: str) -> Any:
        """The child's next message if it is ``what``'s; None if the child sent none (it failed, or it died)."""
        if self._pipe.closed:
            return None
        try:
            kind, value = pickle.load(self._pipe)
        except (EOFError, OSError, pickle.UnpicklingError, ValueError, TypeError):
            self._reap()
            return None
        return value if kind == what else None

    def _reap(self) -> None:
        if not self._pipe.closed:
            self._pipe.close()
        if self._pid is not None:
            os.waitpid(self._pid, 0)
            self._pid = None


def _work_on(ops: list[OpRecord], html: bool, json_fd: int, pipe_fd: int) -> None:
    """In the child: the op list's JSON into ``json_fd``, then its size on the pipe; then the op table, if wanted.
    A failure to write the JSON sends nothing for it, and the parent encodes it itself."""
    with os.fdopen(pipe_fd, "wb") as pipe:
        size = _write_records(ops, json_fd)
        pickle.dump(("json", size), pipe, protocol=pickle.HIGHEST_PROTOCOL)
        pipe.flush()
        if html:
            from roofline.render.html import ops_parts

            pickle.dump(("html", ops_parts(ops)), pipe, protocol=pickle.HIGHEST_PROTOCOL)


def _write_records(ops: list[OpRecord], fd: int) -> int | None:
    size = 0
    try:
        with os.fdopen(fd, "wb", closefd=False) as out:
            for chunk in ops_json_records(ops):
                out.write(chunk)
                size += len(chunk)
    except OSError:
        return None
    return size
