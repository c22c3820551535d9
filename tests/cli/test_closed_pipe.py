"""`roofline ... | head`: the reader closing the pipe ends the command quietly (no traceback), exit 141 as a Unix tool
killed by SIGPIPE reports."""

from __future__ import annotations

import io
import os
import sys

from roofline.cli import main


class _ClosedPipe(io.TextIOBase):
    def __init__(self, fd: int):
        self._fd = fd

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        return self._fd


def test_a_closed_pipe_ends_the_command_without_a_traceback(monkeypatch, capsys):
    read_end, write_end = os.pipe()
    try:
        monkeypatch.setattr(sys, "stdout", _ClosedPipe(write_end))
        assert main(["doctor", "--list-rules"]) == 141
    finally:
        os.close(read_end)
        os.close(write_end)
    assert capsys.readouterr().err == ""
