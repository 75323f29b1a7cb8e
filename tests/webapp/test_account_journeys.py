"""A person's account in the web app, in headless Chromium against the real API server
(uvicorn) on PostgreSQL and Redis: signing up, an API key made, used against the API and
revoked; credit redeemed and added, the history, spending limits and preferences; signing
in with the keyboard alone; and the same pages in a phone-sized window. Every page is
checked with axe-core and photographed (var/test-artifacts/webapp/<test>/)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from selenium.webdriver.common.alert import Alert
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from accounts.models import ApiKey, User
from accounts.services.api_keys import api_key_create
from tests.browser.conftest import chromium_required, console_errors
from tests.e2e.processes import Services
from tests.factories import DEFAULT_PASSWORD, UserFactory
from tests.support.local_http import QuietHandler, serving
from tests.support.pdfs import pdf_bytes
from tests.wallet.stripe_stand_in import API_KEY as STRIPE_API_KEY
from tests.wallet.stripe_stand_in import WEBHOOK_SECRET as STRIPE_WEBHOOK_SECRET
from tests.wallet.stripe_stand_in import StripeStandIn, signature_header
from tests.webapp.conftest import PHONE, Screenshots, assert_accessible, assert_fits_width, page_wait, window
from wallet.models import LedgerEntry, TopUp
from wallet.services.redeem import codes_issue

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True),
    chromium_required,
]


def path_is(driver: WebDriver, path: str) -> bool:
    return bool(driver.execute_script("return location.pathname;") == path)


def text_of(driver: WebDriver, element_id: str) -> str:
    found = driver.find_elements(By.ID, element_id)
    return found[0].text if found and found[0].is_displayed() else ""


def notice_says(driver: WebDriver, words: str) -> bool:
    return words in text_of(driver, "notice")


def field(driver: WebDriver, form_id: str, name: str):  # type: ignore[no-untyped-def]
    return driver.find_element(By.CSS_SELECTOR, f"#{form_id} [name='{name}']")


def fill(driver: WebDriver, form_id: str, **values: str) -> None:
    for name, value in values.items():
        control = field(driver, form_id, name)
        control.clear()
        control.send_keys(value)


def submit(driver: WebDriver, form_id: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f"#{form_id} button[type=submit]").click()


def refused_requests_drain(driver: WebDriver, status: int) -> None:
    """Empties the console's log, which must hold only the browser's line for the refused
    request(s) the journey just made on purpose (Chromium logs every 4xx answer)."""
    logged = console_errors(driver)
    assert logged, "the refused request was not made"
    assert all(f"status of {status}" in line for line in logged), logged


def ready(driver: WebDriver, services: Services, element_id: str, *, what: str) -> None:
    """Waits until the page's module has filled `element_id` (no longer the placeholder)."""
    page_wait(driver, services, lambda d: text_of(d, element_id) not in ("", "…"), what=what)


