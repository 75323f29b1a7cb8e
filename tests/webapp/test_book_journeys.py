"""The book pages of the web app in headless Chromium, against a real API server and a
real Celery worker on the echo engine: sign up -> pay (the wallet's instant credit of a
development deployment) -> drop a PDF -> its price -> translate -> pages appear -> a page
side by side -> approve -> download Epub and Pdf -> reject a page, which is translated
again; and a page that fails for real (the echo engine's `fail_pages`) -> its reason ->
retry -> translated. A screenshot of each step is kept under var/test-artifacts/webapp/."""

from __future__ import annotations

import base64
import json
import zipfile
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from accounts.models import User
from projects.models import PageStatus, Project, ProjectStatus
from tests.browser.conftest import browser_wait, chromium_required, console_errors
from tests.e2e.processes import REPO_ROOT, Services
from tests.factories import DEFAULT_PASSWORD, UserFactory
from tests.support.pdfs import pdf_bytes
from tests.webapp.conftest import assert_accessible, assert_fits_width

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True),
    chromium_required,
]

PAGES = 3
LINE = "Chapter {n} opens on a quiet harbour where the boats come in at dusk and nobody hurries."
ARTIFACTS = REPO_ROOT / "var" / "test-artifacts" / "webapp"


def shot(driver: WebDriver, test: str, step: str) -> None:
    """Keeps a screenshot of this step (desktop, then a phone-sized window)."""
    folder = ARTIFACTS / test
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / f"{step}.png"))
    size = driver.get_window_size()
    driver.set_window_size(390, 844)
    driver.save_screenshot(str(folder / f"{step}-phone.png"))
    assert_fits_width(driver, step)
    driver.set_window_size(size["width"], size["height"])


def signed_in(driver: WebDriver, services: Services, base: str, user: User) -> None:
    driver.get(base + "/signin?next=/books")
    driver.find_element(By.ID, "signin-email").send_keys(user.email)
    driver.find_element(By.ID, "signin-password").send_keys(DEFAULT_PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "#signin-form button[type=submit]").click()
    browser_wait(
        driver,
        services,
        lambda d: d.find_elements(By.ID, "book-file") and "/signin" not in d.current_url,
        what="/books",
    )


def signed_up_and_paid(driver: WebDriver, services: Services, base: str, *, email: str) -> None:
    """Signs up on /signup, adds $20 of instant credit on /wallet (a development
    deployment's top-up), and goes to /books: as a new person does."""
    driver.get(base + "/signup")
    form = driver.find_element(By.ID, "signup-form")
    for name, value in (("displayName", "Ada Reader"), ("email", email), ("password", "a long enough passphrase")):
        form.find_element(By.NAME, name).send_keys(value)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    browser_wait(driver, services, lambda d: d.find_elements(By.ID, "book-file"), what="/books after signing up")
    driver.get(base + "/wallet")
    browser_wait(driver, services, lambda d: text_of(d, "balance") == "$0.00", what="the wallet")
    amount = driver.find_element(By.CSS_SELECTOR, "#top-up-form [name=amount]")
    amount.clear()
    amount.send_keys("20")
    driver.find_element(By.CSS_SELECTOR, "#top-up-form button[type=submit]").click()
    browser_wait(driver, services, lambda d: text_of(d, "balance") == "$20.00", what="the credit on the wallet")
    driver.get(base + "/books")
    browser_wait(driver, services, lambda d: d.find_elements(By.ID, "book-file"), what="/books")


def credit(base: str, user: User) -> None:
    """Manual credit on a development deployment, through the API as the person."""
    with httpx.Client(base_url=base) as client:
        token = client.post("/v1/auth/login", json={"email": user.email, "password": DEFAULT_PASSWORD}).json()["token"]
        answer = client.post(
            "/v1/wallet/top-up",
            json={"amount": 20, "method": "manual"},
            headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "journey-credit"},
        )
        assert answer.status_code == 200, answer.text


def text_of(driver: WebDriver, element_id: str) -> str:
    """The element's text; empty while the page that has it is not loaded yet."""
    found = driver.find_elements(By.ID, element_id)
    return found[0].text if found else ""


