"""App panels: thin adapters over the ``imagenetx`` library."""

from .error_ratios import ImageNetXPanel
from .sample import ImageNetXSamplePanel


def register_panels(plugin):
    """Registers the plugin's panels."""
    plugin.register(ImageNetXPanel)
    plugin.register(ImageNetXSamplePanel)
