"""Helpers the sources share: close-name suggestions, one-line causes."""

import difflib
import re


def suggest(name: str, names) -> str:
    """`` (did you mean a, b?)`` for the names close to ``name``, else ``""``."""
    close = difflib.get_close_matches(name, list(names), n=5, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def first_line(e: Exception) -> str:
    """The first line of an exception's message, at most 300 characters."""
    text = str(e).strip().splitlines()
    return text[0][:300] if text else ""


def whole_message(e: Exception, limit: int = 400) -> str:
    """An exception's whole message on one line; past ``limit`` characters
    it ends at the last full sentence (a library's message often spans
    lines, and its first line alone stops mid-sentence)."""
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", str(e)).split())  # no terminal styles
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = cut.rfind(". ")
    return cut[:end + 1] if end > 0 else cut.rstrip() + " ..."
