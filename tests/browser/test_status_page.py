"""The status page at `/` in headless Chromium, against a real API server (uvicorn) and a
real Celery worker on the echo engine: sign in, top up, upload a PDF, watch the book reach
Complete through the hub, ask for the exports and download one."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select

from accounts.models import User
from projects.models import PageStatus, Project, ProjectStatus
from tests.browser.conftest import browser_wait, chromium_required, console_errors
from tests.e2e.processes import Services
from tests.factories import DEFAULT_PASSWORD, UserFactory
from tests.support.pdfs import pdf_bytes
from wallet.models import TopUp, TopUpStatus

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True),
    chromium_required,
]

PAGES = 3
LINE = "Chapter {n} opens on a quiet harbour where the boats come in at dusk and nobody hurries."


def sign_in(driver: WebDriver, services: Services, base: str, user: User) -> None:
    driver.get(base + "/")
    form = driver.find_element(By.ID, "sign-in")
    form.find_element(By.NAME, "email").send_keys(user.email)
    form.find_element(By.NAME, "password").send_keys(DEFAULT_PASSWORD)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser_wait(driver, services, lambda d: d.find_element(By.ID, "who").text == user.email, what="signed in")


def the_book(driver: WebDriver) -> WebElement | None:
    books = driver.find_elements(By.CSS_SELECTOR, "#books article.book")
    return books[0] if len(books) == 1 else None


def book_title(driver: WebDriver) -> str:
    book = the_book(driver)
    return book.find_element(By.CSS_SELECTOR, "div").text if book else ""


def button_named(root: WebElement, label: str) -> WebElement | None:
    for button in root.find_elements(By.TAG_NAME, "button"):
        if button.text == label and button.is_displayed():
            return button
    return None


def click_when_shown(driver: WebDriver, services: Services, label: str) -> None:
    """Clicks the book's button of that label once it shows."""

    def clicked(d: WebDriver) -> bool:
        button = button_named(d.find_element(By.ID, "books"), label)
        if button is None:
            return False
        button.click()
        return True

    browser_wait(driver, services, clicked, what=f"the button {label!r}")


def downloaded(folder: Path) -> Path | None:
    """The one finished download in `folder` (Chromium writes `.crdownload` until done)."""
    files = [path for path in folder.iterdir() if not path.name.endswith(".crdownload")]
    partial = [path for path in folder.iterdir() if path.name.endswith(".crdownload")]
    return files[0] if len(files) == 1 and not partial else None


def test_a_reader_uploads_a_pdf_watches_it_complete_and_downloads_the_export(
    browser: WebDriver, services: Services, server: str, downloads: Path, tmp_path: Path
):
    services.worker("worker", queues="process,retry,default,export")
    reader = UserFactory()
    book_file = tmp_path / "harbour.pdf"
    book_file.write_bytes(pdf_bytes(PAGES, text=lambda n: LINE.format(n=n)))

    sign_in(browser, services, server, reader)
    browser_wait(browser, services, lambda d: d.find_element(By.ID, "hub-state").text == "live", what="the hub")
    browser_wait(browser, services, lambda d: d.find_element(By.ID, "books-empty").is_displayed(), what="no books")

    # Development top-up: the wallet line shows the new balance.
    top_up = browser.find_element(By.ID, "top-up")
    amount = top_up.find_element(By.NAME, "amount")
    amount.clear()
    amount.send_keys("20")
    top_up.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser_wait(
        browser, services, lambda d: "Balance $20.00" in d.find_element(By.ID, "wallet").text, what="the top-up"
    )

    # Upload into French; the page normalizes and starts the translation by itself.
    upload = browser.find_element(By.ID, "upload")
    upload.find_element(By.NAME, "file").send_keys(str(book_file))
    Select(upload.find_element(By.NAME, "language")).select_by_value("fr")
    upload.find_element(By.CSS_SELECTOR, "button[type=submit]").click()

    # The "title (state)" line is written only from the hub's status messages.
    states: list[str] = []

    def complete(driver: WebDriver) -> bool:
        title = book_title(driver)
        if title and (not states or states[-1] != title):
            states.append(title)
        assert not title.endswith(("(Failed)", "(PausedNeedsCredit)")), states
        return title.endswith("(Complete)")

    browser_wait(browser, services, complete, what="the book to be Complete on the page")
    book = the_book(browser)
    assert book is not None
    assert book.find_element(By.TAG_NAME, "h3").text == "harbour"
    bar = book.find_element(By.TAG_NAME, "progress")
    assert (bar.get_attribute("value"), bar.get_attribute("max")) == (str(PAGES), str(PAGES))
    assert any("(Calibrating)" in title or "(Processing)" in title for title in states), states

    project = Project.objects.get(owner=reader)
    assert (project.status, project.target_language_code) == (ProjectStatus.COMPLETE, "fr")
    assert set(project.pages.values_list("status", flat=True)) == {PageStatus.APPROVED}
    assert TopUp.objects.get(user=reader).status == TopUpStatus.CONFIRMED

    # The exports: asked for on the page, their buttons appear when export.ready arrives.
    click_when_shown(browser, services, "Make the exports")
    # Each export.ready redraws the buttons: the click is retried on the redrawn one.
    click_when_shown(browser, services, "Download Markdown")
    saved = browser_wait(browser, services, lambda d: downloaded(downloads), what="the download")
    assert isinstance(saved, Path)

    assert (saved.name.startswith("harbour-"), saved.name.endswith("-markdown.md")) == (True, True), saved.name
    text = " ".join(saved.read_text(encoding="utf-8").split())  # the PDF's lines wrap at 75 characters
    for n in range(1, PAGES + 1):
        assert f"[echo → fr] {LINE.format(n=n)}" in text, text
    assert not console_errors(browser)


def test_a_wrong_password_is_refused_on_the_page(browser: WebDriver, services: Services, server: str):
    reader = UserFactory()
    browser.get(server + "/")
    form = browser.find_element(By.ID, "sign-in")
    form.find_element(By.NAME, "email").send_keys(reader.email)
    form.find_element(By.NAME, "password").send_keys(DEFAULT_PASSWORD + "-wrong")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()

    notice = browser_wait(
        browser,
        services,
        lambda d: (n := d.find_element(By.ID, "notice")).text and "error" in (n.get_attribute("class") or "") and n,
        what="the refusal",
    )
    assert isinstance(notice, WebElement)
    assert browser.find_element(By.ID, "sign-in-section").is_displayed()
    assert not browser.find_element(By.ID, "signed-in").is_displayed()
    assert browser.execute_script("return sessionStorage.getItem('bts.token')") is None
