"""The names this project stores its records under, in one place, so that
what only reads them (the analysis, the panel) imports no model library."""

#: the key of a prediction field's ``info`` that keeps the run that wrote it
INFO_KEY = "imagenetx_model"

#: the key of a probe field's ``info`` that keeps the probe run that wrote it
PROBE_INFO_KEY = "imagenetx_probe"


def error_field(field: str) -> str:
    """The field that records why a sample's image could not be read by a
    run writing ``field`` (``<field>_error``)."""
    return f"{field}_error"
