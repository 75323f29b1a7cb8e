"""Card top-ups through Stripe, over HTTP, against a local stand-in speaking Stripe's wire
protocol: the checkout and its signed webhook, saved cards charged at once, declines,
Stripe unreachable, the saved cards endpoints, and auto top-up."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from config.celery_app import app as celery_app
from tests.factories import DEFAULT_PASSWORD
from tests.support.problems import assert_problem
from tests.wallet.helpers import assert_wallet_invariants
from tests.wallet.stripe_stand_in import WEBHOOK_SECRET, StripeStandIn, signature_header
from wallet.models import (
    LedgerEntry,
    SavedCard,
    StripeCustomerErasure,
    TopUp,
    TopUpMethod,
    TopUpOrigin,
    TopUpStatus,
    Wallet,
    WalletSettings,
)
from wallet.services import stripe_gateway
from wallet.services.alerts import auto_top_up_start
from wallet.services.ledger import hold_place
from wallet.services.preferences import auto_top_up_set

pytestmark = pytest.mark.django_db

WEBHOOK = "/v1/payments/stripe/webhook"
AUTHENTICATION_MESSAGE = "Your bank asks you to confirm this payment: top up once with a checkout instead."


def card_top_up(client, amount: Any, **extra: Any):  # type: ignore[no-untyped-def]
    return client.post("/v1/wallet/top-up", {"amount": amount, "method": "card", **extra}, format="json")


def event_send(api_client, event_type: str, obj: dict[str, Any], *, secret: str = WEBHOOK_SECRET):  # type: ignore[no-untyped-def]
    payload = StripeStandIn.event_payload(event_type, obj)
    return payload_send(api_client, payload, signature_header(payload, secret))


def payload_send(api_client, payload: bytes, signature: str | None):  # type: ignore[no-untyped-def]
    headers = {"HTTP_STRIPE_SIGNATURE": signature} if signature is not None else {}
    return api_client.post(WEBHOOK, data=payload, content_type="application/json", **headers)


def assert_checkout_opened(client, stand_in: StripeStandIn, amount: Any) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """A checkout top-up, answered pending; returns its view."""
    response = card_top_up(client, amount)
    assert response.status_code == 200, response.content
    view = response.json()
    assert view["status"] == "pending"
    return view


def checkout_paid(client, stand_in: StripeStandIn) -> tuple[dict[str, Any], dict[str, Any]]:  # type: ignore[no-untyped-def]
    """A checkout top-up of 10 that the customer paid on the hosted page (no event sent
    yet); its view and the paid Checkout Session."""
    view = assert_checkout_opened(client, stand_in, 10)
    return view, stand_in.checkout_pay(session_of(view))


def session_of(view: dict[str, Any]) -> str:
    """The Checkout Session id behind a checkout top-up's view."""
    return TopUp.objects.get(reference=view["reference"]).provider_reference


def assert_card_saved(client, api_client, stand_in: StripeStandIn, *, card: str = "pm_card_visa", amount: Any = 10):  # type: ignore[no-untyped-def]
    """Saves a card the only way there is: a checkout paid with it (which credits `amount`)."""
    view = assert_checkout_opened(client, stand_in, amount)
    session = stand_in.checkout_pay(session_of(view), card=card)
    assert event_send(api_client, "checkout.session.completed", session).status_code == 200
    return SavedCard.objects.get(stripe_payment_method_id=stand_in.intents[session["payment_intent"]]["payment_method"])


def assert_nothing_credited(user) -> None:  # type: ignore[no-untyped-def]
    assert not LedgerEntry.objects.filter(wallet__user=user).exists()