def book_dropped(driver: WebDriver, services: Services, book: Path, *, drop: bool = False) -> None:
    """Chooses the language and the file (with the file input, or dropped on the drop zone
    as a drag from the desktop delivers it), and waits for the book's price."""
    browser_wait(
        driver, services, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#book-language option")) > 1, what="languages"
    )
    Select(driver.find_element(By.ID, "book-language")).select_by_value("fr")
    if drop:  # a drop asks for the price by itself
        driver.execute_script(
            "const [zone, name, data] = arguments;"
            "const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));"
            "const transfer = new DataTransfer();"
            "transfer.items.add(new File([bytes], name, {type: 'application/pdf'}));"
            "zone.dispatchEvent(new DragEvent('dragover', {dataTransfer: transfer, bubbles: true, cancelable: true}));"
            "zone.dispatchEvent(new DragEvent('drop', {dataTransfer: transfer, bubbles: true, cancelable: true}));",
            driver.find_element(By.ID, "drop-zone"),
            book.name,
            base64.b64encode(book.read_bytes()).decode(),
        )
    else:
        driver.find_element(By.ID, "book-file").send_keys(str(book))
        driver.find_element(By.ID, "book-price").click()
    browser_wait(driver, services, lambda d: d.find_element(By.ID, "quote").is_displayed(), what="the price")


def click_when_shown(driver: WebDriver, services: Services, label: str) -> None:
    """Clicks the button of that label once it shows (again if a redraw replaced it)."""

    def clicked(d: WebDriver) -> bool:
        buttons = [b for b in d.find_elements(By.TAG_NAME, "button") if b.text == label and b.is_displayed()]
        if buttons:
            buttons[0].click()
        return bool(buttons)

    browser_wait(driver, services, clicked, what=f"the button {label!r}")


def finished(driver: WebDriver) -> str:
    state = text_of(driver, "book-state")
    return state if state.endswith(("(Complete)", "(CompletedWithErrors)")) else ""


def test_a_reader_drops_a_pdf_sees_its_price_reads_a_page_approves_it_and_downloads_epub_and_pdf(
    browser: WebDriver, services: Services, downloads: Path, tmp_path: Path
):
    test = "drop_price_read_approve_download"
    base = services.api_server(DEVELOPMENT_DEPLOYMENT="true")
    services.worker("worker", queues="process,retry,default,export")
    book = tmp_path / "harbour.pdf"
    book.write_bytes(pdf_bytes(PAGES, text=lambda n: LINE.format(n=n)))

    signed_up_and_paid(browser, services, base, email="reader@example.com")
    reader = User.objects.get(email="reader@example.com")
    shot(browser, test, "01-books-empty")
    book_dropped(browser, services, book, drop=True)
    assert text_of(browser, "quote-pages") == str(PAGES)
    assert text_of(browser, "quote-expected").startswith("$")
    assert text_of(browser, "quote-balance") == "$20.00"
    shot(browser, test, "02-price")
    assert_accessible(browser, "02-price")
    assert Project.objects.get(owner=reader).status == ProjectStatus.CREATED  # nothing started before the click

    browser.find_element(By.ID, "quote-start").click()
    browser_wait(browser, services, lambda d: "/books/" in d.current_url, what="the book's page")
    state = browser_wait(browser, services, finished, what="the book to finish on the page")
    assert state == "Complete (Complete)" or state.endswith("(Complete)"), state
    browser_wait(
        browser,
        services,
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "#page-grid li[data-status=Approved]")) == PAGES,
        what="every page translated in the grid",
    )
    shot(browser, test, "03-book-complete")
    assert_accessible(browser, "03-book-complete")

    browser.find_element(By.LINK_TEXT, "Page 1: translated").click()
    browser_wait(browser, services, lambda d: d.find_element(By.ID, "page-image").is_displayed(), what="the page image")
    assert f"[echo → fr] {LINE.format(n=1)}" in " ".join(text_of(browser, "page-translation").split())
    assert browser.find_element(By.ID, "page-next").is_displayed()
    shot(browser, test, "04-page-side-by-side")
    assert_accessible(browser, "04-page-side-by-side")
    browser.find_element(By.ID, "page-approve").click()
    browser_wait(browser, services, lambda d: "approved" in text_of(d, "notice"), what="the approval")
    shot(browser, test, "05-page-approved")

    browser.find_element(By.ID, "back-to-book").click()
    for format_name, suffix in (("Epub", ".epub"), ("Pdf", ".pdf")):
        click_when_shown(browser, services, f"Make {format_name}")
        click_when_shown(browser, services, f"Download {format_name}")  # once export.ready redrew the row
        browser_wait(
            browser, services, lambda d, s=suffix: list(downloads.glob(f"*{s}")), what=f"the {format_name} download"
        )
    shot(browser, test, "06-downloads")
    epub = next(downloads.glob("*.epub"))
    with zipfile.ZipFile(epub) as archive:
        assert archive.read("mimetype") == b"application/epub+zip"
    assert next(downloads.glob("*.pdf")).read_bytes().startswith(b"%PDF-")

    # Review: a page rejected with a reason goes back to the ladder and is translated again.
    browser.find_element(By.LINK_TEXT, "Page 2: translated").click()
    browser_wait(browser, services, lambda d: d.find_element(By.ID, "reject-form").is_displayed(), what="Reject")
    browser.find_element(By.ID, "reject-reason").send_keys("The names are wrong.")
    browser.find_element(By.CSS_SELECTOR, "#reject-form button[type=submit]").click()
    browser_wait(browser, services, lambda d: "rejected" in text_of(d, "notice"), what="the rejection")
    shot(browser, test, "07-page-rejected")
    browser_wait(
        browser,
        services,
        lambda d: (
            Project.objects.get(owner=reader).pages.filter(index=2, attempts=2, status=PageStatus.APPROVED).exists()
        ),
        what="the rejected page translated again",
    )
    assert not console_errors(browser)


