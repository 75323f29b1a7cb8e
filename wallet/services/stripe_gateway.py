"""Card top-ups through Stripe: the Checkout page that saves a new card, off-session
charges of a saved card (a top-up with savedCardId, and auto top-up), the signed webhook
that confirms them, and the owner's saved cards.

Money moves only on Stripe's word, and is credited only through `topups.top_up_confirm`
(exactly once per top-up). Every amount credited is our own row's `amount`: an event whose
amount or currency disagrees with the row is logged and credits nothing. A call to Stripe
that fails for want of Stripe (network, 5xx, rate limit, a refused key) ends the top-up as
failed and answers 502 payment_provider_error; a declined card ends it as failed with a
message the owner can act on, and is not an error of the API.

Stripe is reached with a `StripeClient` built from the settings on each use (STRIPE_SECRET_KEY,
STRIPE_API_BASE, PAYMENT_HTTP_TIMEOUT_SECONDS), never through the library's global state.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import stripe
from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from accounts.models import User
from core.errors import NotFound, ValidationFailed
from core.money import is_whole_cents
from wallet.errors import PaymentMethodUnavailable, PaymentProviderError, StripeSignatureInvalid
from wallet.models import SavedCard, StripeCustomerErasure, TopUp, TopUpMethod, TopUpStatus, WalletSettings
from wallet.services import topups
from wallet.services.ledger import wallet_get_or_create

logger = logging.getLogger(__name__)

CURRENCY = "usd"
# Stripe accepts a Checkout expiry between 30 minutes and 24 hours ahead.
CHECKOUT_LIFETIME = timedelta(hours=1)
# Where our reference travels on Checkout Sessions and PaymentIntents.
METADATA_KEY = "top_up_reference"
# Each request carries an Idempotency-Key, so the library's retries never repeat an effect.
NETWORK_RETRIES = 2

AUTHENTICATION_MESSAGE = "Your bank asks you to confirm this payment: top up once with a checkout instead."
DECLINED_MESSAGE = "Your card was declined."
CARD_GONE_MESSAGE = "This saved card is no longer usable: remove it and add your card again with a checkout."
UNREACHABLE_MESSAGE = "The card payment provider could not be reached; nothing was charged. Try again later."
CHARGE_UNREACHABLE_MESSAGE = (
    "The card payment provider could not be reached. Try again later; should the charge have gone through after "
    "all, the credit is added by itself."
)


# --- Configuration and the client ---------------------------------------------------------


def configured_or_refuse() -> None:
    """Refuses card top-ups (403 payment_method_unavailable) while no Stripe key is set."""
    if not settings.STRIPE_SECRET_KEY:
        raise PaymentMethodUnavailable()


def _client() -> stripe.StripeClient:
    return _client_for(
        api_key=settings.STRIPE_SECRET_KEY,
        api_base=settings.STRIPE_API_BASE.rstrip("/"),
        timeout=settings.PAYMENT_HTTP_TIMEOUT_SECONDS,
    )


@functools.lru_cache(maxsize=4)
def _client_for(*, api_key: str, api_base: str, timeout: float) -> stripe.StripeClient:
    """One client per configuration, shared by every thread (its HTTP sessions are per
    thread), so connections to Stripe are reused."""
    return stripe.StripeClient(
        api_key,
        base_addresses={"api": api_base} if api_base else None,
        http_client=stripe.RequestsClient(timeout=timeout),
        max_network_retries=NETWORK_RETRIES,
    )


def _cents(amount: Decimal) -> int | None:
    """USD as Stripe's integer cents; None when the amount is not a whole number of cents."""
    if not is_whole_cents(amount):
        return None
    return int(amount * 100)


def _provider_failure(*, top_up: TopUp, error: stripe.StripeError, message: str) -> PaymentProviderError:
    """Ends the top-up as failed (nothing credited) and returns the 502 to raise."""
    logger.warning("Stripe call for top-up %s failed: %r", top_up.reference, error)
    topups.top_up_resolve(top_up_id=top_up.pk, status=TopUpStatus.FAILED, message=message)
    return PaymentProviderError(message)