def assert_still_pending(user, view: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    """The top-up waits on, and nothing reached the user's ledger."""
    assert TopUp.objects.get(reference=view["reference"]).status == TopUpStatus.PENDING
    assert_nothing_credited(user)


def assert_top_up_failed(reference: str, message: str) -> TopUp:
    top_up = TopUp.objects.get(reference=reference)
    assert top_up.status == TopUpStatus.FAILED
    assert top_up.message == message
    assert top_up.credited_amount is None
    assert top_up.ledger_entry is None
    return top_up


# --- Checkout: a new card ------------------------------------------------------------------


def test_a_card_top_up_opens_a_checkout_that_saves_the_card_for_later(user, auth_client, stripe_stand_in, settings):
    view = assert_checkout_opened(auth_client, stripe_stand_in, 12.5)
    reference = view["reference"]
    (session_id,) = stripe_stand_in.sessions
    session = stripe_stand_in.sessions[session_id]
    assert view["checkoutUrl"] == session["url"]
    assert view["method"] == "card"
    assert view["creditedAmount"] is None
    assert view["expiresUtc"] is not None
    assert view["balance"] == 0
    (request,) = stripe_stand_in.requests_to("POST", "/v1/checkout/sessions")
    form = request.form
    assert form["mode"] == "payment"
    assert form["line_items[0][price_data][unit_amount]"] == "1250"
    assert form["line_items[0][price_data][currency]"] == "usd"
    assert form["payment_intent_data[setup_future_usage]"] == "off_session"
    assert form["payment_intent_data[metadata][top_up_reference]"] == reference
    assert form["client_reference_id"] == reference
    assert form["metadata[top_up_reference]"] == reference
    assert form["success_url"].startswith(f"{settings.APP_URL}/wallet/top-up/{reference}")
    assert form["cancel_url"].startswith(f"{settings.APP_URL}/wallet/top-up/{reference}")
    assert request.idempotency_key
    customer = WalletSettings.objects.get(wallet__user=user).stripe_customer_id
    assert form["customer"] == customer
    assert stripe_stand_in.customers[customer]["email"] == user.email
    assert_nothing_credited(user)


def test_the_completed_checkout_credits_once_and_saves_the_card_as_primary(
    user, auth_client, api_client, stripe_stand_in
):
    view = assert_checkout_opened(auth_client, stripe_stand_in, 12.5)
    session = stripe_stand_in.checkout_pay(session_of(view))

    response = event_send(api_client, "checkout.session.completed", session)

    assert response.status_code == 200
    assert response.json() == {"received": True}
    polled = auth_client.get(f"/v1/wallet/top-up/{view['reference']}").json()
    assert (polled["status"], polled["creditedAmount"], polled["balance"]) == ("confirmed", 12.5, 12.5)
    assert LedgerEntry.objects.filter(wallet__user=user).count() == 1
    cards = auth_client.get("/v1/wallet/cards").json()
    assert len(cards) == 1
    assert set(cards[0]) == {"id", "brand", "last4", "expMonth", "expYear", "isPrimary", "createdUtc"}
    assert (cards[0]["brand"], cards[0]["last4"], cards[0]["expMonth"], cards[0]["expYear"]) == (
        "visa",
        "4242",
        12,
        2034,
    )
    assert cards[0]["isPrimary"] is True
    assert_wallet_invariants(user.wallet.pk)


def test_a_replayed_completion_event_changes_nothing(user, auth_client, api_client, stripe_stand_in):
    view, session = checkout_paid(auth_client, stripe_stand_in)
    payload = StripeStandIn.event_payload("checkout.session.completed", session)
    assert payload_send(api_client, payload, signature_header(payload, WEBHOOK_SECRET)).status_code == 200

    for _ in range(2):
        response = payload_send(api_client, payload, signature_header(payload, WEBHOOK_SECRET))
        assert response.status_code == 200

    assert Wallet.objects.get(user=user).balance == Decimal("10")
    assert LedgerEntry.objects.filter(wallet__user=user).count() == 1
    assert SavedCard.objects.filter(user=user).count() == 1
    assert TopUp.objects.get(reference=view["reference"]).status == TopUpStatus.CONFIRMED


def test_a_completion_whose_card_cannot_be_read_answers_502_and_saves_the_card_when_redelivered(
    user, auth_client, api_client, stripe_stand_in, settings
):
    view, session = checkout_paid(auth_client, stripe_stand_in)
    payload = StripeStandIn.event_payload("checkout.session.completed", session)
    stripe_stand_in.stop()

    response = payload_send(api_client, payload, signature_header(payload, WEBHOOK_SECRET))

    assert_problem(response, 502, "payment_provider_error")  # Stripe delivers the event again later
    assert TopUp.objects.get(reference=view["reference"]).status == TopUpStatus.CONFIRMED
    assert not SavedCard.objects.exists()
    stripe_stand_in.start()
    settings.STRIPE_API_BASE = stripe_stand_in.base_url

    assert payload_send(api_client, payload, signature_header(payload, WEBHOOK_SECRET)).status_code == 200

    assert SavedCard.objects.filter(user=user, is_primary=True).count() == 1
    assert Wallet.objects.get(user=user).balance == Decimal("10")
    assert LedgerEntry.objects.filter(wallet__user=user).count() == 1


def test_a_second_checkout_reuses_the_stripe_customer(user, auth_client, api_client, stripe_stand_in):
    assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    assert_checkout_opened(auth_client, stripe_stand_in, 11)
    assert len(stripe_stand_in.requests_to("POST", "/v1/customers")) == 1
    customers = {request.form["customer"] for request in stripe_stand_in.requests_to("POST", "/v1/checkout/sessions")}
    assert customers == {WalletSettings.objects.get(wallet__user=user).stripe_customer_id}


def test_a_customer_stripe_no_longer_knows_is_replaced(user, auth_client, stripe_stand_in):
    WalletSettings.objects.create(wallet=Wallet.objects.create(user=user), stripe_customer_id="cus_from_test_mode")
    view = assert_checkout_opened(auth_client, stripe_stand_in, 10)
    customer = WalletSettings.objects.get(wallet__user=user).stripe_customer_id
    assert customer in stripe_stand_in.customers
    assert stripe_stand_in.sessions[session_of(view)]["customer"] == customer


@pytest.mark.parametrize(
    "signature",
    [
        pytest.param("wrong secret", id="signed-with-another-secret"),
        pytest.param(None, id="no-signature-header"),
        pytest.param("garbage", id="malformed-header"),
        pytest.param("tampered", id="payload-changed-after-signing"),
        pytest.param("stale", id="signed-an-hour-ago"),
    ],
)
def test_an_event_without_a_valid_signature_is_refused_and_changes_nothing(
    user, auth_client, api_client, stripe_stand_in, signature
):
    view, session = checkout_paid(auth_client, stripe_stand_in)
    payload = StripeStandIn.event_payload("checkout.session.completed", session)
    header = {
        "wrong secret": signature_header(payload, "whsec_someone_else"),
        None: None,
        "garbage": "v1=,t=yesterday",
        "tampered": signature_header(payload.replace(b'"paid"', b'"unpaid"'), WEBHOOK_SECRET),
        "stale": signature_header(payload, WEBHOOK_SECRET, timestamp=int(timezone.now().timestamp()) - 3600),
    }[signature]

    response = payload_send(api_client, payload, header)

    assert_problem(response, 400, "stripe_signature_invalid")
    assert_still_pending(user, view)
    assert not SavedCard.objects.exists()


def test_the_webhook_is_refused_while_no_signing_secret_is_configured(
    auth_client, api_client, stripe_stand_in, settings
):
    view, session = checkout_paid(auth_client, stripe_stand_in)
    settings.STRIPE_WEBHOOK_SECRET = ""
    payload = StripeStandIn.event_payload("checkout.session.completed", session)
    response = payload_send(api_client, payload, signature_header(payload, ""))
    assert_problem(response, 403, "payment_method_unavailable")
    assert TopUp.objects.get(reference=view["reference"]).status == TopUpStatus.PENDING


def test_an_expired_checkout_expires_the_top_up(user, auth_client, api_client, stripe_stand_in):
    view = assert_checkout_opened(auth_client, stripe_stand_in, 10)
    session = stripe_stand_in.checkout_expire(session_of(view))

    assert event_send(api_client, "checkout.session.expired", session).status_code == 200

    polled = auth_client.get(f"/v1/wallet/top-up/{view['reference']}").json()
    assert polled["status"] == "expired"
    assert "expired" in polled["message"]
    assert polled["creditedAmount"] is None
    assert_nothing_credited(user)


def test_a_completion_whose_amount_or_currency_disagrees_credits_nothing(
    user, auth_client, api_client, stripe_stand_in
):
    view, session = checkout_paid(auth_client, stripe_stand_in)

    assert event_send(api_client, "checkout.session.completed", {**session, "amount_total": 100000}).status_code == 200
    assert event_send(api_client, "checkout.session.completed", {**session, "currency": "eur"}).status_code == 200

    assert_still_pending(user, view)
    assert not SavedCard.objects.exists()


def test_unknown_event_types_and_unknown_top_ups_are_acknowledged_and_ignored(
    user, auth_client, api_client, stripe_stand_in
):
    view, session = checkout_paid(auth_client, stripe_stand_in)
    stranger = {**session, "id": "cs_test_not_ours", "metadata": {}, "client_reference_id": None}

    assert event_send(api_client, "customer.created", {"id": "cus_x", "object": "customer"}).json() == {
        "received": True
    }
    assert event_send(api_client, "checkout.session.completed", stranger).status_code == 200
    assert event_send(api_client, "charge.refunded", {"id": "ch_x", "object": "charge"}).status_code == 200

    assert_still_pending(user, view)


def test_a_checkout_still_awaiting_a_delayed_payment_credits_nothing_until_it_succeeds(
    user, auth_client, api_client, stripe_stand_in
):
    view, session = checkout_paid(auth_client, stripe_stand_in)

    event_send(api_client, "checkout.session.completed", {**session, "payment_status": "unpaid"})
    assert TopUp.objects.get(reference=view["reference"]).status == TopUpStatus.PENDING

    event_send(api_client, "checkout.session.async_payment_succeeded", session)
    assert TopUp.objects.get(reference=view["reference"]).status == TopUpStatus.CONFIRMED
    assert Wallet.objects.get(user=user).balance == Decimal("10")


def test_a_failed_delayed_payment_fails_the_top_up(user, auth_client, api_client, stripe_stand_in):
    view = assert_checkout_opened(auth_client, stripe_stand_in, 10)
    session = {**stripe_stand_in.sessions[session_of(view)], "status": "complete"}

    event_send(api_client, "checkout.session.async_payment_failed", session)

    top_up = TopUp.objects.get(reference=view["reference"])
    assert top_up.status == TopUpStatus.FAILED
    assert top_up.message
    assert_nothing_credited(user)


# --- Saved cards charged at once -----------------------------------------------------------


def test_a_saved_card_is_charged_off_session_at_once(user, auth_client, api_client, stripe_stand_in):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)

    response = card_top_up(auth_client, 20, savedCardId=str(card.pk))

    assert response.status_code == 200, response.content
    view = response.json()
    assert (view["status"], view["creditedAmount"], view["balance"], view["checkoutUrl"]) == (
        "confirmed",
        20,
        30,
        None,
    )
    (request,) = stripe_stand_in.requests_to("POST", "/v1/payment_intents")
    assert request.form["amount"] == "2000"
    assert request.form["currency"] == "usd"
    assert request.form["confirm"] == "true"
    assert request.form["off_session"] == "true"
    assert request.form["payment_method"] == card.stripe_payment_method_id
    assert request.form["customer"] == WalletSettings.objects.get(wallet__user=user).stripe_customer_id
    assert request.form["metadata[top_up_reference]"] == view["reference"]
    assert request.idempotency_key == f"top-up-{view['reference']}"
    top_up = TopUp.objects.get(reference=view["reference"])
    assert top_up.provider_reference in stripe_stand_in.intents
    assert_wallet_invariants(user.wallet.pk)