def test_a_person_signs_up_makes_an_api_key_uses_it_and_revokes_it(
    browser: WebDriver, services: Services, server: str, screenshots: Screenshots, tmp_path: Path
):
    book = tmp_path / "harbour.pdf"
    book.write_bytes(pdf_bytes(3, text=lambda n: f"Chapter {n} opens on a quiet harbour where the boats come in."))
    browser.get(server + "/")
    page_wait(browser, services, lambda d: "Spanish" in text_of(d, "languages"), what="the languages")
    assert_accessible(browser, "the home page")
    # A book's price before signing up.
    field(browser, "estimate-form", "file").send_keys(str(book))
    submit(browser, "estimate-form")
    page_wait(browser, services, lambda d: text_of(d, "estimate-pages") == "3", what="the estimate")
    assert text_of(browser, "estimate-name") == "harbour.pdf"
    assert text_of(browser, "estimate-expected").startswith("$")
    screenshots("home with an estimate")
    assert_accessible(browser, "the home page with an estimate")

    browser.find_element(By.LINK_TEXT, "Create an account").click()
    page_wait(browser, services, lambda d: path_is(d, "/signup"), what="the sign-up page")
    assert_accessible(browser, "the sign-up page")
    # A password the API refuses is said next to the password field, and no account is made.
    fill(browser, "signup-form", displayName="Ada Reader", email="ada@example.com", password="short")
    submit(browser, "signup-form")
    page_wait(
        browser,
        services,
        lambda d: field(d, "signup-form", "password").get_attribute("aria-invalid") == "true",
        what="the password refused",
    )
    refused_requests_drain(browser, 400)
    screenshots("sign-up refused")
    assert not User.objects.filter(email="ada@example.com").exists()
    fill(browser, "signup-form", password="a long enough passphrase")
    submit(browser, "signup-form")
    page_wait(browser, services, lambda d: path_is(d, "/books"), what="the books after signing up")
    console_errors(browser)  # what the books page logs is for tests/webapp/test_book_journeys.py
    assert User.objects.get(email="ada@example.com").display_name == "Ada Reader"

    browser.get(server + "/settings/developer")
    page_wait(browser, services, lambda d: text_of(d, "keys-empty") == "No keys yet.", what="no keys")
    assert browser.find_element(By.LINK_TEXT, "Developer").get_attribute("aria-current") == "page"
    assert_accessible(browser, "the developer settings")
    fill(browser, "key-form", name="nightly export", expiresInDays="30")
    browser.find_element(By.ID, "scope-approve").click()
    submit(browser, "key-form")
    page_wait(browser, services, lambda d: text_of(d, "secret-value").startswith("svc_sk_"), what="the new key")
    secret = text_of(browser, "secret-value")
    screenshots("key created")
    assert_accessible(browser, "the developer settings with a new key")
    page_wait(browser, services, lambda d: "nightly export" in text_of(d, "keys"), what="the key listed")
    row = browser.find_element(By.CSS_SELECTOR, "#keys tbody tr")
    assert "Active" in row.text
    assert "approve" in row.text
    key = ApiKey.objects.get(user__email="ada@example.com")
    assert sorted(key.scopes) == ["approve", "projects:write"]
    assert key.expires_at is not None

    # The secret works against the API as it is shown.
    used = httpx.get(f"{server}/v1/wallet", headers={"Authorization": f"Bearer {secret}"})
    assert used.status_code == 200, used.text
    browser.find_element(By.ID, "secret-done").click()
    assert not browser.find_element(By.ID, "secret-panel").is_displayed()
    assert secret not in browser.find_element(By.TAG_NAME, "body").text

    browser.find_element(By.CSS_SELECTOR, "button[aria-label='Revoke nightly export']").click()
    Alert(browser).accept()
    page_wait(
        browser,
        services,
        lambda d: "Revoked" in d.find_element(By.CSS_SELECTOR, "#keys tbody tr").text,
        what="the key revoked",
    )
    screenshots("key revoked")
    refused = httpx.get(f"{server}/v1/wallet", headers={"Authorization": f"Bearer {secret}"})
    assert refused.status_code == 401
    assert refused.json()["code"] == "api_key_revoked"
    assert console_errors(browser) == []

    browser.find_element(By.ID, "sign-out").click()
    page_wait(browser, services, lambda d: notice_says(d, "You are signed out."), what="signed out")
    assert browser.find_element(By.LINK_TEXT, "Sign in").is_displayed()
    assert browser.execute_script("return localStorage.getItem('bts.token');") is None