def _owner_lock(*, user: User) -> WalletSettings:
    """The owner's preferences row, locked: it serialises changes to the owner's Stripe
    customer and saved cards (call inside a transaction)."""
    wallet = wallet_get_or_create(user=user)
    WalletSettings.objects.get_or_create(wallet=wallet)
    return WalletSettings.objects.select_for_update().get(wallet=wallet)


def _customer_id_for(*, client: stripe.StripeClient, user: User, stale: str = "") -> str:
    """The owner's Stripe Customer, created on first use and kept on the preferences row.
    `stale` names a stored id Stripe no longer knows (say, one from test mode), replaced."""
    # The row stays locked across the call so that two first checkouts make one customer.
    with transaction.atomic():
        prefs = _owner_lock(user=user)
        if prefs.stripe_customer_id and prefs.stripe_customer_id != stale:
            return prefs.stripe_customer_id
        customer = client.v1.customers.create(params={"email": user.email, "metadata": {"user_id": str(user.pk)}})
        prefs.stripe_customer_id = customer.id
        prefs.save(update_fields=["stripe_customer_id"])
        return customer.id


def _stored_customer_id(*, user: User) -> str:
    prefs = WalletSettings.objects.filter(wallet__user=user).first()
    return prefs.stripe_customer_id if prefs else ""


def _error_body(error: stripe.StripeError) -> dict[str, Any]:
    body = error.json_body
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict):
            return inner
    return {}


def _decline_message(*, code: str | None, decline_code: str | None, stripe_message: str | None) -> str:
    """What the owner reads on a failed card top-up (Stripe's card messages are meant to be
    shown to the cardholder; the common cases get ours)."""
    if "authentication_required" in (code, decline_code):
        return AUTHENTICATION_MESSAGE
    if decline_code == "insufficient_funds":
        return "Your card has insufficient funds."
    if code == "expired_card":
        return "Your card has expired: remove it and add a current one with a checkout."
    return stripe_message or DECLINED_MESSAGE


# --- Checkout: a new card --------------------------------------------------------------------


def checkout_open(*, top_up: TopUp) -> TopUp:
    """Opens a Stripe Checkout page for the pending card top-up, saving the card for later
    off-session use, and returns the top-up with its checkoutUrl and expiry. Stripe down:
    the top-up fails and 502 payment_provider_error is raised."""
    client = _client()
    amount_cents = _cents(top_up.amount)
    if amount_cents is None:
        _failed(top_up, "A card top-up is a whole number of cents.")
        raise ValidationFailed({"amount": ["A card top-up is a whole number of cents."]})
    try:
        customer_id = _customer_id_for(client=client, user=top_up.user)
        try:
            session = _session_create(client=client, top_up=top_up, customer_id=customer_id, cents=amount_cents)
        except stripe.InvalidRequestError as error:
            if error.code != "resource_missing" or _error_body(error).get("param") != "customer":
                raise
            logger.warning("Stripe no longer knows customer %s; creating a new one", customer_id)
            customer_id = _customer_id_for(client=client, user=top_up.user, stale=customer_id)
            session = _session_create(client=client, top_up=top_up, customer_id=customer_id, cents=amount_cents)
    except stripe.StripeError as error:
        raise _provider_failure(top_up=top_up, error=error, message=UNREACHABLE_MESSAGE) from error
    expires_at = datetime.fromtimestamp(session.expires_at, tz=UTC)
    TopUp.objects.filter(pk=top_up.pk, status=TopUpStatus.PENDING).update(
        provider_reference=session.id,
        checkout_url=session.url,
        expires_at=expires_at,
        message="Finish the payment on the checkout page.",
        updated_at=timezone.now(),
    )
    top_up.refresh_from_db()
    return top_up


def _session_create(
    *, client: stripe.StripeClient, top_up: TopUp, customer_id: str, cents: int
) -> stripe.checkout.Session:
    reference = top_up.reference
    page = f"{settings.APP_URL}/wallet/top-up/{reference}"
    return client.v1.checkout.sessions.create(
        params={
            "mode": "payment",
            "customer": customer_id,
            "client_reference_id": reference,
            "metadata": {METADATA_KEY: reference, "user_id": str(top_up.user_id)},
            "allowed_payment_method_types": ["card"],
            "line_items": [
                {
                    "quantity": 1,
                    "price_data": {
                        "currency": CURRENCY,
                        "unit_amount": cents,
                        "product_data": {"name": "Prepaid translation credit"},
                    },
                }
            ],
            "payment_intent_data": {
                "setup_future_usage": "off_session",
                "description": f"Top-up {reference}",
                "metadata": {METADATA_KEY: reference},
            },
            "success_url": f"{page}?checkout=success",
            "cancel_url": f"{page}?checkout=cancelled",
            "expires_at": int((timezone.now() + CHECKOUT_LIFETIME).timestamp()),
        },
        options={"idempotency_key": f"checkout-{reference}-{customer_id}"},
    )


