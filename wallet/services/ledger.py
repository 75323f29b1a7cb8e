"""Every write to the wallet: credits, holds, settlements and releases.

Each service runs in one transaction, locks the wallet row first (then, where there is
one, the hold row: always this order, so two services never deadlock), and writes the
wallet row together with the ledger entry that explains it.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from celery import signature
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import User
from core.errors import ValidationFailed
from core.events import publish
from core.money import money_text_is_plain, round_amount
from wallet.errors import (
    ChargeNotFound,
    CreditCauseUsed,
    HoldCauseUsed,
    HoldResolved,
    InsufficientCredit,
    RefundExists,
    TopUpInFlight,
)
from wallet.events import BalanceFell, CreditLanded, SpendingRoomGrew
from wallet.models import (
    CREDIT_KINDS,
    ZERO,
    CauseType,
    EntryKind,
    Hold,
    HoldState,
    LedgerEntry,
    SavedCard,
    StripeCustomerErasure,
    TopUp,
    TopUpStatus,
    Wallet,
    WalletSettings,
)

# Queued by name after the commit (wallet/tasks.py; WalletConfig.ready registers it).
STRIPE_CUSTOMERS_ERASE_TASK = "wallet.tasks.stripe_customers_erase"


def money_quantize(*, value: Decimal | int | str, field: str = "amount", allow_zero: bool = False) -> Decimal:
    """The value as a money amount (core.money.round_amount); refuses floats, non-numbers, text other than ASCII
    digits with a sign and a point, negatives (and zero unless allowed)."""
    if isinstance(value, (float, bool)):
        raise ValidationFailed({field: ["Give money as a Decimal, never a float."]})
    if isinstance(value, str) and not money_text_is_plain(value):  # "١٢", "1_000", " 5", "1e3"
        raise ValidationFailed({field: ["Write the amount in ASCII digits, such as 12.50."]})
    try:
        amount = round_amount(Decimal(value))
    except (InvalidOperation, TypeError, ValueError):
        raise ValidationFailed({field: ["Not a number."]}) from None
    if not amount.is_finite() or amount < 0 or (amount == 0 and not allow_zero):
        raise ValidationFailed({field: ["Must be positive." if not allow_zero else "Must not be negative."]})
    return amount


def wallet_get_or_create(*, user: User) -> Wallet:
    """The user's wallet, created empty on first use (safe under concurrent first use)."""
    wallet, _ = Wallet.objects.get_or_create(user=user)
    return wallet


def _wallet_lock(*, user: User) -> Wallet:
    """The wallet row locked for this transaction (created first if missing)."""
    Wallet.objects.get_or_create(user=user)
    return Wallet.objects.select_for_update().get(user=user)