def test_a_failed_page_shows_why_and_is_retried_into_a_translation(
    browser: WebDriver, services: Services, downloads: Path, tmp_path: Path
):
    test = "failed_page_retry"
    fail_second = json.dumps({"fail_pages": [2], "fail_attempts": 1})
    base = services.api_server(DEVELOPMENT_DEPLOYMENT="true", TRANSLATION_ENGINE_OPTIONS=fail_second)
    # The worker's ladder gets one attempt per page (PAGE_MAX_ATTEMPTS=1), so it does not
    # retry page 2 by itself: the page stays Failed until the reader retries it, which the
    # API (3 attempts) accepts, and the echo engine fails it only once.
    services.worker(
        "worker", queues="process,retry,default,export", TRANSLATION_ENGINE_OPTIONS=fail_second, PAGE_MAX_ATTEMPTS=1
    )
    reader = UserFactory()
    credit(base, reader)
    book = tmp_path / "harbour.pdf"
    book.write_bytes(pdf_bytes(PAGES, text=lambda n: LINE.format(n=n)))

    signed_in(browser, services, base, reader)
    book_dropped(browser, services, book)
    browser.find_element(By.ID, "quote-start").click()
    browser_wait(
        browser,
        services,
        lambda d: text_of(d, "book-state").endswith("(CompletedWithErrors)"),
        what="the book to end with errors",
    )
    browser_wait(browser, services, lambda d: "on purpose" in text_of(d, "failed-list"), what="the failed pages")
    assert "fails page 2 on purpose" in text_of(browser, "failed-list")
    shot(browser, test, "01-book-with-a-failed-page")

    browser.find_element(By.LINK_TEXT, "Page 2").click()
    browser_wait(
        browser, services, lambda d: d.find_element(By.ID, "page-failure").is_displayed(), what="why it failed"
    )
    assert "fails page 2 on purpose" in text_of(browser, "page-failure-reason")
    shot(browser, test, "02-page-failed")
    browser.find_element(By.ID, "page-retry").click()
    browser_wait(browser, services, lambda d: text_of(d, "page-state") == "Translated", what="the page translated")
    assert f"[echo → fr] {LINE.format(n=2)}" in " ".join(text_of(browser, "page-translation").split())
    shot(browser, test, "03-page-retried")
    page = Project.objects.get(owner=reader).pages.get(index=2)
    assert (page.status, page.attempts) == (PageStatus.APPROVED, 2)
    assert not console_errors(browser)
