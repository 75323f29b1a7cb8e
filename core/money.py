"""Exact sums of money columns on every database, and the one spelling of an amount we read.

PostgreSQL sums NUMERIC exactly; SQLite (the embedded default) sums decimals as floats, so
there the values are added up in Python as Decimals instead."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from django.db import connections
from django.db.models import QuerySet, Sum


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
