"""Output shapes and fields shared by several apps."""

from __future__ import annotations

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
