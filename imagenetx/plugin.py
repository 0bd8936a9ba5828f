"""Make the plugin visible to FiftyOne (from a checkout or a wheel), and open the App."""

import argparse
import os
import sys

import fiftyone as fo

from imagenetx.errors import ImageNetXError
from imagenetx.ports import check_app_port
from imagenetx.store.datasets import get_dataset

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _plugin_root() -> str:
    """The folder holding ``fiftyone.yml``: the checkout (or the plugin
    folder this copy of the library sits in), else the copy a wheel carries
    inside the package (``imagenetx/fiftyone_plugin``, see setup.py)."""
    for folder in (os.path.dirname(_PACKAGE_DIR), os.path.join(_PACKAGE_DIR, "fiftyone_plugin")):
        if os.path.isfile(os.path.join(folder, "fiftyone.yml")):
            return folder
    return os.path.dirname(_PACKAGE_DIR)


#: the plugin folder this library installs: the checkout, or the wheel's copy
PLUGIN_ROOT = _plugin_root()
PLUGIN_NAME = "@imagenet-x/imagenet-x"
LINK_NAME = "imagenet-x"
#: marks a copy :func:`install_plugin` made (where it could not link)
COPY_MARKER = ".imagenetx-plugin-copy"


def install_plugin(plugins_dir: str = None) -> str:
    """Links :data:`PLUGIN_ROOT` into FiftyOne's plugins directory, where
    FiftyOne finds it (copies it where links are not allowed).

    Args:
        plugins_dir (None): the plugins directory, by default
            ``fo.config.plugins_dir`` (``FIFTYONE_PLUGINS_DIR``)

    Returns:
        the path of the link
    """
    if not os.path.isfile(os.path.join(PLUGIN_ROOT, "fiftyone.yml")):
        raise ImageNetXError(
            f"'{PLUGIN_ROOT}' has no fiftyone.yml: reinstall imagenetx-fiftyone (pip "
            "install --force-reinstall git+https://github.com/imagenet-x/fiftyone-imagenet-x) "
            "or install from a checkout")
    plugins_dir = plugins_dir or fo.config.plugins_dir
    if not plugins_dir:
        raise ImageNetXError(
            "FiftyOne has no plugins folder: set FIFTYONE_PLUGINS_DIR (or plugins_dir "
            "in ~/.fiftyone/config.json) to a folder")
    os.makedirs(plugins_dir, exist_ok=True)
    link = os.path.join(plugins_dir, LINK_NAME)
    if os.path.islink(link):
        if os.path.realpath(link) == os.path.realpath(PLUGIN_ROOT):
            return link
        os.remove(link)
    elif os.path.exists(link):
        raise ImageNetXError(
            f"'{link}' exists and is not a link made by `imagenetx plugin install`: "
            "remove it or set FIFTYONE_PLUGINS_DIR to another folder")
    try:
        os.symlink(PLUGIN_ROOT, link, target_is_directory=True)
    except OSError:  # e.g. Windows without the right to make links
        import shutil

        shutil.copytree(PLUGIN_ROOT, link, ignore=shutil.ignore_patterns(
            "__pycache__", ".git", "tests", "docs", "perf"))
        open(os.path.join(link, COPY_MARKER), "w").close()
    return link


def uninstall_plugin(plugins_dir: str = None):
    """Removes what :func:`install_plugin` put in the plugins directory.

    Returns:
        the path removed, or None when there was nothing to remove
    """
    plugins_dir = plugins_dir or fo.config.plugins_dir
    link = os.path.join(plugins_dir or "", LINK_NAME)
    if os.path.islink(link):
        os.remove(link)
        return link
    if os.path.isfile(os.path.join(link, COPY_MARKER)):
        import shutil

        shutil.rmtree(link)
        return link
    return None


def registered_plugin_dir():
    """The folder FiftyOne loads this plugin from (None: it finds none)."""
    import fiftyone.plugins as fop

    try:
        return fop.find_plugin(PLUGIN_NAME)
    except ValueError:
        return None


