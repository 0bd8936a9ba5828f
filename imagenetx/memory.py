"""Pausing Python's cyclic garbage collector around bulk object creation."""

import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    """Pauses the cyclic garbage collector, then restores its state.

    Parsing the annotations or decoding a 50k-sample query creates millions
    of small objects, and each allocation threshold crossed would start a
    collection over everything FiftyOne has loaded: pausing it makes these
    steps up to 2x faster. Reference counting still frees memory meanwhile.
    Usable as a ``with`` block or as a decorator.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
