"""Starting a top-up: the client's request taken to the method's provider (a manual credit
in development, a Stripe checkout or saved-card charge, a BTCPay invoice), and a request
repeated with the same Idempotency-Key resumed where a crash left it. Above the providers
(stripe_gateway, btcpay), which confirm or resolve the top-up rows (topups) themselves."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.conf import settings

from accounts.models import User
from core.errors import IdempotencyKeyReused, ValidationFailed
from wallet.errors import ManualTopUpDisabled
from wallet.models import TopUp, TopUpMethod, TopUpStatus
from wallet.services import btcpay, stripe_gateway
from wallet.services.topups import saved_card_for, top_up_amount_clean, top_up_confirm, top_up_open, whole_cents


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
            raise ManualTopUpDisabled()
        top_up = top_up_open(user=user, amount=amount, method=method, client_key=client_key)
        return top_up_confirm(top_up_id=top_up.pk, memo="manual top-up (development deployment)")
    if method == TopUpMethod.CARD:
        stripe_gateway.configured_or_refuse()
        card = saved_card_for(user=user, saved_card_id=saved_card_id) if saved_card_id else None
        whole_cents(amount)
        top_up = top_up_open(user=user, amount=amount, method=method, saved_card=card, client_key=client_key)
        if card is None:
            return stripe_gateway.checkout_open(top_up=top_up)
        return stripe_gateway.saved_card_charge(top_up=top_up, card=card)
    if method == TopUpMethod.CRYPTO:
        btcpay.configured_or_refuse()
        coin = _coin_clean(coin)
        whole_cents(amount)
        top_up = top_up_open(user=user, amount=amount, method=method, client_key=client_key)
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
        raise IdempotencyKeyReused()
    if top_up.status != TopUpStatus.PENDING:
        return top_up
    if method == TopUpMethod.MANUAL:
        return top_up_confirm(top_up_id=top_up.pk, memo="manual top-up (development deployment)")
    if top_up.checkout_url:  # a checkout or an invoice already handed out: the client finishes it
        return top_up
    if method == TopUpMethod.CARD:
        stripe_gateway.configured_or_refuse()
        if top_up.saved_card is not None:
            return stripe_gateway.saved_card_charge(top_up=top_up, card=top_up.saved_card)
        if saved_card_id is not None:  # the card was removed since: the provider's webhook settles it
            return top_up
        return stripe_gateway.checkout_open(top_up=top_up)
    btcpay.configured_or_refuse()
    return btcpay.invoice_open(top_up=top_up, coin=_coin_clean(coin))