@pytest.mark.parametrize(
    ("test_card", "message"),
    [
        ("pm_card_chargeCustomerFail", "Your card was declined."),
        ("pm_card_authenticationRequired", AUTHENTICATION_MESSAGE),
        ("pm_card_chargeDeclinedInsufficientFunds", "Your card has insufficient funds."),
    ],
)
def test_a_saved_card_that_is_declined_fails_the_top_up_with_a_clear_message(
    user, auth_client, api_client, stripe_stand_in, test_card, message
):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, card=test_card, amount=10)
    entries = LedgerEntry.objects.count()

    response = card_top_up(auth_client, 20, savedCardId=str(card.pk))

    assert response.status_code == 200, response.content
    view = response.json()
    assert (view["status"], view["message"], view["creditedAmount"], view["balance"]) == ("failed", message, None, 10)
    assert_top_up_failed(view["reference"], message)
    assert LedgerEntry.objects.count() == entries


def test_stripe_unreachable_fails_a_checkout_with_a_502_and_charges_nothing(user, auth_client, stripe_stand_in):
    stripe_stand_in.stop()

    response = card_top_up(auth_client, 10)

    body = assert_problem(response, 502, "payment_provider_error")
    top_up = TopUp.objects.get(user=user)
    assert top_up.status == TopUpStatus.FAILED
    assert top_up.message == body["detail"]
    assert_nothing_credited(user)


