"""The imagenet-x FiftyOne plugin: registers its operators and panels.

All logic lives in the ``imagenetx`` library; see ``operators/`` and
``panels/`` for the thin App adapters, and ``library.py`` for which copy of
the library the plugin runs on.
"""

import os

# FiftyOne imports this folder as a package. pytest also imports this file,
# as the root of the test tree, and when the checkout's folder name is not a
# Python name (``fiftyone-imagenet-x``, ``wt-imagenet-d``) it imports it
# bare, where relative imports fail: then there is nothing to register.
if __package__:
    from .library import logger, missing_requirement, use_library
    from .unavailable import unavailable_panel

    PROBLEM = use_library(os.path.dirname(os.path.abspath(__file__))).problem
    if PROBLEM is None:
        try:
            from .operators import register_operators
            from .panels import register_panels
        except ImportError as e:  # a requirement not installed: one line, not a traceback
            PROBLEM = missing_requirement(e, os.path.dirname(os.path.abspath(__file__)))
            logger.warning(PROBLEM)


def register(plugin):
    if PROBLEM:
        plugin.errors.append(PROBLEM)  # FiftyOne sends these to the App
        plugin.register(unavailable_panel(PROBLEM))
        return
    register_operators(plugin)
    register_panels(plugin)
