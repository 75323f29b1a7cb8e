"""core.money: the money quantum and the three named roundings every caller uses."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.money import (
    MONEY_PLACES,
    MONEY_QUANTUM,
    is_whole_cents,
    round_amount,
    round_cap_down,
    round_estimate_up,
)

# Amounts a wallet can hold, with more places than money keeps (what a division gives).
raw_amounts = st.decimals(min_value=Decimal(0), max_value=Decimal("999999999999"), places=12)


def test_the_quantum_is_the_smallest_amount_of_money_places():
    assert Decimal("0.000001") == MONEY_QUANTUM
    assert MONEY_QUANTUM.as_tuple().exponent == -MONEY_PLACES


@pytest.mark.parametrize(
    ("value", "rounded"),
    [
        ("0.0000005", "0.000001"),
        ("0.00000049", "0.000000"),
        ("12.3456785", "12.345679"),
        ("12.5", "12.500000"),
    ],
)
def test_an_amount_rounds_half_up_to_the_quantum(value, rounded):
    assert str(round_amount(Decimal(value))) == rounded


@pytest.mark.parametrize(
    ("function", "value", "rounded"),
    [
        (round_estimate_up, "0.0000001", "0.000001"),
        (round_estimate_up, "2.0000000", "2.000000"),
        (round_cap_down, "0.0000009", "0.000000"),
        (round_cap_down, "2.9999999", "2.999999"),
    ],
)
def test_an_estimate_rounds_up_and_a_cap_share_down(function, value, rounded):
    assert str(function(Decimal(value))) == rounded


@given(raw_amounts)
def test_an_estimate_is_never_below_the_cost_and_less_than_a_quantum_above(value):
    estimate = round_estimate_up(value)
    assert value <= estimate < value + MONEY_QUANTUM
    assert estimate.as_tuple().exponent == -MONEY_PLACES


@given(raw_amounts)
def test_a_cap_share_is_never_above_the_hold_and_less_than_a_quantum_below(value):
    share = round_cap_down(value)
    assert value - MONEY_QUANTUM < share <= value
    assert share.as_tuple().exponent == -MONEY_PLACES


@given(raw_amounts)
def test_every_rounding_lies_between_the_cap_share_and_the_estimate(value):
    assert round_cap_down(value) <= round_amount(value) <= round_estimate_up(value)


@pytest.mark.parametrize(
    ("amount", "whole"),
    [("12", True), ("12.50", True), ("12.500000", True), ("12.505", False), ("0.000001", False)],
)
def test_whole_cents_are_what_a_processor_can_bill(amount, whole):
    assert is_whole_cents(Decimal(amount)) is whole
