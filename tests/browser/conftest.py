"""Fixtures of the browser tests: headless Chromium (Debian's `chromium` and
`chromium-driver`, installed by scripts/lib.sh system_tools_ensure) driven by Selenium
through /usr/bin/chromedriver, so Selenium Manager never looks for a driver online; and a
real API server (uvicorn) for it to load pages from."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.remote.webdriver import WebDriver

from tests.e2e.processes import Services, wait_until

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
DEADLINE = 90.0  # seconds a wait may last before the test fails (a hang guard, not a timing check)

chromium_required = pytest.mark.skipif(
    not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()),
    reason="needs Debian's chromium and chromium-driver (scripts/lib.sh system_tools_ensure installs them)",
)


@pytest.fixture
def downloads(tmp_path: Path) -> Path:
    """The folder the browser saves downloads in."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    return folder


@pytest.fixture
def browser(downloads: Path) -> Iterator[WebDriver]:
    """Headless Chromium; downloads go to `downloads` without asking. Quit at the end."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # the tests may run as root, where Chromium's sandbox cannot start
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1000",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
    ):
        options.add_argument(argument)
    options.add_experimental_option(
        "prefs",
        {
            "download.default_directory": str(downloads),
            "download.prompt_for_download": False,
            "safebrowsing.enabled": False,
        },
    )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=DriverService(CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def server(services: Services) -> str:
    """A running API server on a development deployment (the top-up form shows); its
    base URL."""
    return services.api_server(DEVELOPMENT_DEPLOYMENT="true")


def browser_wait(
    driver: WebDriver, services: Services, condition: Callable[[WebDriver], object], *, what: str
) -> object:
    """Polls `condition(driver)` until it is truthy, through element updates (a node
    replaced under the test counts as not yet); fails with the page's text and the
    services' logs."""

    def check() -> object:
        try:
            return condition(driver)
        except StaleElementReferenceException:
            return None

    try:
        return wait_until(check, what=what, services=services, timeout=DEADLINE, every=0.1)
    except AssertionError as error:
        body = driver.find_element("tag name", "body").text
        raise AssertionError(f"{error}\n--- the page ---\n{body}") from None


def console_errors(driver: WebDriver) -> list[str]:
    """The browser console's errors so far (script errors, refused requests, CSP), but
    for the browser's own request for /favicon.ico (the page has no icon)."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] == "SEVERE" and "/favicon.ico " not in entry["message"]
    ]
