"""What happens when credit runs low: the low-balance email and auto top-up.

After every debit (a hold, a charge) and every change of the preferences, the wallet
publishes `wallet.events.BalanceFell`; `balance_watch` (subscribed in WalletConfig.ready)
looks at the wallet once the transaction has committed and, only when a rule applies,
queues the work on a worker:
- the low-balance email, when the balance is at or below the alert threshold, at most once
  per LOW_BALANCE_ALERT_REPEAT_HOURS (the time of the last one is kept on the preferences
  row, updated in the transaction that sends it);
- auto top-up, when spendable credit is at or below its threshold: one pending auto top-up
  at a time (a partial unique index), never past the monthly cap, charging the primary
  saved card off-session. A failure is recorded as a failed top-up and the owner is
  emailed; after a failure no new attempt is made for AUTO_TOP_UP_RETRY_AFTER, so a
  declined card is not retried on every batch.

A book that pauses for credit does not wait for the next debit: processing calls
`auto_top_up_for_paused_book` on commit, which starts the auto top-up at once when it can.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from decimal import Decimal

from celery import signature
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from core.errors import ServiceError
from core.events import publish
from wallet.events import BalanceFell, LowBalance
from wallet.models import SavedCard, TopUp, TopUpMethod, TopUpOrigin, TopUpStatus, Wallet, WalletSettings
from wallet.selectors.wallet import auto_top_up_blocker, wallet_settings_of
from wallet.services import stripe_gateway
from wallet.services.topups import reference_new

logger = logging.getLogger(__name__)

# Queued by name (wallet/tasks.py calls these services; WalletConfig.ready registers them).
LOW_BALANCE_ALERT_TASK = "wallet.tasks.low_balance_alert_send"
AUTO_TOP_UP_TASK = "wallet.tasks.auto_top_up_start"


def balance_watch_on_event(event: BalanceFell) -> None:
    """The event bus's handler of `BalanceFell` (after the commit)."""
    balance_watch(wallet_id=event.wallet_id)


def balance_watch(*, wallet_id: int) -> None:
    """Queues the low-balance email and an auto top-up when their rules apply (a cheap
    read; the tasks check again under a lock)."""
    wallet = Wallet.objects.filter(pk=wallet_id).first()
    prefs = WalletSettings.objects.filter(wallet_id=wallet_id).first()
    if wallet is None or prefs is None or wallet.unlimited:
        return
    if _low_balance_alert_due(wallet=wallet, prefs=prefs):
        signature(LOW_BALANCE_ALERT_TASK, args=(wallet_id,)).delay()
    threshold = prefs.auto_top_up_threshold
    if prefs.auto_top_up_enabled and threshold is not None and wallet.spendable <= threshold:
        signature(AUTO_TOP_UP_TASK, args=(wallet_id,)).delay()


def _low_balance_alert_due(*, wallet: Wallet, prefs: WalletSettings) -> bool:
    threshold = prefs.low_balance_threshold
    if threshold is None or wallet.balance > threshold:
        return False
    repeat = timedelta(hours=settings.LOW_BALANCE_ALERT_REPEAT_HOURS)
    return prefs.low_balance_alerted_at is None or timezone.now() - prefs.low_balance_alerted_at >= repeat


