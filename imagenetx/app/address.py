"""The address the App binds, and whether the App this process serves is
reachable from this machine only."""

import argparse
import os
import sys

import fiftyone as fo

#: the address the App binds unless told otherwise: this machine only
LOCAL_ADDRESS = "127.0.0.1"
#: tells the App's server process (and its operators) where the App listens
APP_ADDRESS_ENV = "IMAGENETX_APP_ADDRESS"


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
    :func:`~imagenetx.app.launch.launch_app` recorded, else the App server's
    own ``--address`` (FiftyOne passes 0.0.0.0 there in a container), else
    FiftyOne's configured default (``FIFTYONE_DEFAULT_APP_ADDRESS``), as its
    server reads them; this machine's outside any App."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--address")
    given = parser.parse_known_args(sys.argv[1:])[0].address  # as the server reads it
    return (os.environ.get(APP_ADDRESS_ENV) or given or fo.config.default_app_address
            or LOCAL_ADDRESS)


def app_is_local() -> bool:
    """Whether the App this process serves listens on this machine only
    (:func:`served_address`)."""
    return is_local_address(served_address())
