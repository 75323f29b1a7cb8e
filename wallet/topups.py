"""Top-ups: one attempt to add credit, from the request to confirmed (or failed,
cancelled, expired).

A top-up row is committed as `pending` before any payment provider is called, so a crash
between our call and the provider's answer leaves a row the provider's webhook can still
confirm. Confirmation is exactly once: it locks the row, credits the ledger under the
cause (top_up, reference) — itself idempotent — and records the entry. Money the provider
says arrived is credited even if we had given up on the top-up (a crypto payment that
lands after the invoice expired): the provider's word about money wins.
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import User
from core.errors import NotFound, ServiceError, ValidationFailed
from core.events import publish
from core.money import is_whole_cents
from wallet.events import TopUpConfirmed
from wallet.models import CauseType, EntryKind, SavedCard, TopUp, TopUpMethod, TopUpOrigin, TopUpStatus
from wallet.services import money_quantize, wallet_credit

FINAL_FAILURES = (TopUpStatus.FAILED, TopUpStatus.CANCELLED, TopUpStatus.EXPIRED)


def reference_new() -> str:
    return f"tu_{uuid.uuid4().hex}"


def top_up_amount_clean(value: Decimal | int | str) -> Decimal:
    """The amount as money, within TOP_UP_MIN_USD..TOP_UP_MAX_USD (400 otherwise)."""
    amount = money_quantize(value=value)
    low, high = Decimal(settings.TOP_UP_MIN_USD), Decimal(settings.TOP_UP_MAX_USD)
    if not low <= amount <= high:
        raise ValidationFailed({"amount": [f"A top-up is between {low} and {high} USD."]})
    return amount


def top_up_request(
    *,
    user: User,
    amount: Decimal,
    method: str = TopUpMethod.MANUAL,
    coin: str | None = None,
    saved_card_id: uuid.UUID | None = None,
    client_key: str | None = None,
) -> TopUp:
    """Starts a top-up with the method's provider and returns it as it then stands:
    confirmed (manual, or a saved card charged at once), pending (a checkout to finish in
    the browser or a crypto invoice to pay) or failed (a declined card).

    `client_key` (the request's Idempotency-Key) names the top-up for its whole life: the
    row carries it from before any provider is called, so a request with it after a crash
    (our process died waiting for the provider, its answer lost) resumes that same top-up
    with the same key at the provider (`_top_up_resume`) instead of starting a second one;
    the same key for another amount, method or card is 422 idempotency_key_reused."""
    amount = top_up_amount_clean(amount)
    if client_key and (existing := TopUp.objects.filter(user=user, client_key=client_key).first()):
        return _top_up_resume(existing, amount=amount, method=method, saved_card_id=saved_card_id, coin=coin)
    if method == TopUpMethod.MANUAL:
        if not settings.DEVELOPMENT_DEPLOYMENT:
            raise ServiceError(code="manual_top_up_disabled")
        top_up = _top_up_open(user=user, amount=amount, method=method, client_key=client_key)
        return top_up_confirm(top_up_id=top_up.pk, memo="manual top-up (development deployment)")
    if method == TopUpMethod.CARD:
        from wallet import stripe_gateway

        stripe_gateway.configured_or_refuse()
        card = _saved_card_for(user=user, saved_card_id=saved_card_id) if saved_card_id else None
        whole_cents(amount)
        top_up = _top_up_open(user=user, amount=amount, method=method, saved_card=card, client_key=client_key)
        if card is None:
            return stripe_gateway.checkout_open(top_up=top_up)
        return stripe_gateway.saved_card_charge(top_up=top_up, card=card)
    if method == TopUpMethod.CRYPTO:
        from wallet import btcpay

        btcpay.configured_or_refuse()
        coin = _coin_clean(coin)
        whole_cents(amount)
        top_up = _top_up_open(user=user, amount=amount, method=method, client_key=client_key)
        return btcpay.invoice_open(top_up=top_up, coin=coin)
    raise ValidationFailed({"method": ["One of manual, card, crypto."]})


def _coin_clean(coin: str | None) -> str:
    coin = (coin or settings.CRYPTO_COINS[0]).upper()
    if coin not in settings.CRYPTO_COINS:
        raise ValidationFailed({"coin": [f"Accepted coins: {', '.join(settings.CRYPTO_COINS)}."]})
    return coin


def _top_up_resume(
    top_up: TopUp, *, amount: Decimal, method: str, saved_card_id: uuid.UUID | None, coin: str | None
) -> TopUp:
    """The top-up a client's key already names, carried on where a crash left it: a pending
    one is taken to its provider again with the same key there (Stripe answers a repeated
    charge with the first one's outcome, so the card is charged once), a resolved one is
    returned as it is."""
    if (top_up.amount, top_up.method) != (amount, method) or (
        method == TopUpMethod.CARD and top_up.saved_card_id != saved_card_id and top_up.saved_card_id is not None
    ):
        raise ServiceError(code="idempotency_key_reused")
    if top_up.status != TopUpStatus.PENDING:
        return top_up
    if method == TopUpMethod.MANUAL:
        return top_up_confirm(top_up_id=top_up.pk, memo="manual top-up (development deployment)")
    if top_up.checkout_url:  # a checkout or an invoice already handed out: the client finishes it
        return top_up
    if method == TopUpMethod.CARD:
        from wallet import stripe_gateway

        stripe_gateway.configured_or_refuse()
        if top_up.saved_card is not None:
            return stripe_gateway.saved_card_charge(top_up=top_up, card=top_up.saved_card)
        if saved_card_id is not None:  # the card was removed since: the provider's webhook settles it
            return top_up
        return stripe_gateway.checkout_open(top_up=top_up)
    from wallet import btcpay

    btcpay.configured_or_refuse()
    return btcpay.invoice_open(top_up=top_up, coin=_coin_clean(coin))


def whole_cents(amount: Decimal, *, field: str = "amount") -> None:
    """Card and crypto processors bill whole cents: an amount they would round is refused,
    so what is credited is exactly what was paid."""
    if not is_whole_cents(amount):
        raise ValidationFailed({field: ["A card or crypto top-up is a whole number of cents."]})


def _saved_card_for(*, user: User, saved_card_id: uuid.UUID) -> SavedCard:
    card = SavedCard.objects.filter(user=user, pk=saved_card_id).first()
    if card is None:
        raise ValidationFailed({"savedCardId": ["No saved card of yours has this id."]})
    return card


def _top_up_open(
    *,
    user: User,
    amount: Decimal,
    method: str,
    origin: str = TopUpOrigin.API,
    saved_card: SavedCard | None = None,
    client_key: str | None = None,
) -> TopUp:
    """The pending row, committed before any provider is called."""
    return TopUp.objects.create(
        reference=reference_new(),
        user=user,
        method=method,
        origin=origin,
        amount=amount,
        saved_card=saved_card,
        client_key=client_key or "",
    )


def top_up_confirm(*, top_up_id: uuid.UUID, memo: str = "") -> TopUp:
    """Credits the top-up's amount once and marks it confirmed. A second call (a replayed
    webhook) returns it unchanged."""
    with transaction.atomic():
        top_up = TopUp.objects.select_for_update().get(pk=top_up_id)
        if top_up.status == TopUpStatus.CONFIRMED:
            return top_up
        entry = wallet_credit(
            user=top_up.user,
            amount=top_up.amount,
            kind=EntryKind.TOP_UP_CREDIT,
            cause_type=CauseType.TOP_UP,
            cause_id=top_up.reference,
            memo=memo or f"{top_up.get_method_display()} top-up {top_up.reference}",
        )
        now = timezone.now()
        top_up.status = TopUpStatus.CONFIRMED
        top_up.credited_amount = top_up.amount
        top_up.ledger_entry = entry
        top_up.message = f"{top_up.amount.normalize():f} USD credited."
        top_up.resolved_at = top_up.updated_at = now
        top_up.save(update_fields=["status", "credited_amount", "ledger_entry", "message", "resolved_at", "updated_at"])
        publish(TopUpConfirmed(top_up_id=top_up.pk, owner_id=top_up.user_id))
        return top_up


def top_up_resolve(*, top_up_id: uuid.UUID, status: str, message: str) -> TopUp:
    """Ends a pending top-up without credit (failed, cancelled, expired). A top-up that is
    no longer pending is returned unchanged: a late "expired" never undoes a confirmation."""
    if status not in FINAL_FAILURES:
        raise ValueError(f"not a final failure status: {status}")
    with transaction.atomic():
        top_up = TopUp.objects.select_for_update().get(pk=top_up_id)
        if top_up.status != TopUpStatus.PENDING:
            return top_up
        top_up.status = status
        top_up.message = message[:500]
        top_up.resolved_at = top_up.updated_at = timezone.now()
        top_up.save(update_fields=["status", "message", "resolved_at", "updated_at"])
        return top_up


def top_up_for_owner(*, owner: User, reference: str) -> TopUp:
    """The caller's top-up by reference; anyone else's is a 404, like a missing one."""
    top_up = TopUp.objects.filter(user=owner, reference=reference).first()
    if top_up is None:
        raise NotFound("No top-up of yours has this reference.")
    return top_up