# --- Off-session charges of a saved card -----------------------------------------------------


def saved_card_charge(*, top_up: TopUp, card: SavedCard) -> TopUp:
    """Charges the saved card off-session for the pending top-up and returns it confirmed,
    failed (declined, or the bank wants the cardholder present) or, rarely, still pending
    (processing; the webhook settles it). The Stripe idempotency key is derived from the
    reference, so charging the same top-up again never charges twice. Stripe down: the
    top-up fails and 502 payment_provider_error is raised."""
    amount_cents = _cents(top_up.amount)
    if amount_cents is None:
        return _failed(top_up, "A card top-up is a whole number of cents: change the auto top-up amount.")
    customer_id = _stored_customer_id(user=top_up.user)
    if not customer_id:
        return _failed(top_up, CARD_GONE_MESSAGE)
    try:
        intent = _client().v1.payment_intents.create(
            params={
                "amount": amount_cents,
                "currency": CURRENCY,
                "customer": customer_id,
                "payment_method": card.stripe_payment_method_id,
                "allowed_payment_method_types": ["card"],
                "confirm": True,
                "off_session": True,
                "description": f"Top-up {top_up.reference}",
                "metadata": {METADATA_KEY: top_up.reference, "origin": top_up.origin},
            },
            options={"idempotency_key": f"top-up-{top_up.reference}"},
        )
    except stripe.CardError as error:
        body = _error_body(error)
        _provider_reference_keep(top_up=top_up, intent_id=(body.get("payment_intent") or {}).get("id"))
        message = _decline_message(
            code=error.code, decline_code=body.get("decline_code"), stripe_message=error.user_message
        )
        logger.info("card top-up %s declined: %s", top_up.reference, body.get("decline_code") or error.code)
        return _failed(top_up, message)
    except stripe.InvalidRequestError as error:
        if error.code != "resource_missing":
            raise _provider_failure(top_up=top_up, error=error, message=CHARGE_UNREACHABLE_MESSAGE) from error
        logger.warning("card top-up %s: Stripe no longer knows the card or customer: %r", top_up.reference, error)
        return _failed(top_up, CARD_GONE_MESSAGE)
    except stripe.StripeError as error:
        raise _provider_failure(top_up=top_up, error=error, message=CHARGE_UNREACHABLE_MESSAGE) from error
    return _intent_settle(top_up=top_up, intent=intent.to_dict(), card=card)


def _failed(top_up: TopUp, message: str) -> TopUp:
    return topups.top_up_resolve(top_up_id=top_up.pk, status=TopUpStatus.FAILED, message=message)


def _provider_reference_keep(*, top_up: TopUp, intent_id: str | None) -> None:
    if intent_id:
        TopUp.objects.filter(pk=top_up.pk, provider_reference="").update(provider_reference=intent_id)


def _intent_settle(*, top_up: TopUp, intent: dict[str, Any], card: SavedCard) -> TopUp:
    _provider_reference_keep(top_up=top_up, intent_id=intent.get("id"))
    status = intent.get("status")
    if status == "succeeded":
        if not _amount_matches(
            top_up=top_up, amount_minor=intent.get("amount_received"), currency=intent.get("currency")
        ):
            return TopUp.objects.get(pk=top_up.pk)
        return topups.top_up_confirm(
            top_up_id=top_up.pk, memo=f"card top-up {top_up.reference} ({card.brand} ending {card.last4})"
        )
    if status == "processing":
        TopUp.objects.filter(pk=top_up.pk, status=TopUpStatus.PENDING).update(
            message="Your bank is processing the payment; the credit is added once it clears.",
            updated_at=timezone.now(),
        )
        return TopUp.objects.get(pk=top_up.pk)
    if status in ("requires_action", "requires_confirmation"):
        return _failed(top_up, AUTHENTICATION_MESSAGE)
    error = intent.get("last_payment_error") or {}
    return _failed(
        top_up,
        _decline_message(
            code=error.get("code"), decline_code=error.get("decline_code"), stripe_message=error.get("message")
        ),
    )


