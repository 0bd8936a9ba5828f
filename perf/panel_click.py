"""A click on a bar of the App panel -> that slice's mistakes drawn in the
browser, on 50,000 samples with 10 prediction fields (target: under 1 s),
beside FiftyOne drawing the same view itself in the same run: the view saved
beforehand and picked in the App's saved-views menu.

Both are timed in headless Chromium from the click to the grid's count
reading the view's number of samples, each started once the App has had no
request in flight for a second (the last action's work done). The dataset
is that of ``panel_refresh.py`` (the 50,000 validation file names, tagged,
ImageNet's labels as each prediction field; no images, so the grid draws
empty tiles for both). With ``--timeline``, the last round's requests (the App's GraphQL
operations, the panel's events) are printed with their start and end times
after each click. Usage: panel_click.py [--fields 10] [--repeats 3]
[--samples N] [--timeline].
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import _env  # noqa: E402

if "FIFTYONE_PLUGINS_DIR" not in os.environ:
    os.environ["FIFTYONE_PLUGINS_DIR"] = _env.temp_folder("imagenetx-bench-plugins-")

import panel_refresh  # noqa: E402

#: the factors clicked in turn (each a bar of every field)
FACTORS = ("texture", "shape", "color")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync"]
#: the bar of trace ``i`` at ``x``, once drawn: ``[trace, point]`` (as the browser tests find it)
BAR_AT = """([i, x]) => {
  const p = document.querySelector('.js-plotly-plot');
  if (!p || !p.data) return null;
  const k = p.data.map(t => t.name).indexOf(i);
  if (k < 0 || !p.data[k].x) return null;
  const j = Array.from(p.data[k].x).map(v => String(v).replace(/ \\*$/, '')).indexOf(x);
  const trace = p.querySelectorAll('.trace.bars')[k];
  const bar = j < 0 || !trace ? null : trace.querySelectorAll('.point path')[j];
  const box = bar && bar.getBoundingClientRect();
  return box && box.width > 0 && box.height > 0 ? [k, j] : null;
}"""
#: the names of the chart's traces, once it draws ``want``
DRAWN = """(want) => { const p = document.querySelector('.js-plotly-plot');
  return p && p.data && JSON.stringify(p.data.map(t => t.name)) === JSON.stringify(want); }"""


def start_app(name: str):
    """``(process, dataset URL)`` of ``imagenetx app`` serving ``name``."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "imagenetx", "app", "--dataset", name, "--remote",
         "--address", "127.0.0.1", "--port", str(port)],
        env=dict(os.environ, PYTHONPATH=os.path.dirname(HERE)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return proc, f"{url}/datasets/{name}"
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("the App did not start")
            time.sleep(0.5)


def count_shown(page, n: int, tic: float) -> float:
    """Seconds from ``tic`` until the grid says ``n`` samples."""
    try:
        page.get_by_text(f"{n:,} samples", exact=True).first.wait_for(timeout=120_000)
    except Exception:
        page.screenshot(path=os.path.join(os.getcwd(), "panel_click_failed.png"))
        raise
    return time.perf_counter() - tic


def bar_at(page, field: str, factor: str) -> list:
    """``[trace, point]`` of the bar, once drawn; the panel's Refresh is
    pressed where the chart drawn is not the view's (the App can drop a
    render while it loads a view)."""
    for attempt in range(3):
        try:
            return page.wait_for_function(BAR_AT, arg=[field, factor],
                                          timeout=30_000).json_value()
        except Exception:
            state = page.evaluate("""() => { const p = document.querySelector('.js-plotly-plot');
              return p ? JSON.stringify([(p.data || []).length,
                p.querySelectorAll('.trace.bars').length]) : 'no chart'; }""")
            print(f"bar {factor} of {field} not found (traces, bar traces: {state}): "
                  "Refresh")
            if attempt == 2:
                raise
            page.get_by_text("Refresh", exact=True).first.click()


def request_name(request) -> str:
    """A request's GraphQL operation or panel event, else its path."""
    body = request.post_data or ""
    operation = re.search(r"(?:query|mutation|subscription)\s+(\w+)", body)
    if "graphql" in request.url and operation:
        return operation.group(1)
    try:
        params = json.loads(body).get("params") or {}
    except (ValueError, AttributeError):
        params = {}
    return params.get("__method__") or request.url.split("?")[0].rsplit("/", 1)[-1]


class Timeline:
    """The page's requests after ``start()``, but for its images, and
    those in flight."""

    def __init__(self, page):
        self.events, self.tic, self.in_flight = [], None, set()
        page.on("request", lambda r: self._add("start", r))
        page.on("requestfinished", lambda r: self._add("end", r))
        page.on("requestfailed", lambda r: self.in_flight.discard(r))

    def _add(self, what: str, request) -> None:
        # images; the App's event stream, open as long as the page
        if "/media" in request.url or request.url.endswith("/events"):
            return
        if what == "start":
            self.in_flight.add(request)
        else:
            self.in_flight.discard(request)
        if self.tic is not None:
            self.events.append((time.perf_counter() - self.tic, what, request_name(request)))

    def settle(self, page, quiet: float = 1.0, limit: float = 30.0) -> None:
        """Waits until no request of the App has been in flight for
        ``quiet`` seconds (at most ``limit``): the next action starts from
        an App that is done with the last one."""
        deadline, calm_since = time.monotonic() + limit, None
        while time.monotonic() < deadline:
            if self.in_flight:
                calm_since = None
            elif calm_since is None:
                calm_since = time.monotonic()
            elif time.monotonic() - calm_since >= quiet:
                return
            page.wait_for_timeout(50)

    def start(self, tic: float) -> None:
        self.events, self.tic = [], tic

    def print(self, title: str) -> None:
        print(f"{title}:")
        for t, what, name in sorted(self.events):
            print(f"  {t:6.2f} s {what:5s} {name}")
        self.tic = None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fields", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--samples", type=int, default=panel_refresh.N)
    parser.add_argument("--timeline", action="store_true",
                        help="print the last round's requests after each click")
    args = parser.parse_args()
    panel_refresh.N = args.samples
    _env.drop_database_at_exit()

    from playwright.sync_api import sync_playwright

    from imagenetx.analysis import mistakes_view
    from imagenetx.app.install import install_plugin

    install_plugin()
    ds = panel_refresh.build(args.fields)
    field = "labels_0"
    # ImageNet's own labels are right by the ground truth: 20 % changed, seeded
    import numpy as np

    from imagenetx.store.classifications import write_classifications

    truth = np.array(ds.values("ground_truth.class_index"))
    changed = np.random.default_rng(0).random(len(truth)) < 0.2
    write_classifications(ds, field, ds.values("id"), np.where(changed, (truth + 1) % 1000, truth),
                          confidence=[0.5] * len(truth))
    expected = {}
    for factor in FACTORS:
        view = mistakes_view(ds, field, factor, correct="real")  # the panel's default here
        expected[factor] = len(view)
        ds.save_view(f"mistakes-{factor}", view, overwrite=True)
    print("mistakes:", expected)
    proc, url = start_app(ds.name)
    ours, theirs = {f: [] for f in FACTORS}, {f: [] for f in FACTORS}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"),
                                        args=LAUNCH_ARGS)
            page = browser.new_page(viewport={"width": 2400, "height": 1200})
            page.set_default_timeout(300_000)
            timeline = Timeline(page)
            page.goto(url, wait_until="domcontentloaded", timeout=120_000)
            count_shown(page, len(ds), time.perf_counter())
            dismiss = page.get_by_text("Dismiss", exact=True)
            if dismiss.count():
                dismiss.first.click()
            tic = time.perf_counter()
            page.locator("[title='New panel']").first.click()
            page.get_by_text("ImageNet-X", exact=True).first.click()
            page.wait_for_function(DRAWN, arg=[f"labels_{j}" for j in range(args.fields)],
                                   timeout=300_000)
            print(f"panel first drawn: {time.perf_counter() - tic:.2f} s")
            for round_ in range(args.repeats):
                last = args.timeline and round_ == args.repeats - 1
                for factor in FACTORS:
                    # ours: a click on the bar -> the mistakes drawn
                    timeline.settle(page)
                    k, j = bar_at(page, field, factor)
                    bar = page.locator(".js-plotly-plot .trace.bars").nth(k) \
                        .locator(".point path").nth(j)
                    box = bar.bounding_box()
                    tic = time.perf_counter()
                    if last:
                        timeline.start(tic)
                    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                    ours[factor].append(count_shown(page, expected[factor], tic))
                    if last:
                        timeline.settle(page)  # what follows the count
                        timeline.print(f"bar click, {factor}: count shown at "
                                       f"{ours[factor][-1]:.2f} s")
                    page.locator("[data-cy=btn-clear-view-bar]").click()  # the whole dataset
                    count_shown(page, len(ds), time.perf_counter())
                    # theirs: the same view picked in FiftyOne's saved-views menu
                    page.get_by_text("Unsaved view", exact=True).first.click()
                    item = page.get_by_text(f"mistakes-{factor}", exact=True).last
                    item.wait_for()
                    timeline.settle(page)
                    tic = time.perf_counter()
                    if last:
                        timeline.start(tic)
                    item.click()
                    theirs[factor].append(count_shown(page, expected[factor], tic))
                    if last:
                        timeline.settle(page)
                        timeline.print(f"saved view, {factor}: count shown at "
                                       f"{theirs[factor][-1]:.2f} s")
                    page.locator("[data-cy=btn-clear-view-bar]").click()
                    count_shown(page, len(ds), time.perf_counter())
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    print(f"{len(ds):,} samples, {args.fields} prediction fields; field {field}; "
          f"median of {args.repeats} (seconds from the click to the grid's count)")
    print(f"{'factor':12s} {'mistakes':>9s} {'bar click':>10s} {'saved view':>11s} {'ratio':>6s}")
    for factor in FACTORS:
        a, b = statistics.median(ours[factor]), statistics.median(theirs[factor])
        print(f"{factor:12s} {expected[factor]:9,d} {a:9.2f}s {b:10.2f}s {a / b:6.2f}")
    print("bar click: the panel computes the slice's mistakes and sets the App's view; "
          "saved view: FiftyOne loads the same view itself (goal: bar click under 1 s)")


if __name__ == "__main__":
    main()
