"""The owner's billing preferences: auto top-up, the low-balance alert, the monthly
spending ceiling. Each setter validates, saves and returns the fresh Wallet view."""

from __future__ import annotations

from decimal import Decimal

from django.db import transaction

from accounts.models import User
from core.errors import ValidationFailed
from core.events import publish
from wallet.events import BalanceFell, SpendingRoomGrew
from wallet.models import WalletSettings
from wallet.selectors.wallet import WalletView, wallet_view_for
from wallet.services.ledger import money_quantize, wallet_get_or_create
from wallet.services.topups import whole_cents


def _money_or_none(value: Decimal | None, *, field: str, allow_zero: bool = False) -> Decimal | None:
    return None if value is None else money_quantize(value=value, field=field, allow_zero=allow_zero)


def _settings_locked(*, user: User) -> WalletSettings:
    wallet = wallet_get_or_create(user=user)
    WalletSettings.objects.get_or_create(wallet=wallet)
    return WalletSettings.objects.select_for_update().get(wallet=wallet)


def auto_top_up_set(
    *, user: User, threshold: Decimal | None, amount: Decimal | None, monthly_cap: Decimal | None = None
) -> WalletView:
    """Enables auto top-up (threshold and amount both given) or disables it (both None);
    the monthly cap is independent (None: no cap). Enabling needs a saved card to charge.
    If spendable credit is already at or below the new threshold, a top-up starts now."""
    if (threshold is None) != (amount is None):
        raise ValidationFailed({"nonFieldErrors": ["Give threshold and amount both (enable) or both null (disable)."]})
    threshold = _money_or_none(threshold, field="threshold", allow_zero=True)
    amount = _money_or_none(amount, field="amount")
    if amount is not None:
        whole_cents(amount)
    monthly_cap = _money_or_none(monthly_cap, field="monthlyCap")
    if amount is not None and not user.saved_cards.exists():
        raise ValidationFailed({"amount": ["Auto top-up charges your primary saved card: save a card first."]})
    with transaction.atomic():
        prefs = _settings_locked(user=user)
        prefs.auto_top_up_threshold, prefs.auto_top_up_amount = threshold, amount
        prefs.auto_top_up_monthly_cap = monthly_cap
        prefs.save(update_fields=["auto_top_up_threshold", "auto_top_up_amount", "auto_top_up_monthly_cap"])
        publish(BalanceFell(wallet_id=prefs.wallet_id))
    return wallet_view_for(user=user)


def low_balance_alert_set(*, user: User, threshold: Decimal | None) -> WalletView:
    """Sets (or with None clears) the balance at or below which an email is sent, at most
    once per LOW_BALANCE_ALERT_REPEAT_HOURS."""
    threshold = _money_or_none(threshold, field="threshold", allow_zero=True)
    with transaction.atomic():
        prefs = _settings_locked(user=user)
        prefs.low_balance_threshold = threshold
        prefs.save(update_fields=["low_balance_threshold"])
        publish(BalanceFell(wallet_id=prefs.wallet_id))
    return wallet_view_for(user=user)


def spending_ceiling_set(*, user: User, ceiling: Decimal | None) -> WalletView:
    """Sets (or with None clears) the most batches may charge in a calendar month (UTC).
    Raising or removing it publishes `SpendingRoomGrew`, so books paused by the
    ceiling continue by themselves."""
    ceiling = _money_or_none(ceiling, field="ceiling")
    with transaction.atomic():
        prefs = _settings_locked(user=user)
        before = prefs.monthly_spending_ceiling
        prefs.monthly_spending_ceiling = ceiling
        prefs.save(update_fields=["monthly_spending_ceiling"])
        if before is not None and (ceiling is None or ceiling > before):
            user_id = user.pk
            publish(SpendingRoomGrew(user_id=user_id))
    return wallet_view_for(user=user)


def spending_month_begin() -> int:
    """A new calendar month: every owner with a spending ceiling has room again, so
    `SpendingRoomGrew` is published for each (run by beat on the 1st; harmless to run again).
    Returns how many owners were told."""
    owners = list(
        WalletSettings.objects.filter(monthly_spending_ceiling__isnull=False).values_list("wallet__user_id", flat=True)
    )
    for user_id in owners:
        publish(SpendingRoomGrew(user_id=user_id))
    return len(owners)
