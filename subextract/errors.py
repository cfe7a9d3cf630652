"""Errors a user can act on: the CLI prints them as one line, never as a traceback."""


class SubextractError(Exception):
    """A failure caused by the input or the environment, explained in one line."""


class PartialResultError(SubextractError):
    """Processing stopped part-way; the cues found before the failure were still written."""


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped (``\\n``, ``\\x1b``): a URL
    with ``%0a`` or a file name with a newline would otherwise forge a line of a log or of a
    batch's report."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() or char == " " else char.encode("unicode_escape").decode("ascii")
                   for char in text)