def test_a_person_signs_in_with_the_keyboard_redeems_a_code_and_sets_spending_and_preferences(
    browser: WebDriver, services: Services, server: str, screenshots: Screenshots
):
    reader = UserFactory()
    _, [code] = codes_issue(amount="25", count=1, operator=None)

    # A sign-in the API no longer takes (here a token it never issued) ends at the first
    # call: the sign-in page says so, and signing in again, with the keyboard alone, comes
    # back to the wallet.
    browser.get(server + "/signin")
    browser.execute_script("localStorage.setItem('bts.token', 'not-a-token-we-issued');")
    browser.get(server + "/wallet")
    page_wait(browser, services, lambda d: notice_says(d, "Your sign-in has ended"), what="the sign-in ended")
    assert path_is(browser, "/signin")
    assert browser.execute_script("return localStorage.getItem('bts.token');") is None
    refused_requests_drain(browser, 401)
    assert_accessible(browser, "the sign-in page")
    page_wait(
        browser,
        services,
        lambda d: d.switch_to.active_element.get_attribute("name") == "email",
        what="the email field focused",
    )
    keyboard = browser.switch_to.active_element
    keyboard.send_keys(reader.email, Keys.TAB)
    browser.switch_to.active_element.send_keys(DEFAULT_PASSWORD, Keys.ENTER)
    page_wait(browser, services, lambda d: path_is(d, "/wallet"), what="back on the wallet")
    ready(browser, services, "balance", what="the balance")
    assert text_of(browser, "balance") == "$0.00"
    assert_accessible(browser, "the wallet")

    # A code typed loosely (lower case, spaces) is redeemed; the history and the header show it.
    fill(browser, "redeem-form", code=code.lower().replace("-", " "))
    submit(browser, "redeem-form")
    page_wait(browser, services, lambda d: notice_says(d, "Code redeemed: $25.00"), what="the code redeemed")
    page_wait(browser, services, lambda d: text_of(d, "balance") == "$25.00", what="the new balance")
    assert "$25.00" in text_of(browser, "nav-balance")
    page_wait(browser, services, lambda d: "Credit code redeemed" in text_of(d, "ledger"), what="the history")
    row = browser.find_element(By.CSS_SELECTOR, "#ledger tbody tr")
    assert "+$25.00" in row.text
    screenshots("code redeemed")
    # The same code again is refused next to its field; nothing more is credited.
    fill(browser, "redeem-form", code=code)
    submit(browser, "redeem-form")
    page_wait(
        browser,
        services,
        lambda d: notice_says(d, "This code has already been redeemed."),
        what="the code refused",
    )
    refused_requests_drain(browser, 400)
    assert "already been redeemed" in browser.find_element(By.CSS_SELECTOR, "#redeem-form .field-error").text
    assert field(browser, "redeem-form", "code").get_attribute("aria-invalid") == "true"
    assert LedgerEntry.objects.filter(wallet__user=reader).count() == 1
    screenshots("code refused")

    # Instant credit on a development deployment, and its own page.
    fill(browser, "top-up-form", amount="10")
    submit(browser, "top-up-form")
    page_wait(browser, services, lambda d: text_of(d, "balance") == "$35.00", what="the manual top-up")
    page_wait(
        browser, services, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#ledger tbody tr")) == 2, what="two entries"
    )
    top_up = TopUp.objects.get(user=reader, method="manual", amount=10)
    browser.get(f"{server}/wallet/top-up/{top_up.reference}")
    page_wait(browser, services, lambda d: text_of(d, "outcome-title") == "Credit added", what="the top-up page")
    assert text_of(browser, "outcome-amount") == "$10.00"
    assert_accessible(browser, "the top-up page")
    screenshots("top-up outcome")

    # Spending: a ceiling and an alert are kept; auto top-up without a saved card is refused
    # next to its amount.
    browser.get(server + "/settings/spending")
    ready(browser, services, "spending-summary", what="the spending settings")
    assert_accessible(browser, "the spending settings")
    fill(browser, "ceiling-form", ceiling="50")
    submit(browser, "ceiling-form")
    page_wait(browser, services, lambda d: notice_says(d, "Monthly ceiling set to $50.00"), what="the ceiling")
    fill(browser, "alert-form", threshold="5")
    submit(browser, "alert-form")
    page_wait(browser, services, lambda d: notice_says(d, "$5.00"), what="the alert")
    fill(browser, "auto-form", threshold="5", amount="20")
    submit(browser, "auto-form")
    page_wait(
        browser,
        services,
        lambda d: "save a card first" in d.find_element(By.CSS_SELECTOR, "#auto-form").text,
        what="auto top-up refused",
    )
    assert field(browser, "auto-form", "amount").get_attribute("aria-invalid") == "true"
    refused_requests_drain(browser, 400)
    screenshots("spending")
    browser.refresh()
    page_wait(
        browser, services, lambda d: field(d, "ceiling-form", "ceiling").get_attribute("value") == "50", what="kept"
    )
    assert field(browser, "alert-form", "threshold").get_attribute("value") == "5"
    assert field(browser, "auto-form", "threshold").get_attribute("value") == ""

    # Preferences: the default language for new books.
    browser.get(server + "/settings")
    page_wait(
        browser,
        services,
        lambda d: field(d, "profile-form", "email").get_attribute("value") == reader.email,
        what="the profile",
    )
    assert_accessible(browser, "the settings")
    Select(field(browser, "preferences-form", "defaultTargetLanguage")).select_by_value("es")
    submit(browser, "preferences-form")
    page_wait(browser, services, lambda d: notice_says(d, "Preferences saved."), what="the preferences")
    reader.refresh_from_db()
    assert reader.default_target_language == "es"
    screenshots("settings")
    assert console_errors(browser) == []


