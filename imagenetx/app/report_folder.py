"""The folder the App writes HTML reports to when other machines can reach
it, and which report paths it refuses."""

import os

import fiftyone as fo

from imagenetx.app.address import app_is_local
from imagenetx.app.install import PLUGIN_NAME

#: a folder for the reports the App writes (else :func:`reports_dir`'s default)
REPORTS_DIR_ENV = "IMAGENETX_REPORTS_DIR"


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
