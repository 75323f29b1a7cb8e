"""Money across a crash (issue 15): the API server, a real process, is killed while it waits
for Stripe (the local stand-in, which takes the payment and holds its answer back), and the
client retries with the same Idempotency-Key once the in-progress claim has lapsed. The
retry resumes the same top-up with the same key at Stripe: one payment, one credit."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from decimal import Decimal

import httpx
import pytest

from tests.e2e.processes import Services, wait_until
from tests.wallet.helpers import assert_wallet_invariants
from tests.wallet.stripe_stand_in import StripeStandIn, signature_header
from wallet.models import LedgerEntry, TopUp, TopUpStatus, Wallet

pytestmark = [pytest.mark.slow, pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]

API_KEY = "sk_test_stand_in_crash"
WEBHOOK_SECRET = "whsec_stand_in_crash"
IN_PROGRESS_SECONDS = 2
PASSWORD = "a long enough password 42"


@pytest.fixture
def stand_in() -> Iterator[StripeStandIn]:
    with StripeStandIn.running(api_key=API_KEY) as running:
        yield running


def _server(services: Services, stand_in: StripeStandIn) -> str:
    return services.api_server(
        STRIPE_SECRET_KEY=API_KEY,
        STRIPE_WEBHOOK_SECRET=WEBHOOK_SECRET,
        STRIPE_API_BASE=stand_in.base_url,
        IDEMPOTENCY_IN_PROGRESS_TIMEOUT_SECONDS=IN_PROGRESS_SECONDS,
    )


def _card_saved(api: httpx.Client, stand_in: StripeStandIn) -> str:
    """A card saved the only way there is (a checkout paid with it, crediting 10 USD); its id."""
    opened = api.post("/v1/wallet/top-up", json={"amount": 10, "method": "card"})
    assert opened.status_code == 200, opened.text
    session = stand_in.checkout_pay(TopUp.objects.get(reference=opened.json()["reference"]).provider_reference)
    payload = StripeStandIn.event_payload("checkout.session.completed", session)
    delivered = api.post(
        "/v1/payments/stripe/webhook",
        content=payload,
        headers={"Stripe-Signature": signature_header(payload, WEBHOOK_SECRET), "Content-Type": "application/json"},
    )
    assert delivered.status_code == 200, delivered.text
    (card,) = api.get("/v1/wallet/cards").json()
    return str(card["id"])


def test_a_top_up_whose_server_died_waiting_for_stripe_is_resumed_not_charged_twice(
    services: Services, stand_in: StripeStandIn
):
    base = _server(services, stand_in)
    api = httpx.Client(base_url=base, timeout=30)
    registered = api.post(
        "/v1/auth/register", json={"email": "payer@example.com", "password": PASSWORD, "displayName": "Payer"}
    )
    assert registered.status_code == 201, registered.text
    api.headers["Authorization"] = f"Bearer {registered.json()['token']}"
    card_id = _card_saved(api, stand_in)
    body = {"amount": 20, "method": "card", "savedCardId": card_id}
    key = {"Idempotency-Key": "top-up-20-after-a-crash"}

    gate = stand_in.answers_held("/v1/payment_intents")
    first = threading.Thread(target=_posted_quietly, args=(api, body, key))
    first.start()
    wait_until(
        lambda: stand_in.requests_to("POST", "/v1/payment_intents"), what="the charge at Stripe", services=services
    )
    (server,) = services.started
    server.kill()  # the card is charged; our answer is lost with the process
    gate.set()
    first.join(timeout=30)

    api = httpx.Client(base_url=_server(services, stand_in), timeout=30, headers=api.headers)
    while (retry := api.post("/v1/wallet/top-up", json=body, headers=key)).status_code == 409:
        assert retry.json()["code"] == "request_in_progress"  # until the dead claim lapses
        time.sleep(0.5)
    assert retry.status_code == 200, retry.text
    view = retry.json()
    assert (view["status"], view["creditedAmount"], view["balance"]) == ("confirmed", 20, 30)

    charges = stand_in.requests_to("POST", "/v1/payment_intents")
    assert len({request.idempotency_key for request in charges}) == 1  # one payment at Stripe
    assert len([intent for intent in stand_in.intents.values() if intent["amount"] == 2000]) == 1
    top_ups = TopUp.objects.filter(amount=Decimal("20"))
    assert [(top_up.reference, top_up.status) for top_up in top_ups] == [(view["reference"], TopUpStatus.CONFIRMED)]
    wallet = Wallet.objects.get(user__email="payer@example.com")
    assert wallet.balance == Decimal("30")
    assert LedgerEntry.objects.filter(wallet=wallet, kind="top_up_credit").count() == 2  # the checkout's and this
    assert_wallet_invariants(wallet.pk)

    again = api.post("/v1/wallet/top-up", json=body, headers=key)  # later retries: the same top-up
    assert (again.status_code, again.json()["reference"]) == (200, view["reference"])


def _posted_quietly(api: httpx.Client, body: dict[str, object], headers: dict[str, str]) -> None:
    """The first call dies with its server: its error is expected."""
    with contextlib.suppress(httpx.HTTPError):
        api.post("/v1/wallet/top-up", json=body, headers=headers)
