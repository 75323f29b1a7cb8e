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
from core.errors import ValidationFailed
from core.events import publish
from core.money import is_whole_cents
from wallet.events import TopUpConfirmed
from wallet.models import CauseType, EntryKind, SavedCard, TopUp, TopUpOrigin, TopUpStatus
from wallet.services.ledger import money_quantize, wallet_credit

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


def whole_cents(amount: Decimal, *, field: str = "amount") -> None:
    """Card and crypto processors bill whole cents: an amount they would round is refused,
    so what is credited is exactly what was paid."""
    if not is_whole_cents(amount):
        raise ValidationFailed({field: ["A card or crypto top-up is a whole number of cents."]})


def saved_card_for(*, user: User, saved_card_id: uuid.UUID) -> SavedCard:
    card = SavedCard.objects.filter(user=user, pk=saved_card_id).first()
    if card is None:
        raise ValidationFailed({"savedCardId": ["No saved card of yours has this id."]})
    return card


def top_up_open(
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