#: FiftyOne 1.21+ lists a plugins folder's plugins afresh on each request, and
#: its App's "Reload plugins" operator asks again: a new plugin shows up in an
#: App already running; an imagenetx library the App's Python has imported
#: stays until that Python restarts
RELOAD_HINT = ("An App already open loads it without a restart: run FiftyOne's "
               "\"Reload plugins\" operator (press ` in the App, type \"Reload plugins\"); "
               "after an upgrade, restart the App so that it imports the new imagenetx")


def install_report(link: str) -> str:
    """What :func:`install_plugin` did, and how FiftyOne sees the plugin."""
    how = "linked" if os.path.islink(link) else "copied"
    lines = [f"Plugin {PLUGIN_NAME} {how} at {link} -> {os.path.realpath(PLUGIN_ROOT)}"]
    found = registered_plugin_dir()
    if found and os.path.realpath(found) == os.path.realpath(link):
        lines.append(f"FiftyOne finds it in its plugins folder ({os.path.dirname(link)}): open "
                     "the App (`imagenetx app --dataset NAME` or `fiftyone app launch`) for the "
                     "ImageNet-X panel and operators; `fiftyone plugins list` lists it")
        lines.append(RELOAD_HINT)
    elif found:
        lines.append(f"FiftyOne loads {PLUGIN_NAME} from {found} instead (another copy comes "
                     f"first): remove that one with `fiftyone plugins delete {PLUGIN_NAME}`")
    else:
        lines.append(f"FiftyOne does not look there: set FIFTYONE_PLUGINS_DIR="
                     f"{os.path.dirname(link)} for the App to find it")
    return "\n".join(lines)


def uninstall_report(removed) -> str:
    """What :func:`uninstall_plugin` did, and whether FiftyOne still finds
    the plugin elsewhere."""
    lines = [f"Removed {removed}" if removed else
             "Nothing to remove: `imagenetx plugin install` put no plugin in that folder"]
    found = registered_plugin_dir()
    if found:
        lines.append(f"FiftyOne still finds {PLUGIN_NAME} at {found} (installed another way: "
                     f"`fiftyone plugins delete {PLUGIN_NAME}` removes it)")
    return "\n".join(lines)


#: what FiftyOne's open-source App needs to offer "Schedule" for delegated
#: operations: without it the App shows "Background compute is not yet
#: configured" and no button
ALLOW_DELEGATION_ENV = "FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS"


def enable_delegation() -> None:
    """Lets this process and the App it starts schedule delegated operations
    (FiftyOne's legacy orchestrator: any ``fiftyone delegated launch``
    worker on the same database runs them)."""
    os.environ[ALLOW_DELEGATION_ENV] = "true"
    fo.config.allow_legacy_orchestrators = True


def start_worker(log_path: str = None):
    """Starts ``fiftyone delegated launch`` as a child process: it runs the
    delegated operations queued on this database, one at a time.

    Args:
        log_path (None): a file for its output (default: discarded)

    Returns:
        the ``subprocess.Popen`` of the worker
    """
    import subprocess
    import sys

    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    return subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from fiftyone.core.cli import main; "
         "sys.argv = ['fiftyone', 'delegated', 'launch']; main()"],
        env=dict(os.environ, **{ALLOW_DELEGATION_ENV: "true"}),
        # in the caller's process group: a signal that stops the App's
        # group (Ctrl-C, a supervisor) stops the worker too
        stdout=out, stderr=subprocess.STDOUT,
    )


def stop_worker(worker, timeout: float = 10.0) -> None:
    """Stops a worker from :func:`start_worker` (its running operation, if
    any, is marked failed by FiftyOne and can be run again)."""
    import signal
    import subprocess

    if worker is None or worker.poll() is not None:
        return
    try:
        worker.send_signal(signal.SIGINT)
        worker.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


