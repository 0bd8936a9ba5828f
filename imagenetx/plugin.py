"""Make this checkout visible to FiftyOne as a plugin, and open the App."""

import os

import fiftyone as fo

from imagenetx.errors import ImageNetXError

#: the checkout root: the folder holding fiftyone.yml, beside this package
PLUGIN_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN_NAME = "@imagenet-x/imagenet-x"
LINK_NAME = "imagenet-x"


def install_plugin(plugins_dir: str = None) -> str:
    """Links the checkout into FiftyOne's plugins directory.

    Args:
        plugins_dir (None): the plugins directory, by default
            ``fo.config.plugins_dir`` (``FIFTYONE_PLUGINS_DIR``)

    Returns:
        the path of the link
    """
    if not os.path.isfile(os.path.join(PLUGIN_ROOT, "fiftyone.yml")):
        raise ImageNetXError(
            f"'{PLUGIN_ROOT}' has no fiftyone.yml: install the plugin from a "
            "checkout of the repository (pip install -e .)"
        )
    plugins_dir = plugins_dir or fo.config.plugins_dir
    os.makedirs(plugins_dir, exist_ok=True)
    link = os.path.join(plugins_dir, LINK_NAME)
    if os.path.islink(link):
        if os.path.realpath(link) == os.path.realpath(PLUGIN_ROOT):
            return link
        os.remove(link)
    elif os.path.exists(link):
        raise ImageNetXError(
            f"'{link}' exists and is not a link to this checkout: remove it "
            "or set FIFTYONE_PLUGINS_DIR to another folder"
        )
    os.symlink(PLUGIN_ROOT, link, target_is_directory=True)
    return link


def launch_app(dataset, port: int = None, remote: bool = False, wait=True):
    """Installs the plugin and opens the App on a dataset.

    Args:
        dataset: a dataset or its name
        port (None): the App's port (FiftyOne's default 5151)
        remote (False): serve without opening a browser
        wait (True): block until the App is closed
    """
    from imagenetx.store.datasets import get_dataset

    dataset = get_dataset(dataset)
    install_plugin()
    kwargs = {"port": port} if port else {}
    session = fo.launch_app(dataset, remote=remote, **kwargs)
    if wait:
        session.wait(-1)
    return session
