"""The wallet's rules through its services: credits, holds, settlement, release."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from core.errors import ServiceError, ValidationFailed
from tests.wallet.helpers import assert_wallet_invariants
from wallet.errors import InsufficientCredit
from wallet.models import EntryKind, Hold, HoldState, LedgerEntry, Wallet
from wallet.selectors.wallet import ledger_for_owner, wallet_view_for
from wallet.services.ledger import (
    hold_place,
    hold_release,
    hold_settle,
    wallet_credit,
    wallet_get_or_create,
)

pytestmark = pytest.mark.django_db

D = Decimal


def _top_up(user, amount: str, cause_id: str = "t1") -> LedgerEntry:
    return wallet_credit(user=user, amount=D(amount), kind="top_up_credit", cause_type="top_up", cause_id=cause_id)


def test_wallet_get_or_create_returns_one_wallet_per_user(user):
    first = wallet_get_or_create(user=user)
    assert wallet_get_or_create(user=user).pk == first.pk
    assert (first.balance, first.reserved, first.unlimited) == (D(0), D(0), False)


def test_credit_adds_to_balance_and_writes_one_entry(user):
    entry = _top_up(user, "10.1234567")
    wallet = Wallet.objects.get(user=user)
    assert wallet.balance == D("10.123457")
    assert (entry.kind, entry.amount, entry.balance_after, entry.reserved_after) == (
        "top_up_credit",
        D("10.123457"),
        D("10.123457"),
        D(0),
    )
    assert_wallet_invariants(wallet.pk)


def test_credit_with_the_same_cause_returns_the_first_entry_and_credits_nothing(user):
    first = _top_up(user, "5")
    again = _top_up(user, "7")
    assert again.pk == first.pk
    assert Wallet.objects.get(user=user).balance == D(5)
    assert LedgerEntry.objects.count() == 1


def test_redeem_of_a_code_already_used_by_another_wallet_is_refused(user, other_user):
    wallet_credit(user=user, amount=D(3), kind="redeem_credit", cause_type="code", cause_id="c-1")
    with pytest.raises(ServiceError) as caught:
        wallet_credit(user=other_user, amount=D(3), kind="redeem_credit", cause_type="code", cause_id="c-1")
    assert caught.value.code == "credit_cause_used"
    assert caught.value.status_code == 409
    assert wallet_view_for(user=other_user).balance == 0
    assert LedgerEntry.objects.count() == 1


def test_same_cause_id_under_different_credit_kinds_credits_each(user):
    _top_up(user, "1", cause_id="x")
    wallet_credit(user=user, amount=D(2), kind="refund", cause_type="top_up", cause_id="x")
    assert Wallet.objects.get(user=user).balance == D(3)


@pytest.mark.parametrize(
    "amount", [D(0), D("-1"), D("0.0000001"), "abc", 1.5, D("NaN"), D("Infinity"), "١٢", "１２", "1_000", "1e3", " 5"]
)
def test_credit_refuses_amounts_that_are_not_positive_decimals(user, amount):
    with pytest.raises(ValidationFailed):
        wallet_credit(user=user, amount=amount, kind="top_up_credit", cause_type="top_up", cause_id="t")
    assert LedgerEntry.objects.count() == 0


def test_credit_refuses_a_kind_that_is_not_a_credit(user):
    with pytest.raises(ValidationFailed):
        wallet_credit(user=user, amount=D(1), kind="batch_charge", cause_type="job", cause_id="j")
    assert LedgerEntry.objects.count() == 0


def test_hold_reserves_credit_and_writes_a_negative_hold_entry(user):
    _top_up(user, "10")
    hold = hold_place(user=user, amount=D(4), cause_type="job", cause_id="j1")
    view = wallet_view_for(user=user)
    assert (view.balance, view.reserved, view.spendable) == (D(10), D(4), D(6))
    entry = LedgerEntry.objects.get(kind=EntryKind.HOLD)
    assert (entry.amount, entry.balance_after, entry.reserved_after) == (D(-4), D(10), D(4))
    assert hold.state == HoldState.OPEN
    assert_wallet_invariants(hold.wallet_id)


def test_hold_for_the_same_cause_returns_the_existing_hold(user):
    _top_up(user, "10")
    first = hold_place(user=user, amount=D(4), cause_type="job", cause_id="j1")
    again = hold_place(user=user, amount=D(9), cause_type="job", cause_id="j1")
    assert again.pk == first.pk
    assert Wallet.objects.get(user=user).reserved == D(4)


def test_hold_refuses_with_the_shortfall_when_spendable_is_short_and_changes_nothing(user):
    _top_up(user, "10")
    hold_place(user=user, amount=D(7), cause_type="job", cause_id="j1")
    with pytest.raises(InsufficientCredit) as caught:
        hold_place(user=user, amount=D("3.5"), cause_type="job", cause_id="j2")
    assert caught.value.status_code == 402
    assert caught.value.code == "insufficient_credit"
    assert caught.value.shortfall == D("0.5")
    assert caught.value.extra == {"shortfall": 0.5}
    assert Hold.objects.count() == 1
    assert LedgerEntry.objects.count() == 2
    assert Wallet.objects.get(user=user).reserved == D(7)


def test_hold_of_exactly_the_spendable_credit_is_allowed(user):
    _top_up(user, "10")
    hold_place(user=user, amount=D(10), cause_type="job", cause_id="j1")
    assert wallet_view_for(user=user).spendable == 0


def test_hold_on_an_empty_new_wallet_is_refused(user):
    with pytest.raises(InsufficientCredit) as caught:
        hold_place(user=user, amount=D(1), cause_type="job", cause_id="j1")
    assert caught.value.shortfall == D(1)


def test_unlimited_wallet_gets_a_zero_hold_and_is_never_charged(user):
    wallet = wallet_get_or_create(user=user)
    Wallet.objects.filter(pk=wallet.pk).update(unlimited=True)
    hold = hold_place(user=user, amount=D(500), cause_type="job", cause_id="j1")
    assert hold.amount == 0
    assert hold_settle(hold=hold, amount=D(123)) is None
    view = wallet_view_for(user=user)
    assert (view.balance, view.reserved, view.unlimited) == (D(0), D(0), True)
    assert LedgerEntry.objects.count() == 0
    assert Hold.objects.get().state == HoldState.SETTLED


@pytest.mark.parametrize(
    ("measured", "charged"),
    [("2.5", "2.5"), ("4", "4"), ("9", "4"), ("0", "0")],
    ids=["below", "equal", "above", "zero"],
)
def test_settle_charges_at_most_the_hold_and_releases_the_rest(user, measured, charged):
    _top_up(user, "10")
    hold = hold_place(user=user, amount=D(4), cause_type="job", cause_id="j1")
    entry = hold_settle(hold=hold, amount=D(measured))
    wallet = Wallet.objects.get(user=user)
    assert wallet.balance == D(10) - D(charged)
    assert wallet.reserved == 0
    if D(charged) == 0:
        assert entry is None
    else:
        assert entry is not None
        assert (entry.kind, entry.amount) == (EntryKind.BATCH_CHARGE, -D(charged))
    hold.refresh_from_db()
    assert (hold.state, hold.settled_amount) == (HoldState.SETTLED, D(charged))
    assert hold.resolved_at is not None
    assert_wallet_invariants(wallet.pk)


def test_second_settle_returns_the_first_charge_and_changes_nothing(user):
    _top_up(user, "10")
    hold = hold_place(user=user, amount=D(4), cause_type="job", cause_id="j1")
    first = hold_settle(hold=hold, amount=D(3))
    stale = Hold.objects.get(pk=hold.pk)
    count = LedgerEntry.objects.count()
    again = hold_settle(hold=stale, amount=D(4))
    assert first is not None
    assert again is not None
    assert again.pk == first.pk
    assert LedgerEntry.objects.count() == count
    assert Wallet.objects.get(user=user).balance == D(7)


def test_settling_a_released_hold_raises_hold_resolved(user):
    _top_up(user, "10")
    hold = hold_place(user=user, amount=D(4), cause_type="job", cause_id="j1")
    hold_release(hold=hold)
    count = LedgerEntry.objects.count()
    with pytest.raises(ServiceError) as caught:
        hold_settle(hold=hold, amount=D(1))
    assert (caught.value.code, caught.value.status_code) == ("hold_resolved", 409)
    assert LedgerEntry.objects.count() == count
    assert Wallet.objects.get(user=user).balance == D(10)


def test_release_frees_the_hold_once(user):
    _top_up(user, "10")
    hold = hold_place(user=user, amount=D(4), cause_type="job", cause_id="j1")
    released = hold_release(hold=hold)
    assert released.state == HoldState.RELEASED
    hold_release(hold=hold)
    wallet = Wallet.objects.get(user=user)
    assert (wallet.balance, wallet.reserved) == (D(10), D(0))
    assert LedgerEntry.objects.filter(kind=EntryKind.HOLD_RELEASE).count() == 1
    assert_wallet_invariants(wallet.pk)


def test_releasing_a_settled_hold_changes_nothing(user):
    _top_up(user, "10")
    hold = hold_place(user=user, amount=D(4), cause_type="job", cause_id="j1")
    hold_settle(hold=hold, amount=D(1))
    count = LedgerEntry.objects.count()
    assert hold_release(hold=hold).state == HoldState.SETTLED
    assert LedgerEntry.objects.count() == count
    assert Wallet.objects.get(user=user).balance == D(9)


def test_a_job_cause_holds_on_one_wallet_only(user, other_user):
    _top_up(user, "10")
    _top_up(other_user, "10", cause_id="t2")
    hold_place(user=user, amount=D(1), cause_type="job", cause_id="j1")
    with pytest.raises(ServiceError) as caught:
        hold_place(user=other_user, amount=D(1), cause_type="job", cause_id="j1")
    assert caught.value.code == "hold_cause_used"
    assert Wallet.objects.get(user=other_user).reserved == 0


def test_database_refuses_a_wallet_whose_spendable_would_be_negative(user):
    wallet = wallet_get_or_create(user=user)
    with pytest.raises(IntegrityError), transaction.atomic():
        Wallet.objects.filter(pk=wallet.pk).update(reserved=D(1))


def test_database_refuses_a_charge_above_its_hold(user):
    _top_up(user, "10")
    hold = hold_place(user=user, amount=D(4), cause_type="job", cause_id="j1")
    with pytest.raises(IntegrityError), transaction.atomic():
        Hold.objects.filter(pk=hold.pk).update(settled_amount=D(5))


def test_wallet_view_for_a_user_without_wallet_is_empty_and_creates_nothing(user):
    view = wallet_view_for(user=user)
    assert (view.balance, view.reserved, view.spendable, view.unlimited) == (0, 0, 0, False)
    assert not Wallet.objects.exists()


def test_ledger_for_owner_lists_only_the_owners_entries_newest_first(user, other_user):
    _top_up(user, "10")
    hold = hold_place(user=user, amount=D(4), cause_type="job", cause_id="j1")
    hold_settle(hold=hold, amount=D(1))
    _top_up(other_user, "5", cause_id="other")
    kinds = [entry.kind for entry in ledger_for_owner(owner=user)]
    assert kinds == ["batch_charge", "hold_release", "hold", "top_up_credit"]


def test_worked_example_of_the_billing_doc(user):
    """docs/billing.md, "Ledger and holds": top up 10, hold 4, settle 2.5."""
    _top_up(user, "10.00")
    hold = hold_place(user=user, amount=D("4.00"), cause_type="job", cause_id="job-1")
    hold_settle(hold=hold, amount=D("2.50"))
    rows = [(e.kind, e.amount, e.balance_after, e.reserved_after) for e in reversed(list(ledger_for_owner(owner=user)))]
    assert rows == [
        ("top_up_credit", D("10"), D("10"), D("0")),
        ("hold", D("-4"), D("10"), D("4")),
        ("hold_release", D("4"), D("10"), D("0")),
        ("batch_charge", D("-2.5"), D("7.5"), D("0")),
    ]