def low_balance_alert_send(*, wallet_id: int) -> bool:
    """Emails the owner that the balance is low, unless one was sent within the repeat
    window. The preferences row is locked and the time recorded in the same transaction as
    the send, so two workers never both send; a failed send changes nothing (the task
    retries). Returns whether an email went out."""
    with transaction.atomic():
        prefs = WalletSettings.objects.select_for_update().filter(wallet_id=wallet_id).first()
        wallet = Wallet.objects.select_related("user").filter(pk=wallet_id).first()
        if (
            prefs is None
            or wallet is None
            or wallet.unlimited
            or not _low_balance_alert_due(wallet=wallet, prefs=prefs)
        ):
            return False
        send_mail(
            subject=f"Your balance is low: {wallet.balance:.2f} USD",
            message=(
                f"Your prepaid balance is {wallet.balance:.2f} USD, at or below the alert threshold of "
                f"{prefs.low_balance_threshold:.2f} USD you set.\n\n"
                "Books that run out of credit pause and resume by themselves after a top-up.\n"
                f"Top up: {settings.APP_URL}/wallet\n\n"
                "You receive this at most once a day; change or turn off the alert in your wallet settings."
            ),
            from_email=settings.DEFAULT_FROM_EMAIL,
            recipient_list=[wallet.user.email],
        )
        prefs.low_balance_alerted_at = timezone.now()
        prefs.save(update_fields=["low_balance_alerted_at"])
        publish(LowBalance(owner_id=wallet.user_id))
        logger.info("low-balance alert sent for wallet %s", wallet_id)
        return True


def auto_top_up_for_paused_book(*, user_id: uuid.UUID, needed: Decimal) -> None:
    """A book of the owner paused for credit (called on commit): when an auto top-up can
    start and spendable credit is below `needed` (what the paused batch needs), it is queued
    now rather than after the next debit. A cheap read; the task checks again under the
    wallet lock."""
    wallet = Wallet.objects.select_related("user").filter(user_id=user_id).first()
    if wallet is None or wallet.unlimited or wallet.spendable >= needed:
        return
    if auto_top_up_blocker(user=wallet.user, prefs=wallet_settings_of(wallet=wallet)) is not None:
        return
    signature(AUTO_TOP_UP_TASK, args=(wallet.pk, str(needed))).delay()


def auto_top_up_start(*, wallet_id: int, short_of: Decimal | None = None) -> TopUp | None:
    """Charges the primary saved card for the auto top-up amount and returns the top-up
    (None when no rule applies). It applies when spendable credit is at or below the
    threshold or, for a book paused for credit (`short_of`: what its batch needs), below
    that figure; and when auto_top_up_blocker finds nothing in the way. Under the wallet
    row lock, with one pending auto top-up per owner (a partial unique index), so two
    triggers at once charge once."""
    with transaction.atomic():
        wallet = Wallet.objects.select_for_update().select_related("user").get(pk=wallet_id)
        prefs = WalletSettings.objects.filter(wallet=wallet).first()
        if wallet.unlimited or prefs is None:
            return None
        threshold, amount = prefs.auto_top_up_threshold, prefs.auto_top_up_amount
        if threshold is None or amount is None:
            return None
        if (wallet.spendable > threshold) if short_of is None else (wallet.spendable >= short_of):
            return None
        user = wallet.user
        blocker = auto_top_up_blocker(user=user, prefs=prefs)
        if blocker is not None:
            logger.info("auto top-up for wallet %s not started: %s", wallet_id, blocker)
            return None
        card = SavedCard.objects.get(user=user, is_primary=True)
        top_up = TopUp.objects.create(
            reference=reference_new(),
            user=user,
            method=TopUpMethod.CARD,
            origin=TopUpOrigin.AUTO,
            amount=amount,
            saved_card=card,
        )
    try:
        top_up = stripe_gateway.saved_card_charge(top_up=top_up, card=card)
    except ServiceError:
        # Stripe could not be reached: the gateway recorded the top-up as failed.
        top_up.refresh_from_db()
    if top_up.status == TopUpStatus.FAILED:
        _auto_top_up_failure_tell(top_up=top_up)
    return top_up


def _auto_top_up_failure_tell(*, top_up: TopUp) -> None:
    logger.warning("auto top-up %s failed: %s", top_up.reference, top_up.message)
    send_mail(
        subject="Your automatic top-up failed",
        message=(
            f"We tried to add {top_up.amount:.2f} USD to your balance with your saved card, and it failed:\n"
            f"{top_up.message}\n\n"
            "We will not try again for a day. Update your card or top up by hand: "
            f"{settings.APP_URL}/wallet"
        ),
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[top_up.user.email],
        fail_silently=True,
    )