def _amount_matches(*, top_up: TopUp, amount_minor: Any, currency: Any) -> bool:
    """Whether Stripe's figure is the row's amount in USD; a mismatch is logged and credits nothing."""
    if amount_minor == _cents(top_up.amount) and str(currency or "").lower() == CURRENCY:
        return True
    logger.error(
        "Stripe reports %s %s for top-up %s of %s USD: not credited",
        amount_minor,
        currency,
        top_up.reference,
        top_up.amount,
    )
    return False


# --- The webhook ------------------------------------------------------------------------------


def webhook_handle(*, payload: bytes, signature: str | None) -> None:
    """Verifies a Stripe event (400 stripe_signature_invalid otherwise, changing nothing;
    403 payment_method_unavailable while no signing secret is set) and applies it. Events
    of other types, and events about top-ups we do not know, are ignored; a replayed event
    changes nothing."""
    secret = settings.STRIPE_WEBHOOK_SECRET
    if not secret:
        raise PaymentMethodUnavailable("No Stripe webhook signing secret is configured.")
    if not signature:
        raise StripeSignatureInvalid("The Stripe-Signature header is missing.")
    try:
        event = stripe.Webhook.construct_event(payload, signature, secret)
    except (stripe.SignatureVerificationError, ValueError) as error:
        logger.warning("Stripe webhook refused: %s", error)
        raise StripeSignatureInvalid() from error
    data = event.to_dict()
    event_type = data.get("type")
    handler = _EVENT_HANDLERS.get(str(event_type))
    if handler is None:
        logger.info("Stripe event %s (%s) ignored", data.get("id"), event_type)
        return
    handler(data["data"]["object"])


def _top_up_for_session(session: dict[str, Any]) -> TopUp | None:
    found = TopUp.objects.filter(method=TopUpMethod.CARD, provider_reference=session.get("id")).first()
    if found is not None:
        return found
    reference = (session.get("metadata") or {}).get(METADATA_KEY) or session.get("client_reference_id")
    found = TopUp.objects.filter(method=TopUpMethod.CARD, reference=reference).first() if reference else None
    if found is None:
        logger.info("Stripe checkout session %s is not one of our top-ups; ignored", session.get("id"))
        return None
    if found.provider_reference and found.provider_reference != session.get("id"):
        logger.error("Stripe session %s names top-up %s of another session; ignored", session.get("id"), reference)
        return None
    return found


def _top_up_for_intent(intent: dict[str, Any]) -> TopUp | None:
    found = TopUp.objects.filter(method=TopUpMethod.CARD, provider_reference=intent.get("id")).first()
    if found is not None:
        return found
    reference = (intent.get("metadata") or {}).get(METADATA_KEY)
    found = TopUp.objects.filter(method=TopUpMethod.CARD, reference=reference).first() if reference else None
    if found is None:
        logger.info("Stripe payment intent %s is not one of our top-ups; ignored", intent.get("id"))
        return None
    # A checkout top-up keeps its session's id; an off-session one, its intent's.
    if found.provider_reference.startswith("pi_") and found.provider_reference != intent.get("id"):
        logger.error("Stripe intent %s names top-up %s of another intent; ignored", intent.get("id"), reference)
        return None
    return found


def _checkout_paid(session: dict[str, Any]) -> None:
    """A completed checkout: credit the top-up (once) and keep the card it saved."""
    if session.get("payment_status") != "paid":
        return  # a delayed payment method: async_payment_succeeded or _failed follows
    top_up = _top_up_for_session(session)
    if top_up is None:
        return
    if not _amount_matches(top_up=top_up, amount_minor=session.get("amount_total"), currency=session.get("currency")):
        return
    topups.top_up_confirm(top_up_id=top_up.pk, memo=f"card top-up {top_up.reference} (Stripe Checkout)")
    intent = session.get("payment_intent")
    intent_id = intent.get("id") if isinstance(intent, dict) else intent
    if intent_id:
        _card_keep_from_intent(user=top_up.user, intent_id=str(intent_id))


