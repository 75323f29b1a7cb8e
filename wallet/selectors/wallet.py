"""Reads of the wallet: the owner's view, this month's spending and the ledger."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import User
from core.errors import NotFound
from core.money import exact_sum
from wallet.models import (
    ZERO,
    CauseType,
    EntryKind,
    LedgerEntry,
    SavedCard,
    TopUp,
    TopUpOrigin,
    TopUpStatus,
    Wallet,
    WalletSettings,
)

# After a failed auto top-up no new one is tried for this long (a declined card is not
# retried on every batch).
AUTO_TOP_UP_RETRY_AFTER = timedelta(hours=24)


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
    """Batch charges since the start of the month, less the refunds of batch charges made
    this month (a positive figure, never below 0): what the spending ceiling counts."""
    this_month = LedgerEntry.objects.filter(wallet=wallet, created_at__gte=month_start())
    charged = -exact_sum(this_month.filter(kind=EntryKind.BATCH_CHARGE), "amount")
    refunded = exact_sum(this_month.filter(kind=EntryKind.REFUND, cause_type=CauseType.JOB), "amount")
    return max(charged - refunded, ZERO)


def auto_top_ups_this_month(*, user: User) -> Decimal:
    """Confirmed plus pending auto top-ups since the start of the month."""
    auto = TopUp.objects.filter(
        user=user,
        origin=TopUpOrigin.AUTO,
        status__in=(TopUpStatus.CONFIRMED, TopUpStatus.PENDING),
        created_at__gte=month_start(),
    )
    return exact_sum(auto, "amount")


def auto_top_up_blocker(*, user: User, prefs: WalletSettings) -> str | None:
    """Why an auto top-up cannot start now, whatever the balance: "off" (not enabled),
    "pending" (one is in flight), "failed_recently" (one failed within
    AUTO_TOP_UP_RETRY_AFTER), "monthly_cap" (its amount would pass the cap this month) or
    "no_card" (no primary saved card); None when it can."""
    amount = prefs.auto_top_up_amount
    if not prefs.auto_top_up_enabled or amount is None:
        return "off"
    auto = TopUp.objects.filter(user=user, origin=TopUpOrigin.AUTO)
    if auto.filter(status=TopUpStatus.PENDING).exists():
        return "pending"
    if auto.filter(status=TopUpStatus.FAILED, created_at__gte=timezone.now() - AUTO_TOP_UP_RETRY_AFTER).exists():
        return "failed_recently"
    cap = prefs.auto_top_up_monthly_cap
    if cap is not None and auto_top_ups_this_month(user=user) + amount > cap:
        return "monthly_cap"
    if not SavedCard.objects.filter(user=user, is_primary=True).exists():
        return "no_card"
    return None


def auto_top_up_coming(*, user: User) -> bool:
    """Whether credit from an auto top-up is on its way (one is pending) or can start now
    (auto_top_up_blocker finds nothing in its way); what lets a book paused for credit say
    it waits rather than that the owner must act."""
    wallet = Wallet.objects.filter(user=user).first()
    if wallet is None or wallet.unlimited:
        return False
    return auto_top_up_blocker(user=user, prefs=wallet_settings_of(wallet=wallet)) in (None, "pending")


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


def top_up_for_owner(*, owner: User, reference: str) -> TopUp:
    """The caller's top-up by reference; anyone else's is a 404, like a missing one."""
    top_up = TopUp.objects.filter(user=owner, reference=reference).first()
    if top_up is None:
        raise NotFound("No top-up of yours has this reference.")
    return top_up
