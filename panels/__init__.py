"""App panels. The "ImageNet-X" error-ratio panel is built on the metrics
library of the error-ratio issue; until then this plugin registers none."""


def register_panels(plugin):
    """Registers the plugin's panels (none yet)."""
