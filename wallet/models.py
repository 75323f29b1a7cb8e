"""The wallet row, its append-only ledger and its holds.

Sign convention of `LedgerEntry.amount`: the signed change to the owner's *spendable*
credit (balance - reserved). Credits are positive, a batch charge is negative, a hold is
negative (it reserves), a hold release is positive (it frees). So:
balance == sum of the balance-changing kinds, reserved == -(sum of hold and hold_release),
spendable == sum of all entries.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

ZERO = Decimal("0.000000")


class Wallet(models.Model):
    """One per user. balance and reserved change only under this row's lock, in the same
    transaction as the ledger entry that explains the change."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="wallet")
    balance = models.DecimalField(max_digits=18, decimal_places=6, default=ZERO)
    reserved = models.DecimalField(max_digits=18, decimal_places=6, default=ZERO)
    unlimited = models.BooleanField(default=False, help_text="whitelisted: never held or charged")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(reserved__gte=0), name="wallet_reserved_not_negative"),
            models.CheckConstraint(condition=Q(balance__gte=F("reserved")), name="wallet_spendable_not_negative"),
        ]

    def __str__(self) -> str:
        return f"wallet of user {self.user_id}"

    @property
    def spendable(self) -> Decimal:
        return self.balance - self.reserved


class EntryKind(models.TextChoices):
    TOP_UP_CREDIT = "top_up_credit"
    REDEEM_CREDIT = "redeem_credit"
    BATCH_CHARGE = "batch_charge"
    HOLD = "hold"
    HOLD_RELEASE = "hold_release"
    REFUND = "refund"
    ADJUSTMENT = "adjustment"


CREDIT_KINDS = (EntryKind.TOP_UP_CREDIT, EntryKind.REDEEM_CREDIT, EntryKind.REFUND, EntryKind.ADJUSTMENT)
BALANCE_KINDS = (*CREDIT_KINDS, EntryKind.BATCH_CHARGE)
RESERVE_KINDS = (EntryKind.HOLD, EntryKind.HOLD_RELEASE)


class CauseType(models.TextChoices):
    TOP_UP = "top_up"
    JOB = "job"
    CODE = "code"
    OPERATOR = "operator"


class LedgerEntry(models.Model):
    """Append-only: code creates entries and never updates or deletes them."""

    wallet = models.ForeignKey(Wallet, on_delete=models.PROTECT, related_name="entries")
    kind = models.CharField(max_length=16, choices=EntryKind.choices)
    amount = models.DecimalField(
        max_digits=18, decimal_places=6, help_text="signed change to spendable credit (see module docstring)"
    )
    balance_after = models.DecimalField(max_digits=18, decimal_places=6)
    reserved_after = models.DecimalField(max_digits=18, decimal_places=6)
    cause_type = models.CharField(max_length=16, choices=CauseType.choices)
    cause_id = models.CharField(max_length=128)
    memo = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # One credit per cause: a replayed top-up webhook or a code redeemed twice credits once.
            models.UniqueConstraint(
                fields=["kind", "cause_type", "cause_id"],
                condition=Q(kind__in=CREDIT_KINDS),
                name="ledger_one_credit_per_cause",
            ),
            models.CheckConstraint(
                condition=~Q(kind__in=(*CREDIT_KINDS, EntryKind.HOLD_RELEASE)) | Q(amount__gt=0),
                name="ledger_credit_positive",
            ),
            models.CheckConstraint(
                condition=~Q(kind__in=(EntryKind.BATCH_CHARGE, EntryKind.HOLD)) | Q(amount__lt=0),
                name="ledger_debit_negative",
            ),
        ]
        indexes = [models.Index(fields=["wallet", "-created_at", "-id"], name="ledger_wallet_newest")]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} ({self.cause_type}:{self.cause_id})"


class HoldState(models.TextChoices):
    OPEN = "open"
    SETTLED = "settled"
    RELEASED = "released"


class Hold(models.Model):
    """A pending charge (TigerBeetle's pending transfer): settled once (posting at most
    its amount, the rest released) or released once."""

    wallet = models.ForeignKey(Wallet, on_delete=models.PROTECT, related_name="holds")
    amount = models.DecimalField(max_digits=18, decimal_places=6)
    state = models.CharField(max_length=8, choices=HoldState.choices, default=HoldState.OPEN)
    cause_type = models.CharField(max_length=16, choices=CauseType.choices)
    cause_id = models.CharField(max_length=128)
    settled_amount = models.DecimalField(max_digits=18, decimal_places=6, null=True, blank=True)
    charge_entry = models.OneToOneField(
        LedgerEntry, null=True, blank=True, on_delete=models.PROTECT, related_name="settled_hold"
    )
    created_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cause_type", "cause_id"], name="hold_one_per_cause"),
            models.CheckConstraint(condition=Q(amount__gte=0), name="hold_amount_not_negative"),
            models.CheckConstraint(
                condition=Q(settled_amount__isnull=True)
                | (Q(settled_amount__gte=0) & Q(settled_amount__lte=F("amount"))),
                name="hold_charge_within_hold",
            ),
            models.CheckConstraint(
                condition=Q(state=HoldState.OPEN, resolved_at__isnull=True)
                | (~Q(state=HoldState.OPEN) & Q(resolved_at__isnull=False)),
                name="hold_resolved_at_matches_state",
            ),
        ]
        indexes = [
            models.Index(fields=["wallet"], condition=Q(state=HoldState.OPEN), name="hold_open_by_wallet"),
        ]

    def __str__(self) -> str:
        return f"hold {self.amount} ({self.cause_type}:{self.cause_id}, {self.state})"
