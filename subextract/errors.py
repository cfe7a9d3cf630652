"""Errors a user can act on: the CLI prints them as one line, never as a traceback."""


class SubextractError(Exception):
    """A failure caused by the input or the environment, explained in one line."""


class PartialResultError(SubextractError):
    """Processing stopped part-way; the cues found before the failure were still written."""
