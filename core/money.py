"""Exact sums of money columns on every database.

PostgreSQL sums NUMERIC exactly; SQLite (the embedded default) sums decimals as floats, so
there the values are added up in Python as Decimals instead."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import connections
from django.db.models import QuerySet, Sum


def exact_sum(queryset: QuerySet[Any], field: str) -> Decimal:
    """The sum of a decimal column over the queryset (0 when empty), exact."""
    if connections[queryset.db].vendor == "postgresql":
        return queryset.aggregate(total=Sum(field))["total"] or Decimal(0)
    return sum((value for value in queryset.values_list(field, flat=True) if value is not None), Decimal(0))
