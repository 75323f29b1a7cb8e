"""Money: its quantum and how it is rounded, exact sums of money columns, and the one
spelling of an amount we read.

Every amount is a Decimal of MONEY_PLACES places (the columns, the API's MoneyField, the
admin's form field). Each rounding to that quantum is named for its purpose, so the
direction is decided here and nowhere else:

- `round_amount`: an amount given or measured (a credit, a page's engine cost), half up;
- `round_estimate_up`: an estimate or a rate, up, so it is never below the cost it covers;
- `round_cap_down`: a pro-rata share of a hold that caps a charge, down, so the cap is
  never above the hold it is a share of.

PostgreSQL sums NUMERIC exactly; SQLite (the embedded default) sums decimals as floats, so
there the values are added up in Python as Decimals instead."""

from __future__ import annotations

import re
from decimal import ROUND_DOWN, ROUND_HALF_UP, ROUND_UP, Decimal
from typing import Any

from django.db import connections
from django.db.models import QuerySet, Sum

MONEY_DIGITS = 18  # a money column's max_digits: 12 before the point, MONEY_PLACES after
MONEY_PLACES = 6
MONEY_QUANTUM = Decimal(1).scaleb(-MONEY_PLACES)  # 0.000001 USD, the smallest amount
CENT = Decimal("0.01")  # what card and crypto processors bill in


def round_amount(value: Decimal) -> Decimal:
    """An amount given or measured, to the money quantum, half up."""
    return value.quantize(MONEY_QUANTUM, rounding=ROUND_HALF_UP)


def round_estimate_up(value: Decimal) -> Decimal:
    """An estimate or a rate, to the money quantum, up: it never rounds below the cost."""
    return value.quantize(MONEY_QUANTUM, rounding=ROUND_UP)


def round_cap_down(value: Decimal) -> Decimal:
    """A share of a hold that caps a charge, to the money quantum, down: never above the hold."""
    return value.quantize(MONEY_QUANTUM, rounding=ROUND_DOWN)


def is_whole_cents(amount: Decimal) -> bool:
    """True when the amount is a whole number of cents (what a processor can bill exactly)."""
    return amount == amount.quantize(CENT)


def exact_sum(queryset: QuerySet[Any], field: str) -> Decimal:
    """The sum of a decimal column over the queryset (0 when empty), exact."""
    if connections[queryset.db].vendor == "postgresql":
        return queryset.aggregate(total=Sum(field))["total"] or Decimal(0)
    return sum((value for value in queryset.values_list(field, flat=True) if value is not None), Decimal(0))


_PLAIN_AMOUNT = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def money_text_is_plain(text: str) -> bool:
    """True for an amount written as ASCII digits with an optional sign and decimal point
    ("12", "-0.50"). Decimal() also reads other scripts' digits ("١٢", fullwidth digits), "1_000",
    surrounding spaces and exponents; none of those is an amount a client means to send."""
    return _PLAIN_AMOUNT.fullmatch(text) is not None
