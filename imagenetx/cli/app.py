"""Commands around FiftyOne itself: ``app``, ``plugin``."""

from imagenetx.cli.base import CommandGroup

TITLE = "App, plugin and database"


def register(group: CommandGroup) -> None:
    """Adds this module's commands."""
    p = group.add("app", run_app, "open the FiftyOne App with this plugin")
    p.add_argument("--dataset", required=True)
    p.add_argument("--port", type=int)
    p.add_argument("--remote", action="store_true", help="serve without opening a browser")

    p = group.add("plugin", run_plugin, "make this checkout visible to FiftyOne as a plugin")
    p.add_argument("action", choices=["install"])


def run_app(args) -> int:
    from imagenetx.plugin import launch_app

    launch_app(args.dataset, port=args.port, remote=args.remote)
    return 0


def run_plugin(args) -> int:
    from imagenetx.plugin import install_plugin

    print(f"Plugin linked at {install_plugin()}")
    return 0
