"""Many threads placing and settling holds on one wallet at once (PostgreSQL row locks)."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.db import connection

from tests.wallet.helpers import assert_wallet_invariants
from wallet.errors import InsufficientCredit
from wallet.models import Hold, HoldState, Wallet
from wallet.services.ledger import hold_place, hold_release, hold_settle, wallet_credit

THREADS = 8
HOLDS_PER_THREAD = 3
HOLD = Decimal("1.25")
CREDIT = Decimal("12.50")  # room for exactly 10 of the 24 holds tried at once
# Charges below, at and above the hold (the last is capped at the hold).
MEASURED = [Decimal("0.333333"), HOLD, Decimal("9.99")]


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_holds_and_settlements_never_overspend_or_lose_a_cent(user):
    wallet_credit(user=user, amount=CREDIT, kind="top_up_credit", cause_type="top_up", cause_id="start")
    placed_together = threading.Barrier(THREADS)
    settle_together = threading.Barrier(THREADS)
    placed: list[Hold] = []
    refused: list[int] = []
    errors: list[BaseException] = []
    peak_reserved: list[Decimal] = []
    lock = threading.Lock()

    def worker(number: int) -> None:
        mine: list[Hold] = []
        try:
            placed_together.wait(timeout=30)
            for index in range(HOLDS_PER_THREAD):
                try:
                    mine.append(hold_place(user=user, amount=HOLD, cause_type="job", cause_id=f"job-{number}-{index}"))
                except InsufficientCredit:
                    with lock:
                        refused.append(number)
            settle_together.wait(timeout=30)
            with lock:
                placed.extend(mine)
                if not peak_reserved:
                    peak_reserved.append(Wallet.objects.get(user=user).reserved)
            for index, hold in enumerate(mine):
                if (number + index) % 4 == 3:
                    hold_release(hold=hold)
                    hold_release(hold=hold)
                else:
                    hold_settle(hold=hold, amount=MEASURED[(number + index) % 3])
                    hold_settle(hold=hold, amount=Decimal(0))  # a repeat changes nothing
        except BaseException as error:  # surfaced to the main thread below
            with lock:
                errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(number,)) for number in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert not errors, errors
    assert len(placed) + len(refused) == THREADS * HOLDS_PER_THREAD
    assert len(placed) * HOLD <= CREDIT
    assert len(placed) == CREDIT / HOLD  # every cent that could be held was, and no more
    assert peak_reserved == [len(placed) * HOLD]
    holds = Hold.objects.filter(wallet__user=user)
    assert not holds.filter(state=HoldState.OPEN).exists()
    charges = sum((hold.settled_amount or Decimal(0) for hold in holds), Decimal(0))
    wallet = assert_wallet_invariants(Wallet.objects.get(user=user).pk)
    assert wallet.balance == CREDIT - charges
    assert wallet.reserved == 0
    assert all(hold.settled_amount is None or hold.settled_amount <= HOLD for hold in holds)
