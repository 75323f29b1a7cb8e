"""Reads of the wallet: the owner's view and the ledger."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import QuerySet

from accounts.models import User
from wallet.models import ZERO, LedgerEntry, Wallet


@dataclass(frozen=True)
class WalletView:
    balance: Decimal
    reserved: Decimal
    spendable: Decimal
    unlimited: bool


def wallet_view_for(*, user: User) -> WalletView:
    """Balance, reserved and spendable credit; an account without a wallet yet reads as
    empty (nothing is created by reading)."""
    wallet = Wallet.objects.filter(user=user).first()
    if wallet is None:
        return WalletView(balance=ZERO, reserved=ZERO, spendable=ZERO, unlimited=False)
    return WalletView(
        balance=wallet.balance,
        reserved=ZERO if wallet.unlimited else wallet.reserved,
        spendable=wallet.spendable,
        unlimited=wallet.unlimited,
    )


def ledger_for_owner(*, owner: User) -> QuerySet[LedgerEntry]:
    """The owner's ledger entries, newest first."""
    return LedgerEntry.objects.filter(wallet__user=owner).order_by("-created_at", "-id")
