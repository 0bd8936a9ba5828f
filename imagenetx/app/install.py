"""The plugin in FiftyOne's plugins folder: linked (or copied) from a
checkout or from the copy a wheel carries, removed, and how FiftyOne sees
it."""

import os
import shutil

import fiftyone as fo

from imagenetx.errors import ImageNetXError

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
            f"'{link}' exists and is not the link `install_plugin` makes: remove it "
            "or set FIFTYONE_PLUGINS_DIR to another folder")
    try:
        os.symlink(PLUGIN_ROOT, link, target_is_directory=True)
    except OSError:  # e.g. Windows without the right to make links
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
