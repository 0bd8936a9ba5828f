"""Probes: transformations applied to a model's inputs while predicting
(band-pass filters, common corruptions, band-limited noise), one level at a
time, with the predictions stored per level (:mod:`imagenetx.probes.run`)."""

from imagenetx.probes.base import Probe, get_probe, probe_names, register_probe

__all__ = ["Probe", "get_probe", "probe_names", "register_probe"]