def _checkout_expired(session: dict[str, Any]) -> None:
    top_up = _top_up_for_session(session)
    if top_up is not None:
        topups.top_up_resolve(
            top_up_id=top_up.pk,
            status=TopUpStatus.EXPIRED,
            message="The checkout expired before it was paid; nothing was charged.",
        )


def _checkout_payment_failed(session: dict[str, Any]) -> None:
    top_up = _top_up_for_session(session)
    if top_up is None:
        return
    message = "Your payment did not go through; nothing was charged."
    intent_id = session.get("payment_intent")
    if isinstance(intent_id, str) and intent_id:
        try:
            intent = _client().v1.payment_intents.retrieve(intent_id).to_dict()
        except stripe.StripeError as error:
            logger.warning("Stripe intent %s could not be read for its error: %r", intent_id, error)
        else:
            message = (intent.get("last_payment_error") or {}).get("message") or message
    topups.top_up_resolve(top_up_id=top_up.pk, status=TopUpStatus.FAILED, message=message)


def _intent_succeeded(intent: dict[str, Any]) -> None:
    """Money arrived: credit the top-up unless it already was (even one we had given up on)."""
    top_up = _top_up_for_intent(intent)
    if top_up is None or top_up.status == TopUpStatus.CONFIRMED:
        return
    if not _amount_matches(top_up=top_up, amount_minor=intent.get("amount_received"), currency=intent.get("currency")):
        return
    topups.top_up_confirm(top_up_id=top_up.pk, memo=f"card top-up {top_up.reference}")


def _intent_failed(intent: dict[str, Any]) -> None:
    """An off-session charge failed. A checkout's failed attempt is left alone: the customer
    may try another card on the same page, and the session's completion or expiry decides."""
    top_up = _top_up_for_intent(intent)
    if top_up is None or top_up.checkout_url:
        return
    error = intent.get("last_payment_error") or {}
    message = _decline_message(
        code=error.get("code"), decline_code=error.get("decline_code"), stripe_message=error.get("message")
    )
    topups.top_up_resolve(top_up_id=top_up.pk, status=TopUpStatus.FAILED, message=message)


_EVENT_HANDLERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "checkout.session.completed": _checkout_paid,
    "checkout.session.async_payment_succeeded": _checkout_paid,
    "checkout.session.async_payment_failed": _checkout_payment_failed,
    "checkout.session.expired": _checkout_expired,
    "payment_intent.succeeded": _intent_succeeded,
    "payment_intent.payment_failed": _intent_failed,
}


# --- Saved cards ------------------------------------------------------------------------------


def _card_keep_from_intent(*, user: User, intent_id: str) -> SavedCard | None:
    """Saves the card a checkout paid with (the PaymentMethod Stripe attached to the
    customer). Stripe down: 502, so that Stripe delivers the event again."""
    try:
        intent = _client().v1.payment_intents.retrieve(intent_id, params={"expand": ["payment_method"]}).to_dict()
    except stripe.StripeError as error:
        logger.warning("Stripe intent %s could not be read to save its card: %r", intent_id, error)
        raise PaymentProviderError() from error
    method = intent.get("payment_method")
    if not isinstance(method, dict) or method.get("type") != "card" or not method.get("customer"):
        logger.info("Stripe intent %s paid without a saved card; none kept", intent_id)
        return None
    return _card_keep(user=user, payment_method=method)


def _card_keep(*, user: User, payment_method: dict[str, Any]) -> SavedCard:
    """Records a card PaymentMethod saved at Stripe for the user; the same PaymentMethod
    again returns the existing card. The owner's first card (while none is primary)
    becomes primary."""
    card = payment_method.get("card") or {}
    with transaction.atomic():
        _owner_lock(user=user)
        existing = SavedCard.objects.filter(stripe_payment_method_id=payment_method["id"]).first()
        if existing is not None:
            return existing
        return SavedCard.objects.create(
            user=user,
            stripe_payment_method_id=payment_method["id"],
            brand=str(card.get("brand") or "")[:32],
            last4=str(card.get("last4") or "")[:4],
            exp_month=card.get("exp_month"),
            exp_year=card.get("exp_year"),
            is_primary=not SavedCard.objects.filter(user=user, is_primary=True).exists(),
        )


