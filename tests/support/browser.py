"""Debian's headless Chromium driven by Playwright, for the console's tests: nothing is
downloaded (Playwright is given the system browser), every message the page logs at
``error`` level and every uncaught exception are collected."""

import os
import shutil
import time

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: Flags for a closed network: no background fetches, no first-run work.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class ConsolePage:
    """One page of the console at ``url``; :attr:`errors` are what the browser reported."""

    def __init__(self, context, url):
        self.url = url
        self.errors = []
        self.page = context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def show(self, view):
        """Open ``view`` and wait for a snapshot drawn after it was opened."""
        self.page.goto("%s#%s" % (self.url, view))
        opened = int(time.time() * 1000)
        self.wait(lambda: int(self.page.evaluate("document.body.dataset.updated || 0")) > opened)
        assert self.page.is_visible("#view-" + view)

    def attribute(self, selector, name):
        """``name`` of the first element matching ``selector`` (None if there is none)."""
        found = self.page.query_selector(selector)
        return found.get_attribute(name) if found is not None else None

    def wait(self, condition, timeout=45.0):
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError("condition not met on the page after %s s; the page says: %s"
                                   % (timeout, self.page.inner_text("main")[-2000:]))
            self.page.wait_for_timeout(250)

    def screenshot(self, name):
        """Save the page as ``<RMQPROTO_SCREENSHOTS>/<name>.png`` when that is set (the
        pictures in docs/observability.md are made this way)."""
        folder = os.environ.get("RMQPROTO_SCREENSHOTS")
        if folder:
            self.page.screenshot(path=os.path.join(folder, name + ".png"), full_page=True)


@pytest.fixture
def console_browser():
    """``open(url)`` → a :class:`ConsolePage` in a fresh headless Chromium."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        context = browser.new_context(viewport={"width": 1100, "height": 800})
        try:
            yield lambda url: ConsolePage(context, url)
        finally:
            browser.close()
