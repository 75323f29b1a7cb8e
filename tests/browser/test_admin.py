"""The operators' admin in headless Chromium, against a real API server (uvicorn): an
operator signs in, opens a reader's wallet, adds credit through the admin's Add credit
action, and sees the ledger entry that names them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.conftest import browser_wait, chromium_required, console_errors
from tests.e2e.processes import Services
from tests.factories import DEFAULT_PASSWORD, UserFactory
from wallet.models import EntryKind, LedgerEntry
from wallet.services.ledger import wallet_get_or_create

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True),
    chromium_required,
]

# What an operator who handles money needs: wallets (seen and changed) and their ledger.
OPERATOR_PERMISSIONS = ("view_wallet", "change_wallet", "view_ledgerentry")
ADD_CREDIT = "ul.object-tools a[href$='/add-credit/']"


def test_an_operator_adds_credit_in_the_admin_and_the_ledger_names_them(
    browser: WebDriver, services: Services, server: str
):
    operator = UserFactory(email="ops-ana@example.com", is_staff=True)
    operator.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="wallet", codename__in=OPERATOR_PERMISSIONS)
    )
    reader = UserFactory(email="reader-ben@example.com")
    wallet = wallet_get_or_create(user=reader)

    browser.get(server + "/admin/")
    browser_wait(browser, services, lambda d: d.find_elements(By.ID, "id_username"), what="the sign-in form")
    browser.find_element(By.ID, "id_username").send_keys(operator.email)
    browser.find_element(By.ID, "id_password").send_keys(DEFAULT_PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "#login-form [type=submit]").click()
    browser_wait(browser, services, lambda d: d.find_elements(By.LINK_TEXT, "Wallets"), what="the admin's index")

    # From the index to the reader's wallet, by the links an operator follows.
    browser.find_element(By.LINK_TEXT, "Wallets").click()
    browser_wait(browser, services, lambda d: d.find_elements(By.LINK_TEXT, reader.email), what="the wallet list")
    browser.find_element(By.LINK_TEXT, reader.email).click()
    browser_wait(browser, services, lambda d: d.find_elements(By.CSS_SELECTOR, ADD_CREDIT), what="the wallet")
    assert f"/admin/wallet/wallet/{wallet.pk}/change/" in browser.current_url

    add_credit = browser.find_element(By.CSS_SELECTOR, ADD_CREDIT)
    assert add_credit.text.casefold() == "add credit"  # the admin's style shows object tools in capitals
    add_credit.click()
    browser_wait(browser, services, lambda d: d.find_elements(By.ID, "id_amount"), what="the add-credit form")
    assert reader.email in browser.find_element(By.TAG_NAME, "h1").text
    browser.find_element(By.ID, "id_amount").send_keys("12.50")
    browser.find_element(By.ID, "id_reason").send_keys("Goodwill after an outage")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit][value='Add credit']").click()

    # Back on the wallet: the message, the balance, and the ledger row naming the operator.
    messages = browser_wait(
        browser, services, lambda d: d.find_elements(By.CSS_SELECTOR, "ul.messagelist li.success"), what="the message"
    )
    assert isinstance(messages, list)
    assert messages[0].text == f"Added 12.5 USD to {reader.email}."
    assert f"/admin/wallet/wallet/{wallet.pk}/change/" in browser.current_url
    rows = browser.find_elements(By.CSS_SELECTOR, "fieldset.module table tbody tr.form-row")
    ledger = [row.text for row in rows if "adjustment" in row.text]
    assert len(ledger) == 1, [row.text for row in rows]
    assert "Goodwill after an outage (by ops-ana@example.com)" in ledger[0]
    assert "12.5" in ledger[0]

    [entry] = LedgerEntry.objects.filter(wallet=wallet)
    assert (entry.kind, entry.amount, entry.cause_type) == (EntryKind.ADJUSTMENT, Decimal("12.5"), "operator")
    assert entry.memo == "Goodwill after an outage (by ops-ana@example.com)"
    wallet.refresh_from_db()
    assert wallet.balance == Decimal("12.5")
    assert not console_errors(browser)
