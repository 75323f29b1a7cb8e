"""Invariant checks and answer shapes shared by the wallet tests."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Count, Sum

from wallet.models import BALANCE_KINDS, RESERVE_KINDS, EntryKind, Hold, HoldState, LedgerEntry, Wallet

# The fields of a top-up as the wallet API returns it.
TOP_UP_FIELDS = {
    "amount",
    "balance",
    "creditedAmount",
    "checkoutUrl",
    "cryptoAddress",
    "cryptoAmount",
    "cryptoCoin",
    "currency",
    "message",
    "method",
    "reference",
    "status",
    "createdUtc",
    "expiresUtc",
}


def _sum(queryset) -> Decimal:  # type: ignore[no-untyped-def]
    return queryset.aggregate(total=Sum("amount"))["total"] or Decimal(0)


def assert_wallet_invariants(wallet_id: int) -> Wallet:
    """balance == sum of balance entries; reserved == sum of open holds == -(hold entries);
    spendable >= 0; each cause charged/held/released at most once; no charge above its hold;
    a batch charge refunded at most once and by at most what it charged."""
    wallet = Wallet.objects.get(pk=wallet_id)
    entries = LedgerEntry.objects.filter(wallet=wallet)
    assert wallet.balance == _sum(entries.filter(kind__in=BALANCE_KINDS))
    assert wallet.reserved == _sum(Hold.objects.filter(wallet=wallet, state=HoldState.OPEN))
    assert wallet.reserved == -_sum(entries.filter(kind__in=RESERVE_KINDS))
    assert wallet.balance - wallet.reserved >= 0
    assert wallet.reserved >= 0
    repeated = (
        entries.filter(kind__in=(EntryKind.HOLD, EntryKind.HOLD_RELEASE, EntryKind.BATCH_CHARGE))
        .values("kind", "cause_type", "cause_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    assert not repeated.exists(), list(repeated)
    charged = {
        row["cause_id"]: -row["total"]
        for row in entries.filter(kind=EntryKind.BATCH_CHARGE).values("cause_id").annotate(total=Sum("amount"))
    }
    for hold in Hold.objects.filter(wallet=wallet):
        charge = charged.get(hold.cause_id, Decimal(0))
        assert charge <= hold.amount
        assert charge == (hold.settled_amount if hold.state == HoldState.SETTLED else 0)
    refunded = (
        entries.filter(kind=EntryKind.REFUND, cause_type="job")
        .values("cause_id")
        .annotate(total=Sum("amount"), n=Count("id"))
    )
    for row in refunded:
        assert row["n"] == 1, f"job {row['cause_id']} refunded twice"
        assert 0 < row["total"] <= charged.get(row["cause_id"], Decimal(0)), f"job {row['cause_id']} over-refunded"
    last = entries.order_by("-id").first()
    if last is not None:
        assert (last.balance_after, last.reserved_after) == (wallet.balance, wallet.reserved)
    return wallet
