"""Browser tests: headless Chromium (the system's /usr/bin/chromium, never a downloaded
build) through Playwright, against pytest-django's live_server. Screenshots go to
test-artifacts/screenshots/ (gitignored)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.tables.conftest import Game, make_game  # noqa: F401  (fixture re-exported)

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
VIEWPORTS = {"landscape": {"width": 1024, "height": 768}, "portrait": {"width": 768, "height": 1024}}

# Playwright's sync API runs an event loop in this thread; the ORM calls the fixtures make
# are still plain synchronous calls, made between browser steps.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(config, items):
    reason = None
    if not (os.path.exists(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        reason = f"no Chromium at {CHROMIUM} (.ci/services installs it: apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the playwright package is not installed (pip install -e '.[dev]')"
    for item in items:
        if "e2e" in str(item.fspath):
            item.add_marker(pytest.mark.browser)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def shoot():
    SHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = SHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True, caret="initial")
        return path

    return take


@pytest.fixture
def page_for(browser, live_server, client, request):
    """`page_for(user, viewport="landscape", timezone_id=None)`: a browser page logged in as
    `user` (the session cookie of a Django login), with CSP violations and page errors
    collected; `timezone_id` sets the device's zone (the machine's by default)."""
    pages = []

    def make(user, viewport: str = "landscape", timezone_id: str | None = None):
        client.force_login(user)
        cookie = client.cookies["sessionid"]
        zone = {"timezone_id": timezone_id} if timezone_id else {}  # the device's own zone
        context = browser.new_context(viewport=VIEWPORTS[viewport], locale="en-GB", has_touch=True, **zone)
        context.add_cookies([{"name": "sessionid", "value": cookie.value, "url": live_server.url}])
        page = context.new_page()
        page.problems = []
        page.on("console", lambda m: m.type == "error" and page.problems.append(m.text))
        page.on("pageerror", lambda e: page.problems.append(str(e)))
        page.base = live_server.url
        pages.append(context)
        return page

    yield make
    for n, context in enumerate(pages):
        # The last state of every page, kept as an artifact: what the test saw when it ended.
        for page in context.pages:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"last-{request.node.name}-{n}.png"), full_page=True, caret="initial")
        context.close()


def has_browser() -> bool:
    return shutil.which(CHROMIUM) is not None