def test_stripe_unreachable_fails_a_saved_card_charge_with_a_502(user, auth_client, api_client, stripe_stand_in):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    stripe_stand_in.stop()

    response = card_top_up(auth_client, 20, savedCardId=str(card.pk))

    assert_problem(response, 502, "payment_provider_error")
    top_up = TopUp.objects.get(user=user, saved_card=card)
    assert top_up.status == TopUpStatus.FAILED
    assert "could not be reached" in top_up.message
    assert Wallet.objects.get(user=user).balance == Decimal("10")


def test_an_idempotency_key_retry_of_a_saved_card_top_up_charges_once(user, auth_client, api_client, stripe_stand_in):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    body = {"amount": 20, "method": "card", "savedCardId": str(card.pk)}

    first = auth_client.post("/v1/wallet/top-up", body, format="json", HTTP_IDEMPOTENCY_KEY="top-up-20-usd")
    again = auth_client.post("/v1/wallet/top-up", body, format="json", HTTP_IDEMPOTENCY_KEY="top-up-20-usd")

    assert first.status_code == again.status_code == 200
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["reference"] == first.json()["reference"]
    assert len(stripe_stand_in.requests_to("POST", "/v1/payment_intents")) == 1
    assert Wallet.objects.get(user=user).balance == Decimal("30")