def wallet_lock(*, user: User) -> Wallet:
    """The owner's wallet row, locked until the caller's transaction ends (created first if
    missing). Callers in other apps take it after their own rows (a project, then its
    owner's wallet), the order the wallet's services keep too, so no two ever deadlock."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("wallet_lock needs an open transaction")
    return _wallet_lock(user=user)


def _balance_fell_publish(*, wallet: Wallet) -> None:
    """After a debit: the low-balance alert and auto top-up (wallet.services.alerts, subscribed to
    `BalanceFell`) look at the wallet once the transaction commits."""
    publish(BalanceFell(wallet_id=wallet.pk))


def _entry_write(
    *, wallet: Wallet, kind: str, amount: Decimal, cause_type: str, cause_id: str, memo: str = ""
) -> LedgerEntry:
    """Saves the (already changed) wallet row and the entry that explains the change."""
    wallet.save(update_fields=["balance", "reserved"])
    return LedgerEntry.objects.create(
        wallet=wallet,
        kind=kind,
        amount=amount,
        balance_after=wallet.balance,
        reserved_after=wallet.reserved,
        cause_type=cause_type,
        cause_id=cause_id,
        memo=memo[:255],
    )


def wallet_credit(
    *, user: User, amount: Decimal, kind: str, cause_type: str, cause_id: str, memo: str = ""
) -> LedgerEntry:
    """Adds credit (top-up, redeem, refund, positive adjustment). Idempotent per
    (kind, cause_type, cause_id): a repeated cause returns the first entry and credits
    nothing; a cause already used by another wallet is refused (409 credit_cause_used)."""
    if kind not in CREDIT_KINDS:
        raise ValidationFailed({"kind": [f"Not a credit kind: {kind}."]})
    if cause_type not in CauseType.values or not cause_id:
        raise ValidationFailed({"cause": ["A known cause type and a cause id are required."]})
    amount = money_quantize(value=amount)
    with transaction.atomic():
        wallet = _wallet_lock(user=user)
        existing = LedgerEntry.objects.filter(kind=kind, cause_type=cause_type, cause_id=cause_id).first()
        if existing is not None:
            if existing.wallet_id != wallet.pk:
                raise CreditCauseUsed()
            return existing
        wallet.balance += amount
        try:
            with transaction.atomic():
                entry = _entry_write(
                    wallet=wallet, kind=kind, amount=amount, cause_type=cause_type, cause_id=cause_id, memo=memo
                )
        except IntegrityError:
            # Another wallet took this cause between our check and our insert.
            raise CreditCauseUsed() from None
        user_id = user.pk
        publish(CreditLanded(user_id=user_id, amount=amount))
        return entry


def hold_place(*, user: User, amount: Decimal, cause_type: str, cause_id: str) -> Hold:
    """Reserves `amount` of spendable credit for a cause (a job). Idempotent per cause: the
    same cause returns its existing hold. Refuses with InsufficientCredit (402) when
    spendable credit is short, changing nothing. An unlimited wallet gets a zero hold."""
    if cause_type not in CauseType.values or not cause_id:
        raise ValidationFailed({"cause": ["A known cause type and a cause id are required."]})
    amount = money_quantize(value=amount)
    with transaction.atomic():
        wallet = _wallet_lock(user=user)
        existing = Hold.objects.filter(cause_type=cause_type, cause_id=cause_id).first()
        if existing is not None:
            if existing.wallet_id != wallet.pk:
                raise HoldCauseUsed()
            return existing
        if wallet.unlimited:
            return Hold.objects.create(wallet=wallet, amount=ZERO, cause_type=cause_type, cause_id=cause_id)
        if wallet.spendable < amount:
            raise InsufficientCredit(shortfall=amount - wallet.spendable)
        hold = Hold.objects.create(wallet=wallet, amount=amount, cause_type=cause_type, cause_id=cause_id)
        wallet.reserved += amount
        _entry_write(wallet=wallet, kind=EntryKind.HOLD, amount=-amount, cause_type=cause_type, cause_id=cause_id)
        _balance_fell_publish(wallet=wallet)
        return hold


def _hold_lock(*, hold: Hold) -> tuple[Wallet, Hold]:
    """Locks in the one order: the wallet row, then the hold row."""
    wallet = Wallet.objects.select_for_update().get(pk=hold.wallet_id)
    return wallet, Hold.objects.select_for_update().get(pk=hold.pk)


def _sync(target: Hold, source: Hold) -> None:
    """Shows the caller's instance the hold as it now is."""
    for field in ("state", "settled_amount", "charge_entry_id", "resolved_at"):
        setattr(target, field, getattr(source, field))


def _room_grew_on_commit(*, wallet: Wallet) -> None:
    """Spendable credit rose without new credit (a hold released, or settled below its
    amount): books paused for credit may start now."""
    publish(SpendingRoomGrew(user_id=wallet.user_id))