def cards_for_owner(owner: User) -> QuerySet[SavedCard]:
    """The owner's saved cards, the primary first, then newest first."""
    return SavedCard.objects.filter(user=owner).order_by("-is_primary", "-created_at")


def _card_for_owner(*, owner: User, card_id: uuid.UUID) -> SavedCard:
    card = SavedCard.objects.filter(user=owner, pk=card_id).first()
    if card is None:
        raise NotFound("No saved card of yours has this id.")
    return card


def card_remove(*, owner: User, card_id: uuid.UUID) -> None:
    """Detaches the card at Stripe and forgets it. The newest remaining card becomes
    primary if the removed one was; with no card left, auto top-up is turned off. Stripe
    down: 502 and nothing changes."""
    card = _card_for_owner(owner=owner, card_id=card_id)
    configured_or_refuse()
    try:
        _client().v1.payment_methods.detach(card.stripe_payment_method_id)
    except stripe.InvalidRequestError as error:
        # Already detached, or unknown to Stripe: what the owner asked for is true there.
        logger.info("Stripe did not detach %s (%r); forgetting the card", card.stripe_payment_method_id, error)
    except stripe.StripeError as error:
        logger.warning("Stripe could not detach %s: %r", card.stripe_payment_method_id, error)
        raise PaymentProviderError() from error
    with transaction.atomic():
        prefs = _owner_lock(user=owner)
        SavedCard.objects.filter(user=owner, pk=card_id).delete()
        remaining = SavedCard.objects.filter(user=owner).order_by("-created_at")
        newest = remaining.first()
        if newest is None:
            prefs.auto_top_up_threshold = prefs.auto_top_up_amount = None
            prefs.save(update_fields=["auto_top_up_threshold", "auto_top_up_amount"])
        elif not remaining.filter(is_primary=True).exists():
            newest.is_primary = True
            newest.save(update_fields=["is_primary"])


def card_make_primary(*, owner: User, card_id: uuid.UUID) -> SavedCard:
    """Makes the card the one auto top-up charges (the others stop being primary)."""
    with transaction.atomic():
        _owner_lock(user=owner)
        card = _card_for_owner(owner=owner, card_id=card_id)
        if not card.is_primary:
            SavedCard.objects.filter(user=owner, is_primary=True).update(is_primary=False)
            card.is_primary = True
            card.save(update_fields=["is_primary"])
        return card


ERASURE_BATCH = 100  # customers of deleted accounts deleted at Stripe per run, oldest first


def stripe_customers_erase() -> int:
    """Deletes at Stripe the customers of deleted accounts (`StripeCustomerErasure`, written
    by the deletion), and with each the cards saved there; returns how many are done. A
    customer Stripe no longer knows is done too. A customer whose deletion failed stays for
    the next run, the attempt and the error on its row; Stripe unreachable ends the run.
    Without a Stripe key nothing is tried: they wait for one."""
    if not settings.STRIPE_SECRET_KEY:
        return 0
    done = 0
    for erasure in StripeCustomerErasure.objects.order_by("created_at")[:ERASURE_BATCH]:
        try:
            _client().v1.customers.delete(erasure.customer_id)
        except stripe.InvalidRequestError as error:
            if error.http_status != 404:
                _erasure_failed(erasure, error)
                continue
            logger.info("Stripe no longer knows customer %s: nothing left to delete", erasure.customer_id)
        except stripe.APIConnectionError as error:
            _erasure_failed(erasure, error)
            break
        except stripe.StripeError as error:
            _erasure_failed(erasure, error)
            continue
        StripeCustomerErasure.objects.filter(pk=erasure.pk).delete()
        done += 1
    return done


def _erasure_failed(erasure: StripeCustomerErasure, error: stripe.StripeError) -> None:
    logger.warning("Stripe could not delete customer %s of a deleted account: %r", erasure.customer_id, error)
    StripeCustomerErasure.objects.filter(pk=erasure.pk).update(
        attempts=F("attempts") + 1, last_error=repr(error)[:2000]
    )
