"""At the shell: `roofline ... | head` (the reader closing the pipe) ends the command quietly (no traceback), exit 141
as a Unix tool killed by SIGPIPE reports; a mistyped option points at its subcommand's help; a required option's
help says so, not 'default: not set'."""

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


def test_an_option_the_subcommand_lacks_points_at_its_own_help(capsys):
    """argparse reported `--batchsize` from the top-level parser: 'see `roofline --help`', which lists no option."""
    assert main(["analyze", "--model", "llama-tiny", "--batchsize=2"]) == 2
    assert capsys.readouterr().err == ("roofline: error: analyze: unrecognized arguments: --batchsize=2 "
                                       "(see `roofline analyze --help`)\n")


def test_a_required_option_has_no_default_in_its_help():
    from roofline.cli import build_parser
    from roofline.cli.profile import _subparser

    help_text = " ".join(_subparser(build_parser(), "lab").format_help().split())
    assert "output folder (required)" in help_text