class _NoStaleServiceWarning:
    """Drops FiftyOne's "Failed to connect to Process ... service is
    exiting" warning: a database service of an earlier command that was
    shutting down; FiftyOne starts a fresh one right after."""

    def filter(self, record) -> bool:
        return "service is exiting" not in record.getMessage()


#: the address the App binds unless told otherwise: this machine only
LOCAL_ADDRESS = "127.0.0.1"
#: tells the App's server process (and its operators) where the App listens
APP_ADDRESS_ENV = "IMAGENETX_APP_ADDRESS"
#: a folder for the reports the App writes (else :func:`reports_dir`'s default)
REPORTS_DIR_ENV = "IMAGENETX_REPORTS_DIR"


def app_address(address: str = None) -> str:
    """The address the App binds: ``address``, else FiftyOne's
    ``FIFTYONE_DEFAULT_APP_ADDRESS`` when set, else 127.0.0.1 (FiftyOne
    itself binds every interface when it thinks it runs in a container)."""
    return address or os.environ.get("FIFTYONE_DEFAULT_APP_ADDRESS") or LOCAL_ADDRESS


def is_local_address(address: str) -> bool:
    """Whether an App bound to ``address`` is reachable from this machine
    only."""
    return address in ("localhost", "::1") or address.startswith("127.")


def served_address() -> str:
    """The address the App this process serves binds: the one
    :func:`launch_app` recorded, else the App server's own ``--address``
    (FiftyOne passes 0.0.0.0 there in a container), else FiftyOne's
    configured default (``FIFTYONE_DEFAULT_APP_ADDRESS``), as its server
    reads them; this machine's outside any App."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--address")
    given = parser.parse_known_args(sys.argv[1:])[0].address  # as the server reads it
    return (os.environ.get(APP_ADDRESS_ENV) or given or fo.config.default_app_address
            or LOCAL_ADDRESS)


def app_is_local() -> bool:
    """Whether the App this process serves listens on this machine only
    (:func:`served_address`)."""
    return is_local_address(served_address())


def reports_dir() -> str:
    """Where the App's report operator writes when the App is reachable
    from other machines: ``$IMAGENETX_REPORTS_DIR``, else the plugin
    setting ``reports_dir`` (FiftyOne's App config, ``plugins`` ->
    ``@imagenet-x/imagenet-x``), else ``imagenetx-reports`` under
    FiftyOne's dataset dir."""
    setting = (fo.app_config.plugins.get(PLUGIN_NAME) or {}).get("reports_dir")
    return os.path.abspath(os.path.expanduser(
        os.environ.get(REPORTS_DIR_ENV) or setting
        or os.path.join(fo.config.default_dataset_dir, "imagenetx-reports")))


def report_path_refusal(out: str):
    """Why the App may not write a report at ``out`` (None: it may): when
    the App is reachable from other machines, only under :func:`reports_dir`."""
    if app_is_local():
        return None
    folder = os.path.realpath(reports_dir())
    path = os.path.realpath(os.path.expanduser(out))  # no way out through a link
    if os.path.commonpath([folder, path]) == folder:
        return None
    return (f"HTML file '{out}' is outside the reports folder {folder}: this App is "
            "reachable from other machines, so it writes reports there only; name a page "
            f"under it, e.g. {os.path.join(folder, 'report.html')}")


def exposure_warning(address: str, port: int) -> str:
    """The one line said when the App listens beyond this machine."""
    return (f"The App listens on {address}:{port}, reachable from other machines: anyone "
            "who reaches it can run models on this machine, delete prediction fields and "
            f"write reports under {reports_dir()}. Pass --address 127.0.0.1 to keep it on "
            "this machine.")


