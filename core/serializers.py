"""Output shapes and fields shared by several apps."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


@extend_schema_field(OpenApiTypes.INT64)
class Int64Field(serializers.IntegerField):
    """An integer the contract types as int64 (byte counts)."""


class UploadLimitsSerializer(serializers.Serializer):
    """The contract's "upload limits" shape, shared by upload limits and avatar limits."""

    accepted_extensions = serializers.ListField(
        child=serializers.CharField(), help_text='File extensions with a leading dot, for example ".png".'
    )
    max_file_size_bytes = Int64Field(help_text="The largest accepted file, in bytes.")

    class Meta:
        ref_name = "UploadLimits"


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """The serializer's validated data; a 400 validation_error problem otherwise, also for a
    field the operation does not have (a misspelt option is refused, never silently
    ignored, as Stripe does)."""
    unknown = sorted(set(data) - set(serializer_class().fields)) if hasattr(data, "keys") else []
    if unknown:
        raise serializers.ValidationError({name: ["This field is not part of this operation."] for name in unknown})
    return validated_query(serializer_class, data)


def validated_query(serializer_class: type[serializers.Serializer], query: Any) -> dict[str, Any]:
    """A query string's validated parameters; a 400 validation_error otherwise. Parameters
    the serializer does not name are left alone (pagination's, a client's cache buster)."""
    serializer = serializer_class(data=query)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


@extend_schema_field(OpenApiTypes.DOUBLE)
class MoneyField(serializers.DecimalField):
    """USD as a JSON number (the contract's double), exact to 6 places in the code."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_digits", 18)
        kwargs.setdefault("decimal_places", 6)
        kwargs.setdefault("coerce_to_string", False)
        super().__init__(**kwargs)
