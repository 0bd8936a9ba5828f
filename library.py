"""Which ``imagenetx`` library the plugin runs on, decided before any
operator is imported.

FiftyOne imports the plugin folder's ``__init__.py`` as a package and never
puts the folder on ``sys.path``, so the ``imagenetx`` package beside this
file (in a checkout, or what ``fiftyone plugins download`` extracted) is not
importable by itself. The rule, in this order:

1. an ``imagenetx`` this process has already imported is the one used (a
   module cannot be swapped under the code that holds it);
2. else the copy in the plugin folder, when the folder has one: the
   operators then run on the library they came with, even where pip
   installed another version;
3. else the installed one (``pip install imagenetx-fiftyone``, then
   ``imagenetx plugin install``).

The plugin runs only on the library of its own version (``fiftyone.yml``):
any other is one line in the log and in the App, not a traceback.

This module imports only the standard library and PyYAML (a FiftyOne
requirement): it must work when ``imagenetx`` does not.
"""

import importlib
import importlib.util
import logging
import os
import sys
from typing import NamedTuple, Optional

import yaml

logger = logging.getLogger("fiftyone.plugins.imagenet-x")

PACKAGE = "imagenetx"
#: where the library (the distribution ``imagenetx-fiftyone``) installs from: no
#: package registry has it yet, so the README's Python way
SOURCE = "git+https://github.com/imagenet-x/fiftyone-imagenet-x"
PLUGIN_NAME = "@imagenet-x/imagenet-x"


class Library(NamedTuple):
    """The library the plugin uses, or why it cannot run."""

    version: Optional[str]
    path: Optional[str]  # the package's folder
    source: str  # "already imported", "the plugin folder" or "installed"
    problem: Optional[str]  # the one line when the plugin cannot run on it


def plugin_version(plugin_dir: str) -> str:
    """The plugin's version, as its ``fiftyone.yml`` declares it."""
    with open(os.path.join(plugin_dir, "fiftyone.yml")) as f:
        return str(yaml.safe_load(f)["version"])


def _folder(module) -> Optional[str]:
    path = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) if path else None


def _same(a: Optional[str], b: Optional[str]) -> bool:
    return bool(a and b) and os.path.realpath(a) == os.path.realpath(b)


def _import_from(folder: str):
    """Imports the ``imagenetx`` package in ``folder`` as ``imagenetx``."""
    spec = importlib.util.spec_from_file_location(
        PACKAGE, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[PACKAGE]
        raise
    return module


def use_library(plugin_dir: str) -> Library:
    """Makes ``imagenetx`` importable for the plugin in ``plugin_dir`` by
    the rule above, and logs which copy it uses.

    Returns:
        a :class:`Library`; its ``problem`` is set when the plugin cannot
        run on it (no library, or another version than the plugin's)
    """
    wanted = plugin_version(plugin_dir)
    bundled = os.path.join(plugin_dir, PACKAGE)
    if not os.path.isfile(os.path.join(bundled, "__init__.py")):
        bundled = None
    installed = importlib.util.find_spec(PACKAGE)  # imports nothing
    installed_dir = (os.path.dirname(installed.origin)
                     if installed and installed.origin else None)

    if PACKAGE in sys.modules:
        module, source = sys.modules[PACKAGE], "already imported"
    elif bundled and not _same(bundled, installed_dir):
        module, source = _import_from(bundled), "the plugin folder"
    elif installed:
        module = importlib.import_module(PACKAGE)
        source = "the plugin folder" if bundled else "installed"
    else:
        line = (f"imagenet-x plugin {wanted}: no imagenetx library in this Python "
                f"({sys.executable}): run `pip install {SOURCE}` (version {wanted}), "
                "then restart the App")
        logger.warning(line)
        return Library(None, None, "none", line)

    version, path = getattr(module, "__version__", None), _folder(module)
    note = f"imagenet-x plugin {wanted}: runs on imagenetx {version} ({source}: {path})"
    if installed_dir and not _same(installed_dir, path):
        note += f"; the installed imagenetx at {installed_dir} is not used"
    # once per process: FiftyOne reloads the plugin (and this module) often,
    # the library module stays
    if getattr(module, "_imagenetx_plugin_note", None) != note:
        logger.info(note)
        module._imagenetx_plugin_note = note
    if version == wanted:
        return Library(version, path, source, None)
    line = (f"imagenet-x plugin {wanted} needs imagenetx {wanted}, but this Python runs "
            f"imagenetx {version} ({source}: {path}): run `pip install {SOURCE}` "
            f"(version {wanted}) or install the plugin of that version "
            "(`imagenetx plugin install`), then restart the App")
    logger.warning(line)
    return Library(version, path, source, line)


def missing_requirement(error: ImportError, plugin_dir: str) -> str:
    """The one line for a requirement the operators import and this Python
    lacks."""
    return (f"imagenet-x plugin {plugin_version(plugin_dir)}: {error}: run "
            f"`fiftyone plugins requirements {PLUGIN_NAME} --install`, "
            "then restart the App")
