"""Moved to :mod:`imagenetx.analysis.demo`; this alias goes in imagenetx 0.2."""

from imagenetx.deprecation import moved_to

__getattr__ = moved_to(__name__, "imagenetx.analysis.demo")