def hold_settle(*, hold: Hold, amount: Decimal, memo: str = "") -> LedgerEntry | None:
    """Charges min(amount, hold.amount) and releases the rest: a charge never exceeds its
    hold. Exactly once: settling a settled hold returns the first charge and changes
    nothing; settling a released hold raises 409 hold_resolved. Returns the batch_charge
    entry, or None when nothing was charged (a zero charge, an unlimited wallet). `memo`
    (who or what ended the batch, such as an operator's cancel) goes on both entries."""
    measured = money_quantize(value=amount, allow_zero=True)
    with transaction.atomic():
        wallet, locked = _hold_lock(hold=hold)
        if locked.state == HoldState.SETTLED:
            _sync(hold, locked)
            return locked.charge_entry
        if locked.state == HoldState.RELEASED:
            _sync(hold, locked)
            raise HoldResolved("The hold was released; it cannot be settled.")
        charge = min(measured, locked.amount)
        cause = {"cause_type": locked.cause_type, "cause_id": locked.cause_id}
        if locked.amount > 0:
            wallet.reserved -= locked.amount
            _entry_write(wallet=wallet, kind=EntryKind.HOLD_RELEASE, amount=locked.amount, memo=memo, **cause)
        entry: LedgerEntry | None = None
        if charge > 0:
            wallet.balance -= charge
            capped = f"measured {measured}, capped at the hold" if measured > charge else ""
            charge_memo = "; ".join(part for part in (memo, capped) if part)
            entry = _entry_write(wallet=wallet, kind=EntryKind.BATCH_CHARGE, amount=-charge, memo=charge_memo, **cause)
            _balance_fell_publish(wallet=wallet)
        locked.state = HoldState.SETTLED
        locked.settled_amount = charge
        locked.charge_entry = entry
        locked.resolved_at = timezone.now()
        locked.save(update_fields=["state", "settled_amount", "charge_entry", "resolved_at"])
        if charge < locked.amount:
            _room_grew_on_commit(wallet=wallet)
        _sync(hold, locked)
        return entry


def hold_release(*, hold: Hold, memo: str = "") -> Hold:
    """Releases an open hold without charging. Exactly once: releasing a released or a
    settled hold changes nothing. Returns the hold as it now is. `memo` goes on the entry."""
    with transaction.atomic():
        wallet, locked = _hold_lock(hold=hold)
        if locked.state == HoldState.OPEN:
            if locked.amount > 0:
                wallet.reserved -= locked.amount
                _entry_write(
                    wallet=wallet,
                    kind=EntryKind.HOLD_RELEASE,
                    amount=locked.amount,
                    cause_type=locked.cause_type,
                    cause_id=locked.cause_id,
                    memo=memo,
                )
            locked.state = HoldState.RELEASED
            locked.resolved_at = timezone.now()
            locked.save(update_fields=["state", "resolved_at"])
            if locked.amount > 0:
                _room_grew_on_commit(wallet=wallet)
        _sync(hold, locked)
        return locked


def wallet_unlimited_set(*, user: User, unlimited: bool, operator: User | None) -> Wallet:
    """Grants or revokes unlimited (whitelisted) use, under the wallet row lock; setting
    the value it already has changes nothing. Open holds keep the terms they were placed
    under: a hold placed before a grant is still settled (charged at most its amount), and
    a zero hold placed while unlimited still charges nothing after a revoke. Only holds
    placed afterwards follow the new setting. A grant publishes `SpendingRoomGrew`
    (books paused for credit continue). Balance and reserved are never touched, so
    no ledger entry is written; the caller records the operator (the admin's history)."""
    with transaction.atomic():
        wallet = _wallet_lock(user=user)
        if wallet.unlimited != unlimited:
            wallet.unlimited = unlimited
            wallet.save(update_fields=["unlimited"])
            if unlimited:
                user_id = user.pk
                publish(SpendingRoomGrew(user_id=user_id))
        return wallet


def wallet_operator_credit(*, user: User, amount: Decimal, reason: str, operator: User, credit_id: str) -> LedgerEntry:
    """An operator's credit: an `adjustment` entry under the cause (operator, credit_id),
    its memo naming the reason and the operator. Idempotent per credit_id (a fresh uuid
    drawn when the admin's form is shown, so a form posted twice credits once)."""
    reason = reason.strip()
    if not reason:
        raise ValidationFailed({"reason": ["Say why the credit is given."]})
    return wallet_credit(
        user=user,
        amount=amount,
        kind=EntryKind.ADJUSTMENT,
        cause_type=CauseType.OPERATOR,
        cause_id=credit_id,
        memo=f"{reason} (by {operator.email})",
    )


