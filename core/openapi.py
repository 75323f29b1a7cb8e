"""Schema helpers: the problem+json responses each operation can answer with."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

from core.problem_json import PROBLEM_CONTENT_TYPE

# A field named `errors` would shadow Serializer.errors, so the shape is declared inline.
ProblemSerializer = inline_serializer(
    name="Problem",
    fields={
        "type": serializers.URLField(help_text="problemTypeBase + '/' + code; GET it for a description."),
        "title": serializers.CharField(),
        "status": serializers.IntegerField(),
        "detail": serializers.CharField(),
        "instance": serializers.CharField(allow_null=True, help_text="The request path."),
        "code": serializers.CharField(help_text="snake_case problem code, stable for clients to switch on."),
        "errors": serializers.DictField(
            child=serializers.ListField(child=serializers.CharField()),
            required=False,
            help_text="Validation problems only: field -> messages.",
        ),
        "unknown_fields": serializers.ListField(
            child=serializers.CharField(),
            required=False,
            help_text="validation_error only: the body's members the operation does not have, named as sent "
            "(a dotted path inside a nested object, glossary[1].note).",
        ),
    },
)


PROBLEM_DESCRIPTIONS = {
    400: "Invalid input (validation_error, malformed_request, ...).",
    401: "No credential, or an unknown, malformed, revoked or expired one.",
    402: "The wallet cannot cover the next batch (insufficient_credit).",
    403: "The API key lacks the needed scope (forbidden).",
    404: "No such resource, or not the caller's (not_found).",
    409: "Conflict with the resource's current state (request_in_progress: retry after Retry-After).",
    410: "Gone: the resource is no longer served (export_outdated).",
    413: "The request body is too large.",
    415: "The body's Content-Type is not one this operation reads (unsupported_media_type).",
    422: "Unprocessable request (idempotency_key_reused: the Idempotency-Key was used with another request).",
    429: "Rate limited; see Retry-After.",
    500: "Unexpected server error (server_error); logged on our side.",
    502: "A payment provider answered with an error (payment_provider_error).",
    503: "A dependency is unavailable; retry later.",
}


def problem_responses(*statuses: int) -> dict[tuple[int, str], OpenApiResponse]:
    """`responses=` entries for these problem statuses, typed application/problem+json."""
    return {
        (code, PROBLEM_CONTENT_TYPE): OpenApiResponse(
            response=ProblemSerializer, description=PROBLEM_DESCRIPTIONS.get(code, "Problem.")
        )
        for code in statuses
    }
