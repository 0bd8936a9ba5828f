"""Cue-conflict: Geirhos et al.'s texture-shape stimuli, shape bias, and
the published responses of humans and models beside the user's."""

from imagenetx.benchmarks.cue_conflict.loaders import load_cue_conflict

__all__ = ["load_cue_conflict"]
