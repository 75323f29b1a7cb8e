"""The wallet row, its append-only ledger and its holds.

Sign convention of `LedgerEntry.amount`: the signed change to the owner's *spendable*
credit (balance - reserved). Credits are positive, a batch charge is negative, a hold is
negative (it reserves), a hold release is positive (it frees), an operator's adjustment is
either (a credit or a debit). So:
balance == sum of the balance-changing kinds, reserved == -(sum of hold and hold_release),
spendable == sum of all entries.
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from core.money import MONEY_DIGITS, MONEY_PLACES

ZERO = Decimal("0.000000")


class Wallet(models.Model):
    """One per user. balance and reserved change only under this row's lock, in the same
    transaction as the ledger entry that explains the change."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="wallet")
    balance = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, default=ZERO)
    reserved = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, default=ZERO)
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
# Credits that are always positive; an adjustment is an operator's credit or debit.
POSITIVE_KINDS = (EntryKind.TOP_UP_CREDIT, EntryKind.REDEEM_CREDIT, EntryKind.REFUND)
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
        max_digits=MONEY_DIGITS,
        decimal_places=MONEY_PLACES,
        help_text="signed change to spendable credit (see module docstring)",
    )
    balance_after = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES)
    reserved_after = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES)
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
                condition=~Q(kind__in=(*POSITIVE_KINDS, EntryKind.HOLD_RELEASE)) | Q(amount__gt=0),
                name="ledger_credit_positive",
            ),
            # An operator's adjustment credits or debits (the services keep spendable >= 0).
            models.CheckConstraint(
                condition=~Q(kind=EntryKind.ADJUSTMENT) | ~Q(amount=0),
                name="ledger_adjustment_not_zero",
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
    amount = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES)
    state = models.CharField(max_length=8, choices=HoldState.choices, default=HoldState.OPEN)
    cause_type = models.CharField(max_length=16, choices=CauseType.choices)
    cause_id = models.CharField(max_length=128)
    settled_amount = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True)
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


