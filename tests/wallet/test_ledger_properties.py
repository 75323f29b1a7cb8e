"""Property-based (stateful) test of the ledger: random interleavings of top-ups, redeems
of real codes (some tried again), holds, settlements below/at/above the hold, releases,
repeated settlements and releases, operators' refunds of batch charges (some tried again)
and operators' debits (some past spendable); the invariants are checked after every step."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)

from core.errors import ServiceError, ValidationFailed
from tests.factories import UserFactory
from tests.wallet.helpers import assert_wallet_invariants
from wallet.errors import InsufficientCredit, RedeemRejected, RefundExists
from wallet.models import EntryKind, Hold, HoldState, LedgerEntry
from wallet.services.ledger import (
    batch_charge_refund,
    hold_place,
    hold_release,
    hold_settle,
    wallet_credit,
    wallet_get_or_create,
    wallet_operator_debit,
)
from wallet.services.redeem import code_redeem, codes_issue

amounts = st.decimals(min_value=Decimal(1), max_value=Decimal(100), places=6)
hold_amounts = st.decimals(min_value=Decimal("0.000001"), max_value=Decimal(20), places=6)
# A settlement's measured cost as a multiple of its hold: below, exactly at, and above it.
below = st.decimals(min_value=0, max_value=Decimal("0.999"), places=3)
above = st.decimals(min_value=Decimal("1.001"), max_value=3, places=3)
# A refund as a share of the batch's charge; a debit as a share of spendable credit (past 1: refused).
refund_shares = st.decimals(min_value=Decimal("0.001"), max_value=1, places=3)
debit_shares = st.decimals(min_value=Decimal("0.001"), max_value=Decimal("1.5"), places=3)


class LedgerMachine(RuleBasedStateMachine):
    holds = Bundle("holds")
    codes = Bundle("codes")

    def __init__(self) -> None:
        super().__init__()
        # A fresh user per example: each run starts from an empty wallet.
        self.user = UserFactory()
        self.wallet_id = wallet_get_or_create(user=self.user).pk
        self.expected_balance = Decimal(0)
        self.resolutions: dict[int, str] = {}
        self.refunded: set[str] = set()
        self.operator = UserFactory(is_staff=True)

    @initialize(amount=amounts)
    def first_top_up(self, amount: Decimal) -> None:
        self.top_up(amount)

    @rule(amount=amounts)
    def top_up(self, amount: Decimal) -> None:
        wallet_credit(
            user=self.user, amount=amount, kind="top_up_credit", cause_type="top_up", cause_id=uuid.uuid4().hex
        )
        self.expected_balance += amount

    @rule(target=codes, amount=amounts)
    def redeem(self, amount: Decimal) -> str:
        _, (code,) = codes_issue(amount=amount, count=1, operator=None)
        top_up = code_redeem(user=self.user, code=code)
        assert top_up.credited_amount == amount
        self.expected_balance += amount
        return code

    @rule(code=codes)
    def redeem_again(self, code: str) -> None:
        with pytest.raises(RedeemRejected) as refused:
            code_redeem(user=self.user, code=code)
        assert refused.value.code == "redeem_code_used"

    @rule(target=holds, amount=hold_amounts)
    def place(self, amount: Decimal):  # type: ignore[no-untyped-def]
        spendable = assert_wallet_invariants(self.wallet_id).spendable
        if amount > spendable:
            with pytest.raises(InsufficientCredit) as refused:
                hold_place(user=self.user, amount=amount, cause_type="job", cause_id=uuid.uuid4().hex)
            assert refused.value.shortfall == amount - spendable
            return multiple()
        hold = hold_place(user=self.user, amount=amount, cause_type="job", cause_id=uuid.uuid4().hex)
        assert hold.amount == amount
        assert assert_wallet_invariants(self.wallet_id).spendable == spendable - amount
        return hold

    @rule(hold=holds, share=refund_shares)
    def refund(self, hold: Hold, share: Decimal) -> None:
        charge = LedgerEntry.objects.filter(kind=EntryKind.BATCH_CHARGE, cause_type="job", cause_id=hold.cause_id)
        charged = -charge.get().amount if charge.exists() else Decimal(0)
        amount = max((charged * share).quantize(Decimal("0.000001")), Decimal("0.000001"))
        if charged == 0:
            with pytest.raises(ServiceError) as refused:
                batch_charge_refund(job_id=hold.cause_id, amount=amount, reason="test", operator=self.operator)
            assert refused.value.code == "charge_not_found"
        elif hold.cause_id in self.refunded:
            with pytest.raises(RefundExists):
                batch_charge_refund(job_id=hold.cause_id, amount=amount, reason="again", operator=self.operator)
        else:
            entry = batch_charge_refund(job_id=hold.cause_id, amount=amount, reason="test", operator=self.operator)
            assert entry.amount == amount <= charged
            self.expected_balance += amount
            self.refunded.add(hold.cause_id)

    @rule(share=debit_shares)
    def debit(self, share: Decimal) -> None:
        spendable = assert_wallet_invariants(self.wallet_id).spendable
        amount = max((spendable * share).quantize(Decimal("0.000001")), Decimal("0.000001"))
        debit_id = uuid.uuid4().hex
        if amount > spendable:
            with pytest.raises(ValidationFailed):
                wallet_operator_debit(
                    user=self.user, amount=amount, reason="t", operator=self.operator, debit_id=debit_id
                )
            return
        entry = wallet_operator_debit(
            user=self.user, amount=amount, reason="t", operator=self.operator, debit_id=debit_id
        )
        assert entry.amount == -amount
        self.expected_balance -= amount

    @rule(hold=holds, ratio=below)
    def settle_below(self, hold: Hold, ratio: Decimal) -> None:
        self._settle(hold, (hold.amount * ratio).quantize(Decimal("0.000001")))

    @rule(hold=holds)
    def settle_exactly(self, hold: Hold) -> None:
        self._settle(hold, hold.amount)

    @rule(hold=holds, ratio=above)
    def settle_above(self, hold: Hold, ratio: Decimal) -> None:
        self._settle(hold, (hold.amount * ratio).quantize(Decimal("0.000001")) + Decimal("0.000001"))

    def _settle(self, hold: Hold, amount: Decimal) -> None:
        state = Hold.objects.get(pk=hold.pk).state
        if state == HoldState.RELEASED:
            with pytest.raises(ServiceError, match="released") as refused:
                hold_settle(hold=hold, amount=amount)
            assert refused.value.code == "hold_resolved"
            return
        entry = hold_settle(hold=hold, amount=amount)
        if state == HoldState.OPEN:
            charge = min(amount, hold.amount)
            assert (entry.amount if entry else Decimal(0)) == -charge
            self.expected_balance -= charge
            self._resolve(hold, "settled")

    @rule(hold=holds)
    def release(self, hold: Hold) -> None:
        state = Hold.objects.get(pk=hold.pk).state
        hold_release(hold=hold)
        if state == HoldState.OPEN:
            self._resolve(hold, "released")

    def _resolve(self, hold: Hold, how: str) -> None:
        assert hold.pk not in self.resolutions, "a hold resolved twice"
        self.resolutions[hold.pk] = how
        assert Hold.objects.get(pk=hold.pk).state == how

    @invariant()
    def ledger_matches_wallet(self) -> None:
        wallet = assert_wallet_invariants(self.wallet_id)
        assert wallet.balance == self.expected_balance


@pytest.mark.django_db
def test_ledger_invariants_hold_under_random_interleavings() -> None:
    run_state_machine_as_test(LedgerMachine, settings=settings(max_examples=25, stateful_step_count=30, deadline=None))
