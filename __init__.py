"""The imagenet-x FiftyOne plugin: registers its operators and panels.

All logic lives in the ``imagenetx`` library; see ``operators/`` and
``panels/`` for the thin App adapters.
"""

from .operators import register_operators
from .panels import register_panels


def register(plugin):
    register_operators(plugin)
    register_panels(plugin)