def test_charging_the_same_top_up_again_is_one_payment_at_stripe(user, auth_client, api_client, stripe_stand_in):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    view = card_top_up(auth_client, 20, savedCardId=str(card.pk)).json()
    top_up = TopUp.objects.get(reference=view["reference"])

    again = stripe_gateway.saved_card_charge(top_up=top_up, card=card)

    requests = stripe_stand_in.requests_to("POST", "/v1/payment_intents")
    assert [request.idempotency_key for request in requests] == [f"top-up-{view['reference']}"] * 2
    assert len(stripe_stand_in.intents) == 2  # the checkout's and this one
    assert again.status == TopUpStatus.CONFIRMED
    assert Wallet.objects.get(user=user).balance == Decimal("30")


def test_a_card_top_up_of_a_fraction_of_a_cent_is_refused(user, auth_client, stripe_stand_in):
    response = card_top_up(auth_client, 10.005)
    assert_problem(response, 400, "validation_error")
    assert not TopUp.objects.exists()
    assert stripe_stand_in.requests == []


def test_card_top_ups_are_refused_while_stripe_is_not_configured(user, auth_client, settings):
    settings.STRIPE_SECRET_KEY = ""
    assert_problem(card_top_up(auth_client, 10), 403, "payment_method_unavailable")
    assert not TopUp.objects.exists()


def test_another_users_card_cannot_pay_a_top_up(user, other_user, auth_client, jwt_client, api_client, stripe_stand_in):
    theirs = assert_card_saved(jwt_client(other_user), api_client, stripe_stand_in, amount=10)
    response = card_top_up(auth_client, 20, savedCardId=str(theirs.pk))
    assert_problem(response, 400, "validation_error")
    assert not TopUp.objects.filter(user=user).exists()
    assert stripe_stand_in.requests_to("POST", "/v1/payment_intents") == []


# --- Payment intent events -----------------------------------------------------------------


def pending_off_session_top_up(user, card: SavedCard, intent_id: str) -> TopUp:  # type: ignore[no-untyped-def]
    """An off-session charge Stripe is still working on (its answer lost, or processing)."""
    return TopUp.objects.create(
        reference=f"tu_{intent_id}",
        user=user,
        method=TopUpMethod.CARD,
        origin=TopUpOrigin.AUTO,
        amount=Decimal("20"),
        saved_card=card,
        provider_reference=intent_id,
    )


def intent_object(top_up: TopUp, **changes: Any) -> dict[str, Any]:
    return {
        "id": top_up.provider_reference,
        "object": "payment_intent",
        "amount": 2000,
        "amount_received": 2000,
        "currency": "usd",
        "status": "succeeded",
        "metadata": {"top_up_reference": top_up.reference},
        "last_payment_error": None,
        **changes,
    }


def test_a_succeeded_intent_confirms_a_pending_off_session_top_up_once(user, auth_client, api_client, stripe_stand_in):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    top_up = pending_off_session_top_up(user, card, "pi_test_lost_answer")

    for _ in range(2):
        assert event_send(api_client, "payment_intent.succeeded", intent_object(top_up)).status_code == 200

    top_up.refresh_from_db()
    assert top_up.status == TopUpStatus.CONFIRMED
    assert Wallet.objects.get(user=user).balance == Decimal("30")
    assert LedgerEntry.objects.filter(wallet__user=user).count() == 2


def test_a_succeeded_intent_for_another_amount_credits_nothing(user, auth_client, api_client, stripe_stand_in):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    top_up = pending_off_session_top_up(user, card, "pi_test_other_amount")
    event_send(api_client, "payment_intent.succeeded", intent_object(top_up, amount=99900, amount_received=99900))
    top_up.refresh_from_db()
    assert top_up.status == TopUpStatus.PENDING
    assert Wallet.objects.get(user=user).balance == Decimal("10")


def test_a_failed_intent_fails_a_pending_off_session_top_up_with_stripes_message(
    user, auth_client, api_client, stripe_stand_in
):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    top_up = pending_off_session_top_up(user, card, "pi_test_failed_later")
    error = {"type": "card_error", "code": "card_declined", "decline_code": "lost_card", "message": "Card lost."}
    intent = intent_object(top_up, status="requires_payment_method", amount_received=0, last_payment_error=error)

    event_send(api_client, "payment_intent.payment_failed", intent)

    assert_top_up_failed(top_up.reference, "Card lost.")
    assert Wallet.objects.get(user=user).balance == Decimal("10")