def wallet_operator_debit(*, user: User, amount: Decimal, reason: str, operator: User, debit_id: str) -> LedgerEntry:
    """An operator's debit (a negative `adjustment` entry under the cause (operator,
    debit_id), its memo naming the reason and the operator). It never takes spendable
    credit below 0: more than is spendable is refused (400, nothing written); held credit
    stays held. Idempotent per debit_id (drawn when the admin's form is shown)."""
    reason = reason.strip()
    if not reason:
        raise ValidationFailed({"reason": ["Say why the debit is made."]})
    amount = money_quantize(value=amount)
    with transaction.atomic():
        wallet = _wallet_lock(user=user)
        existing = LedgerEntry.objects.filter(
            kind=EntryKind.ADJUSTMENT, cause_type=CauseType.OPERATOR, cause_id=debit_id
        ).first()
        if existing is not None:
            if existing.wallet_id != wallet.pk or existing.amount > 0:
                raise CreditCauseUsed()
            return existing
        if amount > wallet.spendable:
            raise ValidationFailed(
                {"amount": [f"At most the spendable {wallet.spendable} USD: a debit never takes spendable below 0."]}
            )
        wallet.balance -= amount
        entry = _entry_write(
            wallet=wallet,
            kind=EntryKind.ADJUSTMENT,
            amount=-amount,
            cause_type=CauseType.OPERATOR,
            cause_id=debit_id,
            memo=f"{reason} (by {operator.email})",
        )
        _balance_fell_publish(wallet=wallet)
        return entry


def batch_charge_refund(*, job_id: str, amount: Decimal, reason: str, operator: User) -> LedgerEntry:
    """An operator's refund of a batch charge: a `refund` entry under the cause (job,
    job_id) on the wallet that was charged, at most what was charged for the job, once per
    job (a second refund is 409 refund_exists; a job without a charge is 404
    charge_not_found). Its memo names the reason and the operator; CreditLanded follows."""
    reason = reason.strip()
    if not reason:
        raise ValidationFailed({"reason": ["Say why the charge is refunded."]})
    amount = money_quantize(value=amount)
    charge = (
        LedgerEntry.objects.select_related("wallet__user")
        .filter(kind=EntryKind.BATCH_CHARGE, cause_type=CauseType.JOB, cause_id=job_id)
        .first()
    )
    if charge is None:
        raise ChargeNotFound()
    with transaction.atomic():
        _wallet_lock(user=charge.wallet.user)
        if LedgerEntry.objects.filter(kind=EntryKind.REFUND, cause_type=CauseType.JOB, cause_id=job_id).exists():
            raise RefundExists()
        charged = -charge.amount
        if amount > charged:
            raise ValidationFailed({"amount": [f"At most the {charged} USD charged for this batch."]})
        return wallet_credit(
            user=charge.wallet.user,
            amount=amount,
            kind=EntryKind.REFUND,
            cause_type=CauseType.JOB,
            cause_id=job_id,
            memo=f"{reason} (by {operator.email})",
        )


def wallet_account_close(*, user: User) -> None:
    """For an account being deleted (inside its transaction): refused with 409
    top_up_in_flight while one of its top-ups is pending, since a payment that lands
    afterwards would credit a wallet nobody can use; otherwise the saved cards and every
    billing preference (auto top-up, alerts, ceiling, the Stripe customer id) are
    forgotten, and the Stripe customer is recorded for deletion at Stripe with the cards
    saved there (`StripeCustomerErasure`; queued once this transaction commits). The wallet
    row, its ledger, its holds and its top-ups stay, unchanged, as financial records: the
    sums still add up."""
    if TopUp.objects.filter(user=user, status=TopUpStatus.PENDING).exists():
        raise TopUpInFlight()
    SavedCard.objects.filter(user=user).delete()
    preferences = WalletSettings.objects.filter(wallet__user=user)  # one row, or none yet
    customer_id = preferences.exclude(stripe_customer_id="").values_list("stripe_customer_id", flat=True).first()
    if customer_id:
        StripeCustomerErasure.objects.get_or_create(customer_id=customer_id, defaults={"user": user})
        transaction.on_commit(lambda: signature(STRIPE_CUSTOMERS_ERASE_TASK).delay(), robust=True)
    preferences.update(
        auto_top_up_threshold=None,
        auto_top_up_amount=None,
        auto_top_up_monthly_cap=None,
        low_balance_threshold=None,
        low_balance_alerted_at=None,
        monthly_spending_ceiling=None,
        stripe_customer_id="",
    )
