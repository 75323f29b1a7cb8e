"""Property-based (stateful) test of the ledger: random interleavings of top-ups, redeems
(some replayed), holds, settlements below/at/above the hold, releases, and repeated
settlements and releases; the invariants are checked after every step."""

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

from core.errors import ServiceError
from tests.factories import UserFactory
from tests.wallet.helpers import assert_wallet_invariants
from wallet.models import Hold, HoldState
from wallet.services import (
    InsufficientCredit,
    hold_place,
    hold_release,
    hold_settle,
    wallet_credit,
    wallet_get_or_create,
)

amounts = st.decimals(min_value=Decimal(1), max_value=Decimal(100), places=6)
hold_amounts = st.decimals(min_value=Decimal("0.000001"), max_value=Decimal(20), places=6)
# A settlement's measured cost as a multiple of its hold: below, exactly at, and above it.
below = st.decimals(min_value=0, max_value=Decimal("0.999"), places=3)
above = st.decimals(min_value=Decimal("1.001"), max_value=3, places=3)


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
        self.credited_codes: set[str] = set()

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
        code = uuid.uuid4().hex
        wallet_credit(user=self.user, amount=amount, kind="redeem_credit", cause_type="code", cause_id=code)
        self.expected_balance += amount
        self.credited_codes.add(code)
        return code

    @rule(code=codes, amount=amounts)
    def redeem_again(self, code: str, amount: Decimal) -> None:
        entry = wallet_credit(user=self.user, amount=amount, kind="redeem_credit", cause_type="code", cause_id=code)
        assert entry.cause_id == code  # the first entry back, nothing credited

    @rule(target=holds, amount=hold_amounts)
    def place(self, amount: Decimal):  # type: ignore[no-untyped-def]
        spendable = assert_wallet_invariants(self.wallet_id).spendable
        if amount > spendable:
            with pytest.raises(InsufficientCredit) as refused:
                hold_place(user=self.user, amount=amount, cause_type="job", cause_id=uuid.uuid4().hex)
            assert refused.value.shortfall == amount - spendable
            return multiple()
        hold = hold_place(user=self.user, amount=amount, cause_type="job", cause_id=uuid.uuid4().hex)
        assert amount <= spendable
        return hold

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
    run_state_machine_as_test(LedgerMachine, settings=settings(max_examples=20, stateful_step_count=25, deadline=None))
