"""The low-balance email: when it is sent, how often, and that it never charges."""

from __future__ import annotations

import socket
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import mail
from django.utils import timezone

from wallet.models import EntryKind, TopUp, Wallet, WalletSettings
from wallet.services.alerts import low_balance_alert_send
from wallet.services.ledger import hold_place, hold_settle, wallet_credit
from wallet.services.preferences import low_balance_alert_set

pytestmark = pytest.mark.django_db


def funded(user, amount: str = "10", *, alert_below: str | None = None):  # type: ignore[no-untyped-def]
    """The user's wallet credited with the amount, with a low-balance alert at alert_below if given."""
    wallet_credit(user=user, amount=Decimal(amount), kind=EntryKind.ADJUSTMENT, cause_type="operator", cause_id="seed")
    if alert_below is not None:
        low_balance_alert_set(user=user, threshold=Decimal(alert_below))
    return user.wallet


def charge(user, amount: str, job: str) -> None:  # type: ignore[no-untyped-def]
    hold = hold_place(user=user, amount=Decimal(amount), cause_type="job", cause_id=job)
    hold_settle(hold=hold, amount=Decimal(amount))


def test_the_alert_is_sent_once_the_balance_falls_to_the_threshold(user):
    wallet = funded(user, alert_below="4")
    assert low_balance_alert_send(wallet_id=wallet.pk) is False
    charge(user, "6", "job-1")
    assert low_balance_alert_send(wallet_id=wallet.pk) is True
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == [user.email]
    assert "4.00 USD" in message.subject
    assert "4.00 USD" in message.body


def test_the_alert_repeats_at_most_once_per_rolling_day(user):
    wallet = funded(user, alert_below="20")
    assert low_balance_alert_send(wallet_id=wallet.pk) is True
    charge(user, "1", "job-1")
    assert low_balance_alert_send(wallet_id=wallet.pk) is False
    WalletSettings.objects.filter(wallet=wallet).update(
        low_balance_alerted_at=timezone.now() - timedelta(hours=23, minutes=59)
    )
    assert low_balance_alert_send(wallet_id=wallet.pk) is False
    WalletSettings.objects.filter(wallet=wallet).update(low_balance_alerted_at=timezone.now() - timedelta(hours=24))
    assert low_balance_alert_send(wallet_id=wallet.pk) is True
    assert len(mail.outbox) == 2


def test_no_alert_when_disabled_or_unlimited_and_the_alert_never_charges(user):
    wallet = funded(user, "3")
    assert low_balance_alert_send(wallet_id=wallet.pk) is False  # no threshold set
    low_balance_alert_set(user=user, threshold=Decimal("5"))
    Wallet.objects.filter(pk=wallet.pk).update(unlimited=True)
    assert low_balance_alert_send(wallet_id=wallet.pk) is False
    assert mail.outbox == []
    assert not TopUp.objects.exists()
    wallet.refresh_from_db()
    assert wallet.balance == Decimal("3")


def test_a_debit_queues_the_alert_after_the_commit(user, eager_celery, django_capture_on_commit_callbacks):
    funded(user)
    low_balance_alert_set(user=user, threshold=Decimal("5"))
    with django_capture_on_commit_callbacks(execute=True):
        charge(user, "2", "job-1")
    assert mail.outbox == []  # 8 USD left: above the threshold
    with django_capture_on_commit_callbacks(execute=True):
        charge(user, "3", "job-2")
    assert len(mail.outbox) == 1
    with django_capture_on_commit_callbacks(execute=True):
        charge(user, "1", "job-3")
    assert len(mail.outbox) == 1  # not again within the day


def test_setting_a_threshold_above_the_balance_alerts_at_once(user, eager_celery, django_capture_on_commit_callbacks):
    funded(user, "2")
    with django_capture_on_commit_callbacks(execute=True):
        low_balance_alert_set(user=user, threshold=Decimal("5"))
    assert len(mail.outbox) == 1


def test_a_mail_server_that_is_down_leaves_the_alert_to_be_retried(user, settings):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", port, 2
    wallet = funded(user, "1")
    low_balance_alert_set(user=user, threshold=Decimal("5"))
    with pytest.raises(ConnectionRefusedError):
        low_balance_alert_send(wallet_id=wallet.pk)
    assert WalletSettings.objects.get(wallet=wallet).low_balance_alerted_at is None