def test_a_failed_attempt_inside_a_checkout_leaves_the_checkout_open(user, auth_client, api_client, stripe_stand_in):
    view = assert_checkout_opened(auth_client, stripe_stand_in, 10)
    error = {"type": "card_error", "code": "card_declined", "message": "Your card was declined."}
    intent = {
        "id": "pi_test_first_try",
        "object": "payment_intent",
        "amount": 1000,
        "currency": "usd",
        "status": "requires_payment_method",
        "metadata": {"top_up_reference": view["reference"]},
        "last_payment_error": error,
    }
    event_send(api_client, "payment_intent.payment_failed", intent)
    assert TopUp.objects.get(reference=view["reference"]).status == TopUpStatus.PENDING


# --- The saved cards endpoints -------------------------------------------------------------


def test_cards_are_listed_primary_first_and_another_can_be_made_primary(user, auth_client, api_client, stripe_stand_in):
    first = assert_card_saved(auth_client, api_client, stripe_stand_in, card="pm_card_visa", amount=10)
    second = assert_card_saved(auth_client, api_client, stripe_stand_in, card="pm_card_mastercard", amount=11)
    listed = auth_client.get("/v1/wallet/cards").json()
    assert [(card["id"], card["isPrimary"]) for card in listed] == [(str(first.pk), True), (str(second.pk), False)]

    response = auth_client.post(f"/v1/wallet/cards/{second.pk}/primary")

    assert response.status_code == 200
    assert (response.json()["id"], response.json()["isPrimary"], response.json()["brand"]) == (
        str(second.pk),
        True,
        "mastercard",
    )
    listed = auth_client.get("/v1/wallet/cards").json()
    assert [(card["id"], card["isPrimary"]) for card in listed] == [(str(second.pk), True), (str(first.pk), False)]


def test_removing_cards_detaches_them_promotes_the_newest_and_turns_auto_top_up_off_with_the_last(
    user, auth_client, api_client, stripe_stand_in
):
    first = assert_card_saved(auth_client, api_client, stripe_stand_in, card="pm_card_visa", amount=10)
    second = assert_card_saved(auth_client, api_client, stripe_stand_in, card="pm_card_mastercard", amount=11)
    auto_top_up_set(user=user, threshold=Decimal("5"), amount=Decimal("20"), monthly_cap=Decimal("100"))

    assert auth_client.delete(f"/v1/wallet/cards/{first.pk}").status_code == 204

    assert stripe_stand_in.payment_methods[first.stripe_payment_method_id]["customer"] is None
    assert [(card["id"], card["isPrimary"]) for card in auth_client.get("/v1/wallet/cards").json()] == [
        (str(second.pk), True)
    ]
    assert auth_client.get("/v1/wallet").json()["autoTopUpAmountUsd"] == 20

    assert auth_client.delete(f"/v1/wallet/cards/{second.pk}").status_code == 204

    assert auth_client.get("/v1/wallet/cards").json() == []
    wallet = auth_client.get("/v1/wallet").json()
    assert (wallet["autoTopUpThresholdUsd"], wallet["autoTopUpAmountUsd"]) == (None, None)
    assert (
        len(stripe_stand_in.requests_to("POST", f"/v1/payment_methods/{second.stripe_payment_method_id}/detach")) == 1
    )


def test_removing_a_card_stripe_already_forgot_still_removes_it(user, auth_client, api_client, stripe_stand_in):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    stripe_stand_in.payment_methods.pop(card.stripe_payment_method_id)
    assert auth_client.delete(f"/v1/wallet/cards/{card.pk}").status_code == 204
    assert not SavedCard.objects.exists()


def test_a_card_is_kept_when_stripe_cannot_be_reached_to_detach_it(user, auth_client, api_client, stripe_stand_in):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    stripe_stand_in.stop()
    assert_problem(auth_client.delete(f"/v1/wallet/cards/{card.pk}"), 502, "payment_provider_error")
    assert SavedCard.objects.filter(pk=card.pk, is_primary=True).exists()


def test_another_users_card_is_not_found(user, other_user, auth_client, jwt_client, api_client, stripe_stand_in):
    theirs = assert_card_saved(jwt_client(other_user), api_client, stripe_stand_in, amount=10)

    assert auth_client.get("/v1/wallet/cards").json() == []
    assert_problem(auth_client.delete(f"/v1/wallet/cards/{theirs.pk}"), 404, "not_found")
    assert_problem(auth_client.post(f"/v1/wallet/cards/{theirs.pk}/primary"), 404, "not_found")

    assert SavedCard.objects.filter(pk=theirs.pk, user=other_user, is_primary=True).exists()
    assert stripe_stand_in.requests_to("POST", f"/v1/payment_methods/{theirs.stripe_payment_method_id}/detach") == []


