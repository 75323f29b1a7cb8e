"""Crypto top-ups through BTCPay Server, over HTTP, against a local Greenfield stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from tests.support.problems import assert_problem
from tests.wallet.btcpay_stand_in import BtcpayStandIn, btcpay_stand_in, webhook_send, webhook_signature
from tests.wallet.helpers import assert_wallet_invariants
from wallet.models import EntryKind, LedgerEntry, TopUp, Wallet
from wallet.services import btcpay as btcpay_gateway
from wallet.tasks import crypto_pending_reconcile

pytestmark = pytest.mark.django_db

APP_URL = "https://app.example"


@pytest.fixture
def btcpay(settings: Any) -> Iterator[BtcpayStandIn]:
    """A BTCPay store (the stand-in) configured as the deployment's crypto provider."""
    with btcpay_stand_in() as stand_in:
        settings.BTCPAY_URL = stand_in.url
        settings.BTCPAY_API_KEY = stand_in.api_key
        settings.BTCPAY_STORE_ID = stand_in.store_id
        settings.BTCPAY_WEBHOOK_SECRET = stand_in.webhook_secret
        settings.CRYPTO_COINS = ["BTC", "LTC"]
        settings.PAYMENT_HTTP_TIMEOUT_SECONDS = 5.0
        settings.APP_URL = APP_URL
        yield stand_in


def assert_opened(response: Any, btcpay: BtcpayStandIn) -> dict[str, Any]:
    """The answer is a pending crypto Top-up view backed by a new invoice; returns the view."""
    assert response.status_code == 200, response.content
    view = response.json()
    assert (view["status"], view["method"], view["creditedAmount"]) == ("pending", "crypto", None)
    assert btcpay.invoice_for(view["reference"]) is not None
    return view


def open_top_up(client: Any, btcpay: BtcpayStandIn, amount: int = 25, coin: str = "BTC") -> tuple[dict, str]:
    """A crypto top-up opened over HTTP: its view and its invoice id."""
    view = assert_opened(
        client.post("/v1/wallet/top-up", {"amount": amount, "method": "crypto", "coin": coin}, format="json"), btcpay
    )
    invoice = btcpay.invoice_for(view["reference"])
    return view, invoice.id if invoice else ""


def deliver(api_client: Any, btcpay: BtcpayStandIn, invoice_id: str, event_type: str, **extra: Any) -> Any:
    return webhook_send(api_client, btcpay.webhook_body(invoice_id, event_type, **extra), secret=btcpay.webhook_secret)


def assert_received(response: Any) -> None:
    assert response.status_code == 200, response.content
    assert response.json() == {"received": True}


def top_up_credits(user: Any) -> int:
    return LedgerEntry.objects.filter(wallet__user=user, kind=EntryKind.TOP_UP_CREDIT).count()


def test_a_crypto_top_up_answers_a_pending_view_with_the_invoice_checkout_address_and_coin_amount(
    user, jwt_client, btcpay
):
    response = jwt_client(user).post("/v1/wallet/top-up", {"amount": 25, "method": "crypto", "coin": "btc"})

    view = assert_opened(response, btcpay)
    invoice = btcpay.invoice_for(view["reference"])
    assert invoice is not None
    assert view["checkoutUrl"] == f"{btcpay.url}/i/{invoice.id}"
    assert view["cryptoAddress"] == invoice.addresses["BTC-CHAIN"]
    assert view["cryptoAmount"] == invoice.due("BTC-CHAIN") == "0.00041235"
    assert view["cryptoCoin"] == "BTC"
    assert view["amount"] == 25
    assert view["balance"] == 0
    assert view["expiresUtc"] is not None
    assert view["cryptoAmount"] in view["message"]
    created = btcpay.requests_to("POST", "/invoices")[0]
    assert created.authorization == f"token {btcpay.api_key}"
    assert created.body["amount"] == "25"
    assert created.body["currency"] == "USD"
    assert created.body["metadata"]["orderId"] == view["reference"]
    assert created.body["checkout"]["paymentMethods"] == ["BTC-CHAIN"]
    assert created.body["checkout"]["redirectURL"].startswith(APP_URL)
    assert jwt_client(user).get(f"/v1/wallet/top-up/{view['reference']}").json() == view


