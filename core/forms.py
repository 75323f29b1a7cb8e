"""Form fields shared by the operators' admin pages."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from core.money import MONEY_DIGITS, MONEY_PLACES, MONEY_QUANTUM, money_text_is_plain


class MoneyFormField(forms.DecimalField):
    """A positive USD amount exact to 6 places, typed in ASCII digits: Django's DecimalField
    reads any script's digits through Decimal() ("١٢" would be 12)."""

    default_error_messages = {"plain": "Type the amount in ASCII digits, such as 12.50."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_digits", MONEY_DIGITS)
        kwargs.setdefault("decimal_places", MONEY_PLACES)
        kwargs.setdefault("min_value", MONEY_QUANTUM)
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> Decimal | None:  # type: ignore[override]  # the stubs type it as IntegerField's
        if isinstance(value, str) and value.strip() and not money_text_is_plain(value.strip()):
            raise ValidationError(self.error_messages["plain"], code="plain")
        return super().to_python(value)
