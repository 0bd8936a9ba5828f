"""Moved to :mod:`imagenetx.present.charts.cue_conflict`; this alias goes in imagenetx 0.2."""

from imagenetx.deprecation import moved_to

__getattr__ = moved_to(__name__, "imagenetx.present.charts.cue_conflict")