def test_the_cards_endpoints_need_a_credential(api_client, stripe_stand_in):
    assert_problem(api_client.get("/v1/wallet/cards"), 401, "not_authenticated")


# --- Auto top-up ---------------------------------------------------------------------------


def spend(user, amount: str, job: str) -> None:  # type: ignore[no-untyped-def]
    """Holds credit for a job, so that spendable credit falls."""
    hold_place(user=user, amount=Decimal(amount), cause_type="job", cause_id=job)


def test_auto_top_up_charges_the_primary_card_once_when_spendable_falls_to_the_threshold(
    user, auth_client, api_client, stripe_stand_in
):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    auto_top_up_set(user=user, threshold=Decimal("5"), amount=Decimal("20"))
    wallet_id = user.wallet.pk
    assert auto_top_up_start(wallet_id=wallet_id) is None  # spendable 10 is above 5

    spend(user, "6", "job-1")  # spendable 4
    top_up = auto_top_up_start(wallet_id=wallet_id)

    assert top_up is not None
    assert (top_up.status, top_up.origin, top_up.amount) == (TopUpStatus.CONFIRMED, TopUpOrigin.AUTO, Decimal("20"))
    (request,) = stripe_stand_in.requests_to("POST", "/v1/payment_intents")
    assert request.form["payment_method"] == card.stripe_payment_method_id
    assert request.form["off_session"] == "true"
    assert Wallet.objects.get(pk=wallet_id).spendable == Decimal("24")

    assert auto_top_up_start(wallet_id=wallet_id) is None  # above the threshold again
    assert len(stripe_stand_in.requests_to("POST", "/v1/payment_intents")) == 1
    assert mail.outbox == []
    assert_wallet_invariants(wallet_id)


def test_auto_top_up_does_nothing_while_one_is_pending(user, auth_client, api_client, stripe_stand_in):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    auto_top_up_set(user=user, threshold=Decimal("5"), amount=Decimal("20"))
    spend(user, "6", "job-1")
    pending_off_session_top_up(user, card, "pi_test_in_flight")

    assert auto_top_up_start(wallet_id=user.wallet.pk) is None
    assert stripe_stand_in.requests_to("POST", "/v1/payment_intents") == []


def test_auto_top_up_never_passes_the_monthly_cap(user, auth_client, api_client, stripe_stand_in):
    assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    auto_top_up_set(user=user, threshold=Decimal("5"), amount=Decimal("20"), monthly_cap=Decimal("30"))
    wallet_id = user.wallet.pk
    spend(user, "6", "job-1")
    assert auto_top_up_start(wallet_id=wallet_id) is not None  # 20 of 30 this month

    spend(user, "20", "job-2")  # spendable 4 again
    assert auto_top_up_start(wallet_id=wallet_id) is None  # 20 + 20 would pass 30

    assert len(stripe_stand_in.requests_to("POST", "/v1/payment_intents")) == 1
    assert Wallet.objects.get(pk=wallet_id).spendable == Decimal("4")


def test_a_declined_auto_top_up_is_recorded_emailed_and_not_retried_within_a_day(
    user, auth_client, api_client, stripe_stand_in
):
    assert_card_saved(auth_client, api_client, stripe_stand_in, card="pm_card_chargeCustomerFail", amount=10)
    auto_top_up_set(user=user, threshold=Decimal("5"), amount=Decimal("20"))
    wallet_id = user.wallet.pk
    spend(user, "6", "job-1")

    top_up = auto_top_up_start(wallet_id=wallet_id)

    assert top_up is not None
    assert_top_up_failed(top_up.reference, "Your card was declined.")
    assert Wallet.objects.get(pk=wallet_id).balance == Decimal("10")
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == [user.email]
    assert "Your card was declined." in mail.outbox[0].body

    assert auto_top_up_start(wallet_id=wallet_id) is None
    TopUp.objects.filter(pk=top_up.pk).update(created_at=timezone.now() - timedelta(hours=23, minutes=59))
    assert auto_top_up_start(wallet_id=wallet_id) is None
    assert len(stripe_stand_in.requests_to("POST", "/v1/payment_intents")) == 1

    TopUp.objects.filter(pk=top_up.pk).update(created_at=timezone.now() - timedelta(hours=24, minutes=1))
    retried = auto_top_up_start(wallet_id=wallet_id)
    assert retried is not None
    assert retried.status == TopUpStatus.FAILED
    assert len(stripe_stand_in.requests_to("POST", "/v1/payment_intents")) == 2


