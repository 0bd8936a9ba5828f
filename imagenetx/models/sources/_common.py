"""Helpers the sources share: close-name suggestions, one-line causes."""

import difflib


def suggest(name: str, names) -> str:
    """`` (did you mean a, b?)`` for the names close to ``name``, else ``""``."""
    close = difflib.get_close_matches(name, list(names), n=5, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def first_line(e: Exception) -> str:
    """The first line of an exception's message, at most 300 characters."""
    text = str(e).strip().splitlines()
    return text[0][:300] if text else ""