def test_the_account_pages_fit_a_phone_sized_window(
    browser: WebDriver, services: Services, server: str, screenshots: Screenshots
):
    reader = UserFactory()
    api_key_create(user=reader, name="a key with a rather long name for a small screen", expires_in_days=90)
    window(browser, PHONE)
    for path, placeholder in (("/", "languages"), ("/signup", None)):
        browser.get(server + path)
        if placeholder:
            page_wait(browser, services, lambda d, slot=placeholder: "…" not in text_of(d, slot), what=path)
        assert_fits_width(browser, path)
        assert_accessible(browser, f"{path} on a phone")
        screenshots(f"phone {path}")

    browser.get(server + "/signin?next=/settings/developer")
    fill(browser, "signin-form", email=reader.email, password=DEFAULT_PASSWORD)
    submit(browser, "signin-form")
    page_wait(browser, services, lambda d: path_is(d, "/settings/developer"), what="signed in, on the developer page")
    for path, ready_id in (
        ("/settings/developer", "keys"),
        ("/wallet", "balance"),
        ("/settings/spending", "spending-summary"),
        ("/settings", "password-title"),
    ):
        if not path_is(browser, path):
            browser.get(server + path)
        ready(browser, services, ready_id, what=path)
        # The header's links stay on screen and usable (they wrap, nothing is cut off).
        nav = browser.find_element(By.CSS_SELECTOR, ".site-header nav")
        assert nav.is_displayed()
        assert nav.rect["x"] + nav.rect["width"] <= PHONE[0]
        assert_fits_width(browser, path)
        assert_accessible(browser, f"{path} on a phone")
        screenshots(f"phone {path}")
    assert console_errors(browser) == []


def test_a_card_top_up_goes_to_the_checkout_and_the_return_page_shows_the_credit_as_it_lands(
    browser: WebDriver, services: Services, stripe_stand_in: StripeStandIn, screenshots: Screenshots
):
    server = services.api_server(
        DEVELOPMENT_DEPLOYMENT="false",
        STRIPE_SECRET_KEY=STRIPE_API_KEY,
        STRIPE_WEBHOOK_SECRET=STRIPE_WEBHOOK_SECRET,
        STRIPE_API_BASE=stripe_stand_in.base_url,
    )
    reader = UserFactory()
    browser.get(f"{server}/signin?next=/wallet")
    fill(browser, "signin-form", email=reader.email, password=DEFAULT_PASSWORD)
    submit(browser, "signin-form")
    page_wait(browser, services, lambda d: path_is(d, "/wallet"), what="the wallet")
    ready(browser, services, "balance", what="the balance")
    # Not a development deployment: a card, and no instant credit.
    assert field(browser, "top-up-form", "method").get_attribute("value") == "card"
    assert not browser.find_elements(By.ID, "method-manual")
    fill(browser, "top-up-form", amount="15")
    submit(browser, "top-up-form")
    page_wait(
        browser,
        services,
        lambda d: d.current_url.startswith("https://checkout.stripe.com/c/pay/"),
        what="the browser sent to Stripe Checkout",
    )
    console_errors(browser)  # the stand-in's checkout address does not exist: the browser says so
    top_up = TopUp.objects.get(user=reader)
    assert top_up.status == "pending"

    # Back on the return page before Stripe has told the service: it waits, then shows the
    # credit when the (signed) webhook lands, without a reload.
    browser.get(f"{server}/wallet/top-up/{top_up.reference}?checkout=success")
    page_wait(browser, services, lambda d: text_of(d, "outcome-title") == "Waiting for the payment", what="pending")
    screenshots("top-up pending")
    assert_accessible(browser, "the pending top-up")
    session = stripe_stand_in.checkout_pay(top_up.provider_reference)
    payload = StripeStandIn.event_payload("checkout.session.completed", session)
    delivered = httpx.post(
        f"{server}/v1/payments/stripe/webhook",
        content=payload,
        headers={
            "Stripe-Signature": signature_header(payload, STRIPE_WEBHOOK_SECRET),
            "Content-Type": "application/json",
        },
    )
    assert delivered.status_code == 200, delivered.text
    page_wait(browser, services, lambda d: text_of(d, "outcome-title") == "Credit added", what="the credit")
    assert text_of(browser, "outcome-credited") == "$15.00"
    page_wait(browser, services, lambda d: "$15.00" in text_of(d, "nav-balance"), what="the header's balance")
    screenshots("top-up confirmed")

    # The card is saved: the wallet offers it, the spending settings list it as primary.
    browser.get(server + "/wallet")
    page_wait(
        browser,
        services,
        lambda d: "Visa ending 4242 (primary)" in text_of(d, "saved-card-field"),
        what="the saved card offered",
    )
    page_wait(browser, services, lambda d: "Credit added" in text_of(d, "ledger"), what="the credit in the history")
    browser.get(server + "/settings/spending")
    page_wait(browser, services, lambda d: "Visa ending 4242" in text_of(d, "cards"), what="the saved card listed")
    assert "Primary" in text_of(browser, "cards")
    screenshots("saved card")
    assert console_errors(browser) == []