def test_a_settled_invoice_confirms_the_top_up_and_credits_the_wallet_exactly_once(
    user, jwt_client, api_client, btcpay
):
    view, invoice_id = open_top_up(jwt_client(user), btcpay)
    btcpay.invoice_status_set(invoice_id, "Settled")
    body = btcpay.webhook_body(invoice_id, "InvoiceSettled", manuallyMarked=False, overPaid=False)

    assert_received(webhook_send(api_client, body, secret=btcpay.webhook_secret))
    assert_received(webhook_send(api_client, body, secret=btcpay.webhook_secret))  # BTCPay redelivers
    assert_received(deliver(api_client, btcpay, invoice_id, "InvoicePaymentSettled"))

    polled = jwt_client(user).get(f"/v1/wallet/top-up/{view['reference']}").json()
    assert (polled["status"], polled["creditedAmount"], polled["balance"]) == ("confirmed", 25, 25)
    assert top_up_credits(user) == 1
    assert jwt_client(user).get("/v1/wallet").json()["balanceUsd"] == 25
    assert_wallet_invariants(Wallet.objects.get(user=user).pk)


def test_a_webhook_with_a_missing_or_wrong_signature_is_refused_and_changes_nothing(
    user, jwt_client, api_client, btcpay
):
    view, invoice_id = open_top_up(jwt_client(user), btcpay)
    btcpay.invoice_status_set(invoice_id, "Settled")
    body = btcpay.webhook_body(invoice_id, "InvoiceSettled")
    reads_before = len(btcpay.requests_to("GET"))

    assert_problem(webhook_send(api_client, body, secret=None), 400, "btcpay_signature_invalid")
    assert_problem(webhook_send(api_client, body, secret="not-the-secret"), 400, "btcpay_signature_invalid")
    assert_problem(webhook_send(api_client, body, signature="sha256=00"), 400, "btcpay_signature_invalid")
    other_body = btcpay.webhook_body(invoice_id, "InvoiceSettled", overPaid=True)
    signed_other = webhook_send(api_client, body, signature=webhook_signature(other_body, btcpay.webhook_secret))
    assert_problem(signed_other, 400, "btcpay_signature_invalid")

    assert jwt_client(user).get(f"/v1/wallet/top-up/{view['reference']}").json()["status"] == "pending"
    assert top_up_credits(user) == 0
    assert len(btcpay.requests_to("GET")) == reads_before


def test_without_a_webhook_secret_no_signature_is_accepted(user, jwt_client, api_client, btcpay, settings):
    view, invoice_id = open_top_up(jwt_client(user), btcpay)
    btcpay.invoice_status_set(invoice_id, "Settled")
    settings.BTCPAY_WEBHOOK_SECRET = ""
    body = btcpay.webhook_body(invoice_id, "InvoiceSettled")

    assert_problem(webhook_send(api_client, body, secret=""), 400, "btcpay_signature_invalid")
    assert TopUp.objects.get(reference=view["reference"]).status == "pending"


def test_a_body_claiming_settled_is_not_believed_while_the_api_says_new(user, jwt_client, api_client, btcpay):
    view, invoice_id = open_top_up(jwt_client(user), btcpay)

    assert_received(deliver(api_client, btcpay, invoice_id, "InvoiceSettled"))

    polled = jwt_client(user).get(f"/v1/wallet/top-up/{view['reference']}").json()
    assert (polled["status"], polled["balance"]) == ("pending", 0)
    assert top_up_credits(user) == 0
    assert btcpay.requests_to("GET", f"/invoices/{invoice_id}")


def test_a_processing_invoice_stays_pending_and_says_the_payment_was_seen(user, jwt_client, api_client, btcpay):
    view, invoice_id = open_top_up(jwt_client(user), btcpay)
    btcpay.invoice_status_set(invoice_id, "Processing")

    assert_received(deliver(api_client, btcpay, invoice_id, "InvoiceProcessing", overPaid=False))

    polled = jwt_client(user).get(f"/v1/wallet/top-up/{view['reference']}").json()
    assert polled["status"] == "pending"
    assert "waiting for confirmations" in polled["message"]
    assert top_up_credits(user) == 0


def test_an_expired_invoice_expires_the_top_up_and_says_so_when_it_was_partly_paid(
    user, jwt_client, api_client, btcpay
):
    client = jwt_client(user)
    unpaid, unpaid_invoice = open_top_up(client, btcpay, amount=10)
    partial, partial_invoice = open_top_up(client, btcpay, amount=20)
    btcpay.invoice_status_set(unpaid_invoice, "Expired")
    btcpay.invoice_status_set(partial_invoice, "Expired", "PaidPartial")

    assert_received(deliver(api_client, btcpay, unpaid_invoice, "InvoiceExpired", partiallyPaid=False))
    assert_received(deliver(api_client, btcpay, partial_invoice, "InvoiceExpired", partiallyPaid=True))

    unpaid_view = client.get(f"/v1/wallet/top-up/{unpaid['reference']}").json()
    partial_view = client.get(f"/v1/wallet/top-up/{partial['reference']}").json()
    assert (unpaid_view["status"], partial_view["status"]) == ("expired", "expired")
    assert "partial" not in unpaid_view["message"]
    assert "partial payment" in partial_view["message"]
    assert top_up_credits(user) == 0


