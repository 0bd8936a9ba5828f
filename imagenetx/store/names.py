"""The names this project stores its records under, in one place, so that
what only reads them (the analysis, the panel) imports no model library."""

#: the key of a prediction field's ``info`` that keeps the run that wrote it
INFO_KEY = "imagenetx_model"

#: the key of a probe field's ``info`` that keeps the probe run that wrote it
PROBE_INFO_KEY = "imagenetx_probe"
