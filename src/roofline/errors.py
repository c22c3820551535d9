"""Errors a user can act on. The CLI prints them as one line on stderr and exits 2, never a traceback."""


class RooflineError(Exception):
    """Bad input or an unusable environment, with a message that says what to do next."""

    exit_code = 2