def test_an_auto_top_up_the_bank_wants_confirmed_fails_and_tells_the_owner(
    user, auth_client, api_client, stripe_stand_in
):
    assert_card_saved(auth_client, api_client, stripe_stand_in, card="pm_card_authenticationRequired", amount=10)
    auto_top_up_set(user=user, threshold=Decimal("5"), amount=Decimal("20"))
    spend(user, "6", "job-1")

    top_up = auto_top_up_start(wallet_id=user.wallet.pk)

    assert top_up is not None
    assert_top_up_failed(top_up.reference, AUTHENTICATION_MESSAGE)
    assert AUTHENTICATION_MESSAGE in mail.outbox[0].body


def test_an_auto_top_up_while_stripe_is_unreachable_is_recorded_and_tells_the_owner(
    user, auth_client, api_client, stripe_stand_in
):
    assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    auto_top_up_set(user=user, threshold=Decimal("5"), amount=Decimal("20"))
    spend(user, "6", "job-1")
    stripe_stand_in.stop()

    top_up = auto_top_up_start(wallet_id=user.wallet.pk)

    assert top_up is not None
    assert top_up.status == TopUpStatus.FAILED
    assert Wallet.objects.get(user=user).balance == Decimal("10")
    assert len(mail.outbox) == 1
    assert "automatic top-up failed" in mail.outbox[0].subject


def test_an_auto_top_up_amount_must_be_whole_cents(user, auth_client, api_client, stripe_stand_in):
    assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    response = auth_client.put("/v1/wallet/auto-top-up", {"threshold": 5, "amount": 5.555}, format="json")
    assert_problem(response, 400, "validation_error")
    assert "amount" in response.json()["errors"]


# --- A deleted account's Stripe customer ----------------------------------------------------


def account_deleted(client) -> None:  # type: ignore[no-untyped-def]
    response = client.delete("/v1/me", {"password": DEFAULT_PASSWORD}, format="json")
    assert response.status_code == 204, response.content


def test_deleting_the_account_deletes_its_stripe_customer_and_the_cards_saved_there(
    user, auth_client, api_client, stripe_stand_in, eager_celery, django_capture_on_commit_callbacks
):
    card = assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    customer = WalletSettings.objects.get(wallet__user=user).stripe_customer_id

    with django_capture_on_commit_callbacks(execute=True):
        account_deleted(auth_client)

    assert stripe_stand_in.requests_to("DELETE", f"/v1/customers/{customer}")
    assert customer not in stripe_stand_in.customers
    assert stripe_stand_in.payment_methods[card.stripe_payment_method_id]["customer"] is None
    assert not StripeCustomerErasure.objects.exists()
    assert not SavedCard.objects.exists()
    assert WalletSettings.objects.get(wallet__user=user).stripe_customer_id == ""


def test_a_customer_stripe_cannot_take_at_once_is_deleted_by_a_later_run(
    user, auth_client, api_client, stripe_stand_in, settings
):
    assert_card_saved(auth_client, api_client, stripe_stand_in, amount=10)
    customer = WalletSettings.objects.get(wallet__user=user).stripe_customer_id
    account_deleted(auth_client)  # its task queued after the commit (not run here): as if the worker was down
    stripe_stand_in.stop()

    assert stripe_gateway.stripe_customers_erase() == 0
    waiting = StripeCustomerErasure.objects.get(customer_id=customer)
    assert (waiting.attempts, waiting.user_id) == (1, user.pk)
    assert "APIConnectionError" in waiting.last_error

    stripe_stand_in.start()
    settings.STRIPE_API_BASE = stripe_stand_in.base_url
    assert stripe_gateway.stripe_customers_erase() == 1
    assert customer not in stripe_stand_in.customers
    assert not StripeCustomerErasure.objects.exists()
    assert stripe_gateway.stripe_customers_erase() == 0  # nothing left: no call


def test_a_customer_stripe_no_longer_knows_is_done(user, stripe_stand_in):
    StripeCustomerErasure.objects.create(customer_id="cus_forgotten", user=user)

    assert stripe_gateway.stripe_customers_erase() == 1
    assert stripe_stand_in.requests_to("DELETE", "/v1/customers/cus_forgotten")
    assert not StripeCustomerErasure.objects.exists()


def test_customers_to_delete_wait_while_stripe_is_not_configured(user, settings):
    settings.STRIPE_SECRET_KEY = ""
    StripeCustomerErasure.objects.create(customer_id="cus_waiting", user=user)

    assert stripe_gateway.stripe_customers_erase() == 0
    assert StripeCustomerErasure.objects.get().attempts == 0


def test_the_customers_stripe_could_not_take_are_tried_again_on_a_schedule(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["stripe-customers-erase"]

    assert entry["task"] in celery_app.tasks
    assert entry["schedule"] == settings.STRIPE_ERASURE_SWEEP_SECONDS
