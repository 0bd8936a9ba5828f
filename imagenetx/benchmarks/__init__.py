"""Robustness benchmarks: each module or folder says how to load its data
and which slicings and label spaces it offers."""
