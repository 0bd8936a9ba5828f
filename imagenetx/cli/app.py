"""Commands around FiftyOne itself: ``app``, ``plugin``, ``doctor``, ``db``."""

# lazy imports: start-up (the parser is built, and --help shown, without FiftyOne, torch or scipy)

from imagenetx.cli.base import CommandGroup

TITLE = "App, plugin and database"


def register(group: CommandGroup) -> None:
    """Adds this module's commands."""
    p = group.add("app", run_app, "open the FiftyOne App with this plugin")
    p.add_argument("--dataset", required=True)
    p.add_argument("--port", type=int)
    p.add_argument("--address", help="the address the App binds (default 127.0.0.1, this "
                   "machine only, unless FIFTYONE_DEFAULT_APP_ADDRESS says otherwise; "
                   "0.0.0.0 exposes it to the network)")
    p.add_argument("--remote", action="store_true", help="serve without opening a browser")
    p.add_argument("--no-worker", dest="worker", action="store_false",
                   help="no `fiftyone delegated launch` worker beside the App (long jobs "
                        "then run inside the App, with progress)")

    p = group.add("plugin", run_plugin, "install the FiftyOne plugin (from this checkout or "
                  "the installed wheel) into FiftyOne's plugins folder, or uninstall it",
                  database=False)
    p.add_argument("action", choices=["install", "uninstall"])
    p.add_argument("--plugins-dir", help="the plugins folder (default: FiftyOne's, "
                   "FIFTYONE_PLUGINS_DIR)")

    group.add("doctor", run_doctor, "what to know before filing a bug: versions, CUDA, the "
              "plugin, the database, caches, missing optional pieces (exit 0: the core is "
              "there)", database=False)

    p = group.add("db", run_db, "the database service the commands share: start, stop, "
                                "status (the first command starts it by itself); install: "
                                "FiftyOne's mongod where an offline install left none",
                  database=False)
    p.add_argument("action", choices=["start", "stop", "status", "install"])


def run_app(args) -> int:
    from imagenetx.app.launch import launch_app

    launch_app(args.dataset, port=args.port, address=args.address,
               remote=args.remote, worker=args.worker)
    return 0


def run_plugin(args) -> int:
    from imagenetx.app.install import install_plugin, install_report, uninstall_plugin, uninstall_report

    if args.action == "uninstall":
        print(uninstall_report(uninstall_plugin(args.plugins_dir)))
    else:
        print(install_report(install_plugin(args.plugins_dir)))
    return 0


def run_doctor(args) -> int:
    from imagenetx.doctor import diagnose, healthy

    lines = diagnose()
    for line in lines:
        print(line)
    return 0 if healthy(lines) else 1


def run_db(args) -> int:
    from imagenetx.store import service

    if args.action == "status":
        print(service.status())
        return 0
    if args.action == "stop":
        print(service.stop())
        return 0
    if args.action == "install":
        print(service.install_mongod())
        return 0
    uri, where = service.configured_uri()
    if uri:
        from imagenetx.errors import ImageNetXError

        raise ImageNetXError(
            f"commands use the database at {where}, not FiftyOne's own: unset {where} "
            "to start FiftyOne's database as a service")
    state = service.start()
    print(f"Started the database service ({state.describe()}), {state.uri}\n"
          "It keeps running for the next commands; `imagenetx db stop` stops it.")
    return 0
