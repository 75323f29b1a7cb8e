"""Reads of the wallet: the owner's view, this month's spending and the ledger."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import User
from core.money import exact_sum
from wallet.models import ZERO, EntryKind, LedgerEntry, TopUp, TopUpOrigin, TopUpStatus, Wallet, WalletSettings


@dataclass(frozen=True)
class WalletView:
    balance: Decimal
    reserved: Decimal
    spendable: Decimal
    unlimited: bool
    low_balance: bool = False
    auto_top_up_threshold: Decimal | None = None
    auto_top_up_amount: Decimal | None = None
    auto_top_up_monthly_cap: Decimal | None = None
    low_balance_alert_threshold: Decimal | None = None
    monthly_spending_ceiling: Decimal | None = None
    spent_this_month: Decimal = ZERO

    def as_wire(self) -> dict[str, object]:
        """The fields of the contract's Wallet view (WalletViewSerializer)."""
        return {
            "balance_usd": self.balance,
            "currency": "USD",
            "unlimited": self.unlimited,
            "low_balance": self.low_balance,
            "spendable_usd": self.spendable,
            "reserved_usd": self.reserved,
            "auto_top_up_threshold_usd": self.auto_top_up_threshold,
            "auto_top_up_amount_usd": self.auto_top_up_amount,
            "auto_top_up_monthly_cap_usd": self.auto_top_up_monthly_cap,
            "low_balance_alert_threshold_usd": self.low_balance_alert_threshold,
            "monthly_spending_ceiling_usd": self.monthly_spending_ceiling,
            "spent_this_month_usd": self.spent_this_month,
        }


def month_start(now: datetime | None = None) -> datetime:
    """The start of the current calendar month in UTC: the period of the spending ceiling
    and the auto top-up cap."""
    now = now or timezone.now()
    return now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def spent_this_month(*, wallet: Wallet) -> Decimal:
    """Batch charges since the start of the month (a positive figure)."""
    charges = LedgerEntry.objects.filter(wallet=wallet, kind=EntryKind.BATCH_CHARGE, created_at__gte=month_start())
    return -exact_sum(charges, "amount")


def auto_top_ups_this_month(*, user: User) -> Decimal:
    """Confirmed plus pending auto top-ups since the start of the month."""
    auto = TopUp.objects.filter(
        user=user,
        origin=TopUpOrigin.AUTO,
        status__in=(TopUpStatus.CONFIRMED, TopUpStatus.PENDING),
        created_at__gte=month_start(),
    )
    return exact_sum(auto, "amount")


def wallet_settings_of(*, wallet: Wallet) -> WalletSettings:
    """The wallet's billing preferences (an unsaved empty row when none were set)."""
    if wallet.pk is None:
        return WalletSettings()
    found = WalletSettings.objects.filter(wallet=wallet).first()
    return found or WalletSettings(wallet=wallet)


def wallet_view_for(*, user: User) -> WalletView:
    """Every field of the Wallet view; an account without a wallet yet reads as empty
    (nothing is created by reading)."""
    wallet = Wallet.objects.filter(user=user).first()
    if wallet is None:
        return WalletView(balance=ZERO, reserved=ZERO, spendable=ZERO, unlimited=False)
    prefs = wallet_settings_of(wallet=wallet)
    threshold = prefs.low_balance_threshold
    return WalletView(
        balance=wallet.balance,
        reserved=ZERO if wallet.unlimited else wallet.reserved,
        spendable=wallet.spendable,
        unlimited=wallet.unlimited,
        low_balance=not wallet.unlimited and threshold is not None and wallet.balance <= threshold,
        auto_top_up_threshold=prefs.auto_top_up_threshold,
        auto_top_up_amount=prefs.auto_top_up_amount,
        auto_top_up_monthly_cap=prefs.auto_top_up_monthly_cap,
        low_balance_alert_threshold=threshold,
        monthly_spending_ceiling=prefs.monthly_spending_ceiling,
        spent_this_month=spent_this_month(wallet=wallet),
    )


def ledger_for_owner(*, owner: User) -> QuerySet[LedgerEntry]:
    """The owner's ledger entries, newest first."""
    return LedgerEntry.objects.filter(wallet__user=owner).order_by("-created_at", "-id")
