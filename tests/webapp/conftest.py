"""Fixtures of the web app's journeys (tests/webapp): the browser of tests/browser
(headless Chromium through /usr/bin/chromedriver) and its API server, a Celery worker for
the books' journeys, screenshots of each step kept under var/test-artifacts/webapp/, and
axe-core run in the page (the copy bundled by the pinned selenium-axe-python)."""

from __future__ import annotations

import base64
import importlib.resources
import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import browser, browser_wait, downloads, server  # noqa: F401  (fixtures reused)
from tests.e2e.processes import REPO_ROOT, Services

ARTIFACTS = REPO_ROOT / "var" / "test-artifacts" / "webapp"
PHONE = (360, 780)
DESKTOP = (1280, 1000)
# What axe reports at these impacts fails the page (its "moderate" and "minor" do not).
AXE_FAILING_IMPACTS = ("serious", "critical")


@pytest.fixture
def app(services: Services, server: str) -> str:  # noqa: F811
    """The service as a person meets it: the API server (a development deployment) and a
    Celery worker for the queues a book goes through. Its base URL."""
    services.worker("worker", queues="process,retry,default,export")
    return server


class Screenshots:
    """Saves a full-page screenshot per step as `<folder>/<NN>-<step>.png`."""

    def __init__(self, driver: WebDriver, folder: Path) -> None:
        self.driver, self.folder, self.count = driver, folder, 0

    def __call__(self, step: str) -> Path:
        self.count += 1
        name = re.sub(r"[^a-z0-9]+", "-", step.lower()).strip("-")
        path = self.folder / f"{self.count:02d}-{name}.png"
        # Chromium's own capture of the whole page, as wide and as tall as its content.
        # (Captured beyond the viewport, the page has no scrollbar: it is laid out as wide as
        # the window, not as the content measured beside a scrollbar.)
        size = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        width = max(size["width"], self.driver.execute_script("return window.innerWidth;"))
        clip = {"x": 0, "y": 0, "width": width, "height": size["height"], "scale": 1}
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


@pytest.fixture
def screenshots(request: pytest.FixtureRequest, browser: WebDriver) -> Iterator[Screenshots]:  # noqa: F811
    """`screenshots("step")` saves the page under var/test-artifacts/webapp/<test>/ (kept
    after the run, emptied when the test runs again); the folder is printed at the end."""
    folder = ARTIFACTS / re.sub(r"[^\w.-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shots = Screenshots(browser, folder)
    yield shots
    print(f"\nscreenshots of {request.node.name}: {folder}")


AXE_SOURCE = (importlib.resources.files("selenium_axe_python") / "axe-core" / "axe.min.js").read_text(encoding="utf-8")


def axe_violations(driver: WebDriver) -> list[dict[str, object]]:
    """Runs axe-core on the page as it is now (WCAG 2 A and AA rules and best practices)
    and answers its serious and critical violations."""
    if not driver.execute_script("return typeof window.axe !== 'undefined';"):
        driver.execute_script(AXE_SOURCE)
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']})"
        ".then((r) => done(JSON.stringify(r.violations)), (e) => done(JSON.stringify({error: String(e)})));"
    )
    found = json.loads(result)
    if isinstance(found, dict):
        raise AssertionError(f"axe did not run: {found['error']}")
    return [violation for violation in found if violation.get("impact") in AXE_FAILING_IMPACTS]


def assert_accessible(driver: WebDriver, what: str) -> None:
    """Fails with axe's own words when the page has a serious or critical violation."""
    violations = axe_violations(driver)
    described = [
        f"{v['id']} ({v['impact']}): {v['help']} at {[node['target'] for node in v['nodes']][:5]}"  # type: ignore[index,union-attr]
        for v in violations
    ]
    assert not violations, f"{what}: accessibility violations:\n" + "\n".join(described)


def assert_fits_width(driver: WebDriver, what: str) -> None:
    """Nothing makes the page wider than the window (no sideways scrolling)."""
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth;"
    )
    assert overflow <= 0, f"{what}: the page is {overflow}px wider than the window"


def window(driver: WebDriver, size: tuple[int, int]) -> None:
    """Sets the viewport to `size` (width, height) in CSS pixels."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": size[0] < 600},
    )


def page_wait(driver: WebDriver, services: Services, condition: Callable[[WebDriver], object], *, what: str) -> object:
    """browser_wait of tests/browser, under the name the journeys read."""
    return browser_wait(driver, services, condition, what=what)
