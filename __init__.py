"""The imagenet-x FiftyOne plugin: registers its operators and panels.

All logic lives in the ``imagenetx`` library; see ``operators/`` and
``panels/`` for the thin App adapters.
"""

# FiftyOne imports this folder as a package. pytest also imports this file,
# as the root of the test tree, and when the checkout's folder name is not a
# Python name (``fiftyone-imagenet-x``, ``wt-imagenet-d``) it imports it
# bare, where relative imports fail: then there is nothing to register.
if __package__:
    from .operators import register_operators
    from .panels import register_panels


def register(plugin):
    register_operators(plugin)
    register_panels(plugin)
