"""Output shapes and fields shared by several apps."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.http import QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.errors import ValidationFailed
from core.money import MONEY_DIGITS, MONEY_PLACES, money_text_is_plain

NOT_A_FIELD = "This field is not part of this operation."


@extend_schema_field(OpenApiTypes.INT64)
class Int64Field(serializers.IntegerField):
    """An integer the contract types as int64 (byte counts)."""


class UploadLimitsSerializer(serializers.Serializer[Any]):
    """The contract's "upload limits" shape, shared by upload limits and avatar limits."""

    accepted_extensions = serializers.ListField(
        child=serializers.CharField(), help_text='File extensions with a leading dot, for example ".png".'
    )
    max_file_size_bytes = Int64Field(help_text="The largest accepted file, in bytes.")

    class Meta:
        ref_name = "UploadLimits"


class FieldsUnknown(ValidationFailed):
    """A body with members the operation does not have (or spelt otherwise than the
    contract spells them): a 400 validation_error naming each as the client sent it."""

    def __init__(self, refused: dict[str, str]) -> None:
        super().__init__(
            {name: [reason] for name, reason in refused.items()},
            detail=f"Fields this operation does not have: {', '.join(refused)}.",
        )
        self.extra["unknown_fields"] = list(refused)


def _members_unknown(serializer: serializers.Serializer[Any], data: Any, path: str = "") -> dict[str, str]:
    """Every member of the body, at any depth of nested serializers, that is not a
    writable field there; keyed by its dotted path as sent, with why."""
    if not isinstance(data, Mapping):
        return {}
    wire_names: dict[str, str] = getattr(data, "wire_names", {})
    found = {path + name: reason for name, reason in getattr(data, "refused_names", {}).items()}
    for name, value in data.items():
        shown = path + wire_names.get(name, str(name))  # a multipart part: named as sent
        field = serializer.fields.get(name)
        if field is None or field.read_only:
            found[shown] = NOT_A_FIELD
        elif isinstance(field, serializers.Serializer):
            found.update(_members_unknown(field, value, f"{shown}."))
        elif isinstance(field, (serializers.ListSerializer, serializers.ListField)) and isinstance(value, list):
            child = field.child
            if isinstance(child, serializers.Serializer):
                for index, item in enumerate(value):
                    found.update(_members_unknown(child, item, f"{shown}[{index}]."))
    return found


def validated(serializer_class: type[serializers.Serializer[Any]], data: Any) -> dict[str, Any]:
    """The serializer's validated data; a 400 validation_error problem otherwise. Every
    body the API reads goes through here, so this is where bodies are strict: a member
    the operation does not have (a misspelt option, a read-only field, a name not spelt
    in camelCase, a name given twice) is refused, never silently ignored, as Stripe does;
    the problem's `unknownFields` lists them as sent."""
    unknown = _members_unknown(serializer_class(), data)
    if unknown:
        raise FieldsUnknown(unknown)
    return _validated_data(serializer_class, data)


def query_repeats_refuse(query: QueryDict, names: Iterable[str]) -> None:
    """400 validation_error naming each of `names` the query string gives more than once
    (`?status=Created&status=Failed`): which one was meant cannot be told, as a body's
    repeated member cannot."""
    repeated = [name for name in names if len(query.getlist(name)) > 1]
    if repeated:
        raise serializers.ValidationError({name: ["Given more than once; send it once."] for name in repeated})


def validated_query(serializer_class: type[serializers.Serializer[Any]], query: QueryDict) -> dict[str, Any]:
    """A query string's validated parameters; a 400 validation_error otherwise, a parameter
    it names given twice too. Parameters the serializer does not name are left alone
    (pagination's, a client's cache buster)."""
    query_repeats_refuse(query, serializer_class().fields)
    return _validated_data(serializer_class, query)


def _validated_data(serializer_class: type[serializers.Serializer[Any]], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


@extend_schema_field(OpenApiTypes.DOUBLE)
class MoneyField(serializers.DecimalField):
    """USD as a JSON number (the contract's double), exact to 6 places in the code. In a
    request, a string of ASCII digits ("12.50") is taken too; nothing else."""

    default_error_messages = {
        **serializers.DecimalField.default_error_messages,
        "plain": "Give the amount as a JSON number or a string of ASCII digits, such as 12.50.",
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_digits", MONEY_DIGITS)
        kwargs.setdefault("decimal_places", MONEY_PLACES)
        kwargs.setdefault("coerce_to_string", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        # Decimal() reads any Unicode digits ("١٢" is 12), "1_000", " 12 " and "1e3":
        # an amount of money is a JSON number or a plain string of ASCII digits.
        if isinstance(data, bool) or (isinstance(data, str) and not money_text_is_plain(data)):
            self.fail("plain")
        return super().to_internal_value(data)
