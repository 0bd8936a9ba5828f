"""The checkout as a FiftyOne plugin: discovery, operator execution, App."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import fiftyone as fo
import fiftyone.operators as foo
import fiftyone.plugins as fop

from conftest import REPO, make_dataset
from imagenetx.plugin import PLUGIN_NAME, install_plugin

OPERATOR = f"{PLUGIN_NAME}/load_imagenetx"


def test_plugin_is_discovered_and_its_operator_tags_the_dataset(photos_dir):
    link = install_plugin()
    assert os.path.realpath(link) == str(REPO)
    assert install_plugin() == link  # idempotent

    assert PLUGIN_NAME in [p.name for p in fop.list_plugins()]
    assert foo.operator_exists(OPERATOR)

    make_dataset("plugin-op", photos_dir)
    result = foo.execute_operator(
        OPERATOR, ctx={"dataset": "plugin-op", "params": {}}
    )
    assert result.error is None, result.error
    assert result.result["annotated"] == 3
    assert fo.load_dataset("plugin-op").count_sample_tags() == {
        "x:background": 2, "x:color": 1}


def test_app_command_serves_the_app_with_the_plugin(tmp_env, photos_dir):
    make_dataset("plugin-app", photos_dir)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "imagenetx", "app", "--dataset", "plugin-app",
         "--remote", "--port", str(port)],
        env=tmp_env, cwd=REPO, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        body = None
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as r:
                    body = r.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert body is not None and "<html" in body.lower()
        assert os.path.islink(os.path.join(fo.config.plugins_dir, "imagenet-x"))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
