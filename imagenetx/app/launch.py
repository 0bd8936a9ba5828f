"""Open the App on a dataset: the plugin installed, the address checked,
and a worker for its delegated operations beside it."""

import logging
import os
import signal
import sys

import fiftyone as fo

from imagenetx.app.address import APP_ADDRESS_ENV, app_address, is_local_address
from imagenetx.app.install import LINK_NAME, PLUGIN_NAME, install_plugin
from imagenetx.app.report_folder import reports_dir
from imagenetx.app.workers import enable_delegation, start_worker, stop_worker
from imagenetx.ports import check_app_port
from imagenetx.store.datasets import get_dataset


class _NoStaleServiceWarning:
    """Drops FiftyOne's "Failed to connect to Process ... service is
    exiting" warning: a database service of an earlier command that was
    shutting down; FiftyOne starts a fresh one right after."""

    def filter(self, record) -> bool:
        return "service is exiting" not in record.getMessage()


def exposure_warning(address: str, port: int) -> str:
    """The one line said when the App listens beyond this machine."""
    return (f"The App listens on {address}:{port}, reachable from other machines: anyone "
            "who reaches it can run models on this machine, delete prediction fields and "
            f"write reports under {reports_dir()}. Pass `address=127.0.0.1` to keep it on "
            "this machine.")


def launch_app(dataset, port: int = None, address: str = None,
               remote: bool = False, worker: bool = True, wait=True):
    """Installs the plugin and opens the App on a dataset, with a worker for
    its delegated operations (Run model on a large view, ...).

    Args:
        dataset: a dataset or its name
        port (None): the App's port (FiftyOne's default 5151)
        address (None): the address the App binds
            (:func:`~imagenetx.app.address.app_address`: 127.0.0.1 unless
            ``FIFTYONE_DEFAULT_APP_ADDRESS`` says otherwise); beyond this
            machine a warning says what it exposes
        remote (False): serve without opening a browser
        worker (True): allow delegated operations in the App and run a
            ``fiftyone delegated launch`` worker beside it while it is open
        wait (True): block until the App is closed (then the worker stops
            too); with ``False`` the caller stops ``session.worker`` with
            :func:`~imagenetx.app.workers.stop_worker`

    Returns:
        the ``fo.Session``, with the worker's ``Popen`` (or None) as
        ``session.worker``

    Raises:
        ImageNetXError: for a port another program holds (a FiftyOne App
            already serving it is connected to, as FiftyOne does)
    """
    logging.getLogger("fiftyone.core.service").addFilter(_NoStaleServiceWarning())
    dataset = get_dataset(dataset)
    address = app_address(address)
    # a port another program holds: one line now, not the App server's
    # minute of waiting and its tracebacks (and before anything is changed)
    check_app_port(address, port or fo.config.default_app_port)
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
    proc = None
    if worker:
        enable_delegation()
        proc = start_worker()
    os.environ[APP_ADDRESS_ENV] = address  # the App's server process inherits it
    if not is_local_address(address):
        print(exposure_warning(address, port or fo.config.default_app_port), file=sys.stderr)
    kwargs = {k: v for k, v in (("port", port), ("address", address)) if v}
    try:
        session = fo.launch_app(dataset, remote=remote, **kwargs)
    except BaseException:
        stop_worker(proc)
        raise
    session.worker = proc
    if wait:
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