def launch_app(dataset, port: int = None, address: str = None,
               remote: bool = False, worker: bool = True, wait=True):
    """Installs the plugin and opens the App on a dataset, with a worker for
    its delegated operations (Run model on a large view, ...).

    Args:
        dataset: a dataset or its name
        port (None): the App's port (FiftyOne's default 5151)
        address (None): the address the App binds (:func:`app_address`:
            127.0.0.1 unless ``FIFTYONE_DEFAULT_APP_ADDRESS`` says
            otherwise); beyond this machine a warning says what it exposes
        remote (False): serve without opening a browser
        worker (True): allow delegated operations in the App and run a
            ``fiftyone delegated launch`` worker beside it while it is open
        wait (True): block until the App is closed (then the worker stops
            too); with ``False`` the caller stops ``session.worker`` with
            :func:`stop_worker`

    Returns:
        the ``fo.Session``, with the worker's ``Popen`` (or None) as
        ``session.worker``

    Raises:
        ImageNetXError: for a port another program holds (a FiftyOne App
            already serving it is connected to, as FiftyOne does)
    """
    import logging

    logging.getLogger("fiftyone.core.service").addFilter(_NoStaleServiceWarning())
    dataset = get_dataset(dataset)
    plugins_dir = fo.config.plugins_dir
    linked = bool(plugins_dir) and os.path.lexists(os.path.join(plugins_dir, LINK_NAME))
    link = install_plugin()
    if not linked:  # uninstalled (or never installed): say that it is back
        print(f"Linked the plugin {PLUGIN_NAME} into FiftyOne's plugins folder for the App: "
              f"{link}; `imagenetx plugin uninstall` removes it")
    # without it the App's server imports the plugins again on every
    # operator and panel request (about 0.2 s each); FiftyOne still reloads
    # a plugin whose folder changes
    os.environ.setdefault("FIFTYONE_PLUGINS_CACHE_ENABLED", "true")
    address = app_address(address)
    # a port another program holds: one line now, not the App server's
    # minute of waiting and its tracebacks
    check_app_port(address, port or fo.config.default_app_port)
    proc = None
    if worker:
        enable_delegation()
        proc = start_worker()
    os.environ[APP_ADDRESS_ENV] = address  # the App's server process inherits it
    if not is_local_address(address):
        import sys

        print(exposure_warning(address, port or fo.config.default_app_port), file=sys.stderr)
    kwargs = {k: v for k, v in (("port", port), ("address", address)) if v}
    try:
        session = fo.launch_app(dataset, remote=remote, **kwargs)
    except BaseException:
        stop_worker(proc)
        raise
    session.worker = proc
    if wait:
        import signal

        def stop(signum, frame):
            raise SystemExit(0)

        # a SIGTERM ends the wait like Ctrl-C does, so the worker stops too
        previous = signal.signal(signal.SIGTERM, stop)
        try:
            session.wait(-1)
        finally:
            signal.signal(signal.SIGTERM, previous)
            stop_worker(proc)
    return session


def worker_running() -> bool:
    """Whether a ``fiftyone delegated launch`` worker runs on this machine
    (one started by :func:`start_worker` or by hand)."""
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or ())
        if "delegated" in cmdline and "launch" in cmdline and "fiftyone" in cmdline:
            return True
    return False


def background_runs(dataset_name: str) -> list:
    """This plugin's delegated operations on a dataset that are queued or
    running, oldest first, with their progress.

    Returns:
        ``[{"id", "operator", "label", "state", "progress", "detail"}]``
        (``progress`` a fraction or None, ``detail`` FiftyOne's progress
        label such as "1,024 of 50,000 images")
    """
    from fiftyone.operators.delegated import DelegatedOperationService
    from fiftyone.operators.executor import ExecutionRunState

    service = DelegatedOperationService()
    runs = []
    for state in (ExecutionRunState.RUNNING, ExecutionRunState.QUEUED):
        for op in service.list_operations(dataset_name=dataset_name, run_state=state):
            if not (op.operator or "").startswith(PLUGIN_NAME + "/"):
                continue
            status = (op._doc or {}).get("status") or {}
            runs.append({
                "id": str(op.id),
                "operator": op.operator,
                "label": op.label or op.operator.rsplit("/", 1)[-1],
                "state": state,
                "progress": status.get("progress"),
                "detail": status.get("label"),
                "queued_at": str(op.queued_at),
            })
    return sorted(runs, key=lambda r: r["queued_at"])
