"""The panel in a real browser: the FiftyOne App on localhost with this
plugin, driven by headless Chromium through playwright.

Screenshots go to ``test-artifacts/`` (or ``$IMAGENETX_TEST_ARTIFACTS``).
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO
from imagenetx.analysis import mistakes_view
from imagenetx.plugin import install_plugin

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = os.environ.get("IMAGENETX_CHROMIUM") or shutil.which("chromium")
ARTIFACTS = Path(os.environ.get("IMAGENETX_TEST_ARTIFACTS", REPO / "test-artifacts"))
LAUNCH_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="module")
def app_url(demo_build):
    """The App serving the demo dataset, with the plugin installed."""
    name, _ = demo_build
    install_plugin()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "imagenetx", "app", "--dataset", name,
         "--remote", "--port", str(port)],
        env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(url, timeout=5).close()
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("the App did not start")
        yield f"{url}/datasets/{name}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


@pytest.fixture
def page():
    if not CHROMIUM:
        pytest.skip("no chromium binary: `apt-get install -y chromium` "
                    "(or set IMAGENETX_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield browser.new_page(viewport={"width": 1600, "height": 1000})
        browser.close()


def test_click_on_a_factor_bar_shows_exactly_its_mistakes(
    demo_build, app_url, page
):
    name, _ = demo_build
    expected = len(mistakes_view(name, "imagenet_labels", "texture",
                                 correct="real"))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    page.goto(app_url, wait_until="domcontentloaded", timeout=120_000)
    page.get_by_text("48,868 samples", exact=True).wait_for(timeout=120_000)
    dismiss = page.get_by_text("Dismiss", exact=True)
    if dismiss.count():
        dismiss.first.click()

    page.locator("[title='New panel']").first.click()
    page.get_by_text("ImageNet-X", exact=True).first.click()
    bars = page.locator(".js-plotly-plot .trace.bars .point path")
    bars.first.wait_for(timeout=120_000)
    page.wait_for_timeout(1000)  # let plotly finish its layout
    page.screenshot(path=str(ARTIFACTS / "panel.png"))

    ticks = page.locator(".js-plotly-plot .xtick text").all_text_contents()
    factors = [t.rstrip(" *") for t in ticks]
    assert len(factors) == 16 and bars.count() == 16
    assert factors[:3] == ["subcategory", "texture", "shape"]

    # plotly's drag layer takes the pointer: click where the bar is drawn
    box = bars.nth(factors.index("texture")).bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)

    page.get_by_text(f"{expected:,} samples", exact=True).wait_for(
        timeout=60_000)
    page.get_by_text("Back to the previous view").wait_for(timeout=60_000)
    page.wait_for_timeout(3000)  # let the grid draw its thumbnails
    page.screenshot(path=str(ARTIFACTS / "panel-texture-mistakes.png"))
    assert expected == 54

    page.get_by_text("Back to the previous view").click()
    page.get_by_text("48,868 samples", exact=True).wait_for(timeout=60_000)