def test_an_invoice_marked_invalid_cancels_the_top_up(user, jwt_client, api_client, btcpay):
    view, invoice_id = open_top_up(jwt_client(user), btcpay)
    btcpay.invoice_status_set(invoice_id, "Invalid", "Marked")

    assert_received(deliver(api_client, btcpay, invoice_id, "InvoiceInvalid", manuallyMarked=True))

    polled = jwt_client(user).get(f"/v1/wallet/top-up/{view['reference']}").json()
    assert (polled["status"], polled["creditedAmount"]) == ("cancelled", None)
    assert top_up_credits(user) == 0


def test_a_payment_that_settles_after_the_invoice_expired_is_still_credited(user, jwt_client, api_client, btcpay):
    view, invoice_id = open_top_up(jwt_client(user), btcpay)
    btcpay.invoice_status_set(invoice_id, "Expired")
    assert_received(deliver(api_client, btcpay, invoice_id, "InvoiceExpired"))
    assert TopUp.objects.get(reference=view["reference"]).status == "expired"

    btcpay.invoice_status_set(invoice_id, "Settled", "PaidLate")
    assert_received(deliver(api_client, btcpay, invoice_id, "InvoiceSettled"))
    btcpay.invoice_status_set(invoice_id, "Expired")  # a stale expiry arriving late undoes nothing
    assert_received(deliver(api_client, btcpay, invoice_id, "InvoiceExpired"))

    polled = jwt_client(user).get(f"/v1/wallet/top-up/{view['reference']}").json()
    assert (polled["status"], polled["creditedAmount"], polled["balance"]) == ("confirmed", 25, 25)
    assert top_up_credits(user) == 1


def test_events_of_unknown_invoices_other_stores_or_no_invoice_are_acknowledged_and_ignored(
    user, jwt_client, api_client, btcpay
):
    view, invoice_id = open_top_up(jwt_client(user), btcpay)
    btcpay.invoice_status_set(invoice_id, "Settled")
    reads_before = len(btcpay.requests_to("GET"))

    assert_received(deliver(api_client, btcpay, "UnknownInvoice42", "InvoiceSettled"))
    assert_received(deliver(api_client, btcpay, invoice_id, "InvoiceSettled", store_id="AnotherStore"))
    no_invoice = b'{"type": "PayoutCreated", "storeId": "%s"}' % btcpay.store_id.encode()
    assert_received(webhook_send(api_client, no_invoice, secret=btcpay.webhook_secret))

    assert len(btcpay.requests_to("GET")) == reads_before
    assert TopUp.objects.get(reference=view["reference"]).status == "pending"


def test_a_signed_body_that_is_not_json_is_a_malformed_request(api_client, btcpay):
    assert_problem(webhook_send(api_client, b"not json", secret=btcpay.webhook_secret), 400, "malformed_request")


def test_a_webhook_answers_502_when_btcpay_cannot_be_read_so_that_btcpay_redelivers(
    user, jwt_client, api_client, btcpay
):
    view, invoice_id = open_top_up(jwt_client(user), btcpay)
    btcpay.invoice_status_set(invoice_id, "Settled")
    btcpay.fail_with = 503

    assert_problem(deliver(api_client, btcpay, invoice_id, "InvoiceSettled"), 502, "payment_provider_error")
    assert TopUp.objects.get(reference=view["reference"]).status == "pending"

    btcpay.fail_with = None
    assert_received(deliver(api_client, btcpay, invoice_id, "InvoiceSettled"))
    assert TopUp.objects.get(reference=view["reference"]).status == "confirmed"


def test_an_unknown_coin_is_refused_before_any_invoice_is_made(user, jwt_client, btcpay):
    response = jwt_client(user).post("/v1/wallet/top-up", {"amount": 25, "method": "crypto", "coin": "DOGE"})

    body = assert_problem(response, 400, "validation_error")
    assert "coin" in body["errors"]
    assert not TopUp.objects.exists()
    assert btcpay.requests == []


@pytest.mark.parametrize("missing", ["BTCPAY_URL", "BTCPAY_API_KEY", "BTCPAY_STORE_ID"])
def test_crypto_is_unavailable_while_btcpay_is_not_configured(user, jwt_client, btcpay, settings, missing):
    setattr(settings, missing, "")

    response = jwt_client(user).post("/v1/wallet/top-up", {"amount": 25, "method": "crypto", "coin": "BTC"})

    assert_problem(response, 403, "payment_method_unavailable")
    assert not TopUp.objects.exists()
    assert btcpay.requests == []


