"""What the plugin registers when it cannot run: the ImageNet-X panel,
showing the one line that says why and what to do.

It imports FiftyOne only, never ``imagenetx``.
"""

import fiftyone.operators as foo
import fiftyone.operators.types as types


def unavailable_panel(problem: str):
    """A panel class named like the real one that shows ``problem``."""

    class ImageNetXUnavailable(foo.Panel):
        @property
        def config(self):
            return foo.PanelConfig(name="imagenetx_panel", label="ImageNet-X",
                                   icon="bar_chart", surfaces="grid")

        def on_load(self, ctx):
            ctx.panel.data.set({"problem": problem})

        def render(self, ctx):
            panel = types.Object()
            panel.md(problem, name="problem")
            return types.Property(panel)

    return ImageNetXUnavailable
