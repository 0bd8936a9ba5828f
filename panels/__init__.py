"""App panels: thin adapters over the ``imagenetx`` library."""

from .error_ratios import ImageNetXPanel


def register_panels(plugin):
    """Registers the plugin's panels."""
    plugin.register(ImageNetXPanel)