def test_btcpay_unreachable_answers_502_and_leaves_a_failed_top_up(user, jwt_client, settings):
    with btcpay_stand_in() as stopped:
        address = stopped.url  # nothing listens here once the stand-in has stopped
    settings.BTCPAY_URL, settings.BTCPAY_API_KEY, settings.BTCPAY_STORE_ID = address, "key", "store"

    response = jwt_client(user).post("/v1/wallet/top-up", {"amount": 25, "method": "crypto", "coin": "BTC"})

    assert_problem(response, 502, "payment_provider_error")
    top_up = TopUp.objects.get()
    assert (top_up.status, top_up.credited_amount, top_up.provider_reference) == ("failed", None, "")
    assert "Nothing was charged" in top_up.message
    assert top_up_credits(user) == 0


@pytest.mark.parametrize("failure", ["server_error", "wrong_api_key", "unknown_coin_at_the_store"])
def test_btcpay_refusing_the_invoice_answers_502_and_leaves_a_failed_top_up(
    user, jwt_client, btcpay, settings, failure
):
    coin = "BTC"
    if failure == "server_error":
        btcpay.fail_with = 500
    elif failure == "wrong_api_key":
        settings.BTCPAY_API_KEY = "not-the-key"
    else:
        settings.CRYPTO_COINS = ["BTC", "XMR"]  # allowed here, but the store has no XMR wallet
        coin = "XMR"

    response = jwt_client(user).post("/v1/wallet/top-up", {"amount": 25, "method": "crypto", "coin": coin})

    assert_problem(response, 502, "payment_provider_error")
    assert TopUp.objects.get().status == "failed"
    assert btcpay.invoices == {}


def test_the_reconcile_task_confirms_a_top_up_whose_webhook_was_lost(user, jwt_client, btcpay):
    client = jwt_client(user)
    lost, lost_invoice = open_top_up(client, btcpay, amount=25)
    recent, recent_invoice = open_top_up(client, btcpay, amount=30)
    btcpay.invoice_status_set(lost_invoice, "Settled")
    btcpay.invoice_status_set(recent_invoice, "Settled")
    TopUp.objects.filter(reference=lost["reference"]).update(created_at=timezone.now() - timedelta(minutes=10))

    assert crypto_pending_reconcile() == 1
    assert crypto_pending_reconcile() == 0

    assert client.get(f"/v1/wallet/top-up/{lost['reference']}").json()["status"] == "confirmed"
    assert client.get(f"/v1/wallet/top-up/{recent['reference']}").json()["status"] == "pending"
    assert client.get("/v1/wallet").json()["balanceUsd"] == 25
    assert top_up_credits(user) == 1


def test_the_reconcile_applies_expiry_and_processing_and_fails_a_top_up_that_never_got_an_invoice(
    user, jwt_client, btcpay
):
    client = jwt_client(user)
    expired, expired_invoice = open_top_up(client, btcpay, amount=10)
    seen, seen_invoice = open_top_up(client, btcpay, amount=20)
    waiting, _ = open_top_up(client, btcpay, amount=30)
    orphan = TopUp.objects.create(reference="tu_orphan", user=user, method="crypto", amount=Decimal("5"))
    btcpay.invoice_status_set(expired_invoice, "Expired")
    btcpay.invoice_status_set(seen_invoice, "Processing")
    TopUp.objects.update(created_at=timezone.now() - timedelta(hours=1))

    assert btcpay_gateway.pending_reconcile() == 3

    statuses = dict(TopUp.objects.values_list("reference", "status"))
    assert statuses == {
        expired["reference"]: "expired",
        seen["reference"]: "pending",
        waiting["reference"]: "pending",
        orphan.reference: "failed",
    }
    assert "waiting for confirmations" in TopUp.objects.get(reference=seen["reference"]).message


def test_the_reconcile_does_nothing_while_btcpay_is_not_configured(user, jwt_client, btcpay, settings):
    _, invoice_id = open_top_up(jwt_client(user), btcpay)
    btcpay.invoice_status_set(invoice_id, "Settled")
    TopUp.objects.update(created_at=timezone.now() - timedelta(hours=1))
    settings.BTCPAY_URL = ""

    assert btcpay_gateway.pending_reconcile() == 0
    assert TopUp.objects.get().status == "pending"


def test_someone_elses_crypto_top_up_is_not_found(user, other_user, jwt_client, btcpay):
    view, _ = open_top_up(jwt_client(user), btcpay)

    assert_problem(jwt_client(other_user).get(f"/v1/wallet/top-up/{view['reference']}"), 404, "not_found")