def test_a_person_signs_in_with_an_external_provider_and_lands_where_they_were_going(
    browser: WebDriver, services: Services, screenshots: Screenshots
):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    asked: list[dict[str, str]] = []

    class Provider(QuietHandler):
        """An OpenID Connect provider's two addresses the app uses: its key set, and its
        authorization address, which answers with an ID token in the redirect's fragment."""

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/keys":
                body = json.dumps({"keys": [{**public, "kid": "k1", "alg": "RS256", "use": "sig"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            query = dict(parse_qsl(url.query))
            asked.append(query)
            now = int(time.time())
            claims = {
                "iss": issuer,
                "aud": query["client_id"],
                "sub": "acme-7",
                "email": "grace@acme.test",
                "email_verified": True,
                "name": "Grace Reader",
                "nonce": query["nonce"],
                "iat": now,
                "exp": now + 600,
            }
            token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})
            fragment = urlencode({"id_token": token, "state": query["state"]})
            self.send_response(302)
            self.send_header("Location", f"{query['redirect_uri']}#{fragment}")
            self.end_headers()

    with serving(Provider) as issuer:
        server = services.api_server(
            OIDC_PROVIDERS="acme",
            OIDC_ACME_ISSUERS=issuer,
            OIDC_ACME_JWKS_URL=f"{issuer}/keys",
            OIDC_ACME_CLIENT_IDS="books-acme",
            OIDC_ACME_AUTHORIZE_URL=f"{issuer}/authorize",
        )
        browser.get(f"{server}/signin?next=/settings")
        button = browser.find_element(By.CSS_SELECTOR, "button[data-provider='acme']")
        assert button.text == "Continue with Acme"
        screenshots("sign-in with a provider")
        button.click()
        page_wait(browser, services, lambda d: path_is(d, "/settings"), what="signed in, where they were going")
        page_wait(
            browser,
            services,
            lambda d: field(d, "profile-form", "email").get_attribute("value") == "grace@acme.test",
            what="the profile",
        )

    [request] = asked
    assert request["client_id"] == "books-acme"
    assert request["response_type"] == "id_token"
    assert request["redirect_uri"] == f"{server}/signin"
    assert len(request["nonce"]) >= 32
    # The token left the address bar; an account without a password was made.
    assert "id_token" not in browser.current_url
    grace = User.objects.get(email="grace@acme.test")
    assert not grace.has_usable_password()
    assert not browser.find_element(By.ID, "password-section").is_displayed()
    screenshots("signed in with a provider")
    assert console_errors(browser) == []