class WalletSettings(models.Model):
    """The owner's billing preferences, one row per wallet: auto top-up, the low-balance
    alert and the monthly spending ceiling. Kept apart from the hot wallet row so that
    changing a preference never waits on (or blocks) a ledger write."""

    wallet = models.OneToOneField(Wallet, on_delete=models.CASCADE, related_name="preferences")
    auto_top_up_threshold = models.DecimalField(
        max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True
    )
    auto_top_up_amount = models.DecimalField(
        max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True
    )
    auto_top_up_monthly_cap = models.DecimalField(
        max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True
    )
    low_balance_threshold = models.DecimalField(
        max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True
    )
    low_balance_alerted_at = models.DateTimeField(null=True, blank=True)
    monthly_spending_ceiling = models.DecimalField(
        max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True
    )
    stripe_customer_id = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(auto_top_up_threshold__isnull=True, auto_top_up_amount__isnull=True)
                | Q(auto_top_up_threshold__gte=0, auto_top_up_amount__gt=0),
                name="wallet_auto_top_up_both_or_neither",
            ),
            models.CheckConstraint(
                condition=Q(auto_top_up_monthly_cap__isnull=True) | Q(auto_top_up_monthly_cap__gt=0),
                name="wallet_auto_top_up_cap_positive",
            ),
            models.CheckConstraint(
                condition=Q(low_balance_threshold__isnull=True) | Q(low_balance_threshold__gte=0),
                name="wallet_low_balance_threshold_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(monthly_spending_ceiling__isnull=True) | Q(monthly_spending_ceiling__gt=0),
                name="wallet_spending_ceiling_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"billing preferences of wallet {self.wallet_id}"

    @property
    def auto_top_up_enabled(self) -> bool:
        return self.auto_top_up_threshold is not None and self.auto_top_up_amount is not None


class SavedCard(models.Model):
    """A card saved with Stripe (a PaymentMethod attached to the owner's Stripe customer).
    We keep only what a user needs to recognise it; the card itself stays at Stripe."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_cards")
    stripe_payment_method_id = models.CharField(max_length=255, unique=True)
    brand = models.CharField(max_length=32, blank=True)
    last4 = models.CharField(max_length=4, blank=True)
    exp_month = models.PositiveSmallIntegerField(null=True, blank=True)
    exp_year = models.PositiveSmallIntegerField(null=True, blank=True)
    is_primary = models.BooleanField(default=False, help_text="the card auto top-up charges")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user"], condition=Q(is_primary=True), name="saved_card_one_primary"),
        ]
        ordering = ["-is_primary", "-created_at"]

    def __str__(self) -> str:
        return f"{self.brand} ending {self.last4}"


class StripeCustomerErasure(models.Model):
    """The Stripe customer of a deleted account, to be deleted at Stripe, its saved cards
    with it: written in the account's deletion transaction (so a process killed before it
    reaches Stripe loses nothing), removed once Stripe has deleted the customer or no longer
    knows it. `wallet.tasks.stripe_customers_erase` works through them at once after the
    deletion, and again every STRIPE_ERASURE_SWEEP_SECONDS while Stripe cannot be reached."""

    customer_id = models.CharField(max_length=255, unique=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")

    def __str__(self) -> str:
        return f"Stripe customer {self.customer_id} to delete"


class TopUpMethod(models.TextChoices):
    MANUAL = "manual"
    CARD = "card"
    CRYPTO = "crypto"


class TopUpStatus(models.TextChoices):
    PENDING = "pending"
    CONFIRMED = "confirmed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


class TopUpOrigin(models.TextChoices):
    API = "api", "requested by the owner"
    AUTO = "auto", "auto top-up"


class TopUp(models.Model):
    """One attempt to add credit. Pending until the provider confirms it (or says it failed,
    was cancelled or expired); confirmed exactly once, crediting the ledger under the cause
    (top_up, reference)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    reference = models.CharField(max_length=40, unique=True, help_text="the opaque id the client polls")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="top_ups")
    method = models.CharField(max_length=8, choices=TopUpMethod.choices)
    origin = models.CharField(max_length=8, choices=TopUpOrigin.choices, default=TopUpOrigin.API)
    amount = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES)
    status = models.CharField(max_length=10, choices=TopUpStatus.choices, default=TopUpStatus.PENDING)
    credited_amount = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES, null=True, blank=True)
    message = models.CharField(max_length=500, blank=True)
    provider_reference = models.CharField(
        max_length=255, blank=True, help_text="Stripe Checkout Session or PaymentIntent id, or the crypto invoice id"
    )
    checkout_url = models.URLField(max_length=2048, null=True, blank=True)
    crypto_address = models.CharField(max_length=255, null=True, blank=True)
    crypto_amount = models.CharField(max_length=64, null=True, blank=True)
    crypto_coin = models.CharField(max_length=32, null=True, blank=True)
    saved_card = models.ForeignKey(SavedCard, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    client_key = models.CharField(
        max_length=255,
        blank=True,
        help_text="the client's Idempotency-Key: a retry with it, even after a crash, resumes this top-up",
    )
    ledger_entry = models.OneToOneField(
        LedgerEntry, null=True, blank=True, on_delete=models.PROTECT, related_name="top_up"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="when the provider's checkout lapses")

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="top_up_amount_positive"),
            models.CheckConstraint(
                condition=Q(status=TopUpStatus.CONFIRMED, credited_amount__gt=0, resolved_at__isnull=False)
                | Q(status=TopUpStatus.PENDING, credited_amount__isnull=True, resolved_at__isnull=True)
                | (
                    Q(status__in=(TopUpStatus.FAILED, TopUpStatus.CANCELLED, TopUpStatus.EXPIRED))
                    & Q(credited_amount__isnull=True, resolved_at__isnull=False)
                ),
                name="top_up_credit_matches_status",
            ),
            models.UniqueConstraint(
                fields=["method", "provider_reference"],
                condition=~Q(provider_reference=""),
                name="top_up_one_per_provider_reference",
            ),
            models.UniqueConstraint(
                fields=["user", "client_key"], condition=~Q(client_key=""), name="top_up_one_per_client_key"
            ),
            # At most one auto top-up in flight per owner: "at most once at a time".
            models.UniqueConstraint(
                fields=["user"],
                condition=Q(origin=TopUpOrigin.AUTO, status=TopUpStatus.PENDING),
                name="top_up_one_pending_auto",
            ),
        ]
        indexes = [models.Index(fields=["user", "-created_at"], name="top_up_user_newest")]

    def __str__(self) -> str:
        return f"top-up {self.reference} ({self.method}, {self.amount} USD, {self.status})"


class RedeemBatch(models.Model):
    """A batch of credit codes an operator issued: N codes of one amount."""

    amount = models.DecimalField(max_digits=MONEY_DIGITS, decimal_places=MONEY_PLACES)
    count = models.PositiveIntegerField()
    expires_at = models.DateTimeField(null=True, blank=True)
    note = models.CharField(max_length=255, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    voided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="redeem_batch_amount_positive"),
            models.CheckConstraint(condition=Q(count__gt=0), name="redeem_batch_count_positive"),
        ]
        verbose_name_plural = "redeem batches"

    def __str__(self) -> str:
        return f"{self.count} codes of {self.amount} USD ({self.created_at:%Y-%m-%d})"


class RedeemCode(models.Model):
    """One code, stored as its SHA-256 (the codes carry enough entropy that no salt is
    needed); redeemable once."""

    batch = models.ForeignKey(RedeemBatch, on_delete=models.PROTECT, related_name="codes")
    code_hash = models.CharField(max_length=64, unique=True)
    hint = models.CharField(max_length=8, help_text="the last characters, for support")
    redeemed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    redeemed_at = models.DateTimeField(null=True, blank=True)
    voided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(redeemed_by__isnull=True, redeemed_at__isnull=True)
                | Q(redeemed_by__isnull=False, redeemed_at__isnull=False),
                name="redeem_code_redeemed_together",
            ),
        ]

    def __str__(self) -> str:
        return f"code …{self.hint}"
